"""GPU metrics (issue 20): names matched, samples binned in SQL, time-weighted facts, rules, report.

The real exports are the two gpu_metrics fixtures (H200, nsys 2025.3.1, --gpu-metrics-devices=all);
their READMEs hold the numbers measured with sqlite3, which these tests compare with. The small
synthetic exports use the real tables' CREATE statements (copied from those exports) with samples
whose means are known exactly.
"""
from __future__ import annotations

import os
import re
import sqlite3

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from nsys_expert import pipeline, scenarios as sc
from nsys_expert.facts import gpu_metrics as gm_facts
from nsys_expert.facts import intervals
from nsys_expert.load import gpu_metrics as gm_load, load_paths
from nsys_expert.load.sqlite import tables as sq
from nsys_expert.load.sqlite import reading as sr

MB = FIXTURES / "gpu_metrics_memory_bound_sqlite" / "input"
CB = FIXTURES / "gpu_metrics_compute_bound_sqlite" / "input"

# TARGET_INFO_GPU_METRICS.metricName of the H200 exports, in metricId order
H200_NAMES = ["GPC Clock Frequency [MHz]", "SYS Clock Frequency [MHz]", "GR Active [Throughput %]",
              "SMs Active [Throughput %]", "SM Issue [Throughput %]", "Tensor Active [Throughput %]",
              "Vertex/Tess/Geometry Warps in Flight [Throughput %]", "Vertex/Tess/Geometry Warps in Flight [Avg]",
              "Vertex/Tess/Geometry Warps in Flight [Avg Warps per Cycle]", "Pixel Warps in Flight [Throughput %]",
              "Pixel Warps in Flight [Avg]", "Pixel Warps in Flight [Avg Warps per Cycle]",
              "Compute Warps in Flight [Throughput %]", "Compute Warps in Flight [Avg]",
              "Compute Warps in Flight [Avg Warps per Cycle]", "Unallocated Warps in Active SMs [Throughput %]",
              "Unallocated Warps in Active SMs [Avg]", "Unallocated Warps in Active SMs [Avg Warps per Cycle]",
              "DRAM Read Bandwidth [Throughput %]", "DRAM Write Bandwidth [Throughput %]",
              "PCIe RX Throughput [Throughput %]", "PCIe TX Throughput [Throughput %]"]
TYPE = 281479271677952   # the H200 exports' typeId

# the real exports' schema (sqlite3 .schema, comments dropped)
SCHEMA = """
CREATE TABLE GPU_METRICS (rawTimestamp INTEGER NOT NULL, timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL,
    metricId INTEGER NOT NULL, value INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
    metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
"""


def test_names_matched_by_name_and_unit():
    found, unused = gm_load.match_names([(TYPE, i, n) for i, n in enumerate(H200_NAMES)])
    assert {k: v[1] for k, v in found.items()} == {
        "gr_active": "GR Active [Throughput %]", "sm_active": "SMs Active [Throughput %]",
        "sm_issue": "SM Issue [Throughput %]", "tensor_active": "Tensor Active [Throughput %]",
        "dram_read": "DRAM Read Bandwidth [Throughput %]", "dram_write": "DRAM Write Bandwidth [Throughput %]",
        "pcie_rx": "PCIe RX Throughput [Throughput %]", "pcie_tx": "PCIe TX Throughput [Throughput %]"}
    assert found["sm_active"][0] == 3 and found["dram_write"][0] == 19
    assert "Compute Warps in Flight [Throughput %]" in unused and len(unused) == 14
    # other spellings (older sets, other generations); a count unit is never read as a percentage
    other, _ = gm_load.match_names([(1, 0, "SM Active"), (1, 1, "Tensor Active / FP16 Active"),
                                    (1, 2, "NVLink RX Throughput [Throughput %]"), (1, 3, "DRAM Read Bandwidth [Bytes]"),
                                    (1, 4, "NVLink TX Throughput [Throughput %]")])
    assert set(other) == {"sm_active", "tensor_active", "nvlink_rx", "nvlink_tx"}


def test_loader_reads_real_export_binned():
    prof = load_paths([str(MB)])
    meta = prof.meta["gpu_metrics"]
    assert meta["missing"] == ["nvlink_rx", "nvlink_tx"]          # not in the H200's metric set: said so
    assert abs(meta["period_ns"] - 100_000) < 5
    g = prof.tables["gpu_metrics"]
    assert meta["samples"] == 41_856 * 8 == int(g["n"].sum())     # 8 known metrics of 22, every sample once
    assert g["n"].max() == 1                                       # a short run: one sample per bin, no loss
    assert set(g["metric"].unique()) == set(meta["metrics"])


def _facts(path):
    res = pipeline.run(pipeline.Request([str(path)]))
    return res.doc, res.fs


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_memory_bound_run_called_memory_bound_from_dram():
    doc, fs = _facts(MB)
    f = doc["facts"]
    # sqlite3 (fixture README): 99.20 / 8.40 / 0.00 / 44.13 + 44.15 over the window
    assert f["gm_sm_active_pct"] == pytest.approx(99.20, abs=0.1)
    assert f["gm_sm_issue_pct"] == pytest.approx(8.40, abs=0.1)
    assert f["gm_dram_read_pct"] == pytest.approx(44.13, abs=0.1)
    assert f["gm_dram_write_pct"] == pytest.approx(44.15, abs=0.1)
    assert f["gm_dram_pct"] == pytest.approx(88.27, abs=0.1)
    top = doc["findings"][0]
    assert top["rule"] == "dram-bandwidth-bound" and top["severity"] == "high" and top["cause"] == "memory-bound"
    assert [s["rule"] for s in top["supporting"]] == ["memory-bound"]          # one finding per cause
    assert {e["fact"] for e in top["evidence"]} >= {"gm_dram_pct", "gm_sm_issue_pct"}
    assert {k["verdict"] for k in fs.tables["gpu_metrics_kernels"]} == {"memory"}


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_compute_bound_run_called_compute_bound_on_tensor_cores():
    doc, fs = _facts(CB)
    f = doc["facts"]
    assert f["gm_tensor_active_pct"] == pytest.approx(89.23, abs=0.15)
    assert f["gm_dram_pct"] == pytest.approx(22.74, abs=0.1)
    rules = [x["rule"] for x in doc["findings"]]
    assert "compute-bound" in rules and "gemm-without-tensor-cores" not in rules and "dram-bandwidth-bound" not in rules
    cb = next(x for x in doc["findings"] if x["rule"] == "compute-bound")
    assert "tensor pipe active 89.2 %" in cb["message"]
    rows = {k["name"][:5]: k for k in fs.tables["gpu_metrics_kernels"]}
    assert rows["nvjet"]["verdict"] == "tensor"
    # the ~60 us elementwise kernel is shorter than two 100 us periods: its samples are its neighbours'
    assert rows["void "]["verdict"] is None


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_ncu_wins_for_the_kernels_it_measured(tmp_path):
    # the memory_bound workload's Nsight Compute CSVs (a separate run of the same kernels) beside the
    # GPU metrics export: ncu's class is the verdict, and the report says where it came from
    import shutil

    shutil.copytree(FIXTURES / "memory_bound_ncu" / "input" / "ncu", tmp_path / "ncu")
    shutil.copy(next(MB.glob("*.sqlite.gz")), tmp_path)
    res = pipeline.run(pipeline.Request([str(tmp_path)]))
    rows = res.fs.tables["gpu_metrics_kernels"]
    assert len(rows) == 3 and {(k["by"], k["verdict"]) for k in rows} == {("ncu", "memory")}
    from nsys_expert import report

    md = report.render_markdown(res.doc, "en")
    assert md.count("| ncu: memory | Nsight Compute (wins where it measured the kernel) |") == 3
    top = res.doc["findings"][0]
    assert top["rule"] == "dram-bandwidth-bound"
    assert {s["rule"] for s in top["supporting"]} >= {"memory-bound", "kernel-memory-bound"}


def test_without_gpu_metrics_nothing_changes():
    doc, fs = _facts(FIXTURES / "memcpy_bound_sqlite" / "input")
    assert not [k for k in doc["facts"] if k.startswith("gm_")]
    assert "gpu_metrics" not in doc["tables"]
    gm_rules = {"dram-bandwidth-bound", "dram-bandwidth-low", "gemm-without-tensor-cores", "sm-underfilled",
                "pcie-saturated"}
    assert not gm_rules & {n["rule"] for n in doc["not_evaluated"]}


def _export(tmp_path, rows, names=H200_NAMES):
    p = tmp_path / "gm.sqlite"
    con = sqlite3.connect(p)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, ?, '', ?, ?)",
                    [(TYPE, TYPE, i, n) for i, n in enumerate(names)])
    con.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?, ?)", [(t, t, TYPE, m, v) for t, m, v in rows])
    con.commit()
    con.close()
    return str(p)


def _read(path, max_rows=gm_load.MAX_ROWS):
    con = sr.open_readers(path)
    try:
        cols = sq.read_schema(con)
        return gm_load.read(con, cols, {0: "GPU"}, path, sr.read_frame, max_rows=max_rows)
    finally:
        sr.close_readers(con)


def test_time_weighted_means_and_coarse_bins(tmp_path):
    # SMs Active (id 3): 100 % for the first 1000 samples, 0 after, at 100 us: 2000 samples over 0.2 s
    rows = [(i * 100_000, 3, 100 if i < 1000 else 0) for i in range(2000)]
    path = _export(tmp_path, rows)
    fine, meta, warn = _read(path)
    assert not warn and meta["bin_ns"] == pytest.approx(100_000) and fine.height == 2000
    # 800 rows for the 8 known metrics: at most 100 bins per metric, so 20 samples (2 ms) per bin
    coarse, meta2, _ = _read(path, max_rows=800)
    assert coarse.height <= 101 and meta2["bin_ns"] == pytest.approx(2_000_000) and int(coarse["n"].sum()) == 2000
    # sample i covers [(i-1) * 100 us, i * 100 us): the first 1000 cover [-100 us, 99.9 ms)
    for frame in (fine, coarse):
        win = intervals.merge(gm_facts._iv([0], [200_000_000]))
        assert gm_facts.means(frame, win, ("sm_active",)) == pytest.approx(50.0, abs=0.1)
        half = gm_facts._iv([0], [50_000_000])
        assert gm_facts.means(frame, half, ("sm_active",)) == pytest.approx(100.0)
        assert gm_facts.means(frame, gm_facts._iv([150_000_000], [190_000_000]), ("sm_active",)) == pytest.approx(0.0)
    assert gm_facts.means(fine, gm_facts._iv([0], [100]), ("dram_read",)) is None     # not sampled: no number


def test_unknown_metric_names_warn(tmp_path):
    path = _export(tmp_path, [(0, 0, 5)], names=["Some Future Counter [Throughput %]"])
    frame, meta, warn = _read(path)
    assert frame is None and "none of their names is known" in warn[0] and "Some Future Counter" in warn[0]


def test_samples_without_their_names_warn(tmp_path):
    path = _export(tmp_path, [(0, 3, 5)])
    con = sqlite3.connect(path)
    con.execute("DROP TABLE TARGET_INFO_GPU_METRICS")
    con.commit()
    con.close()
    frame, _meta, warn = _read(path)
    assert frame is None and "not in the layout this version reads" in warn[0]


def test_verdicts():
    assert gm_facts.verdict(88, 0, 8, 99) == "memory"
    assert gm_facts.verdict(22, 89, 15, 96) == "tensor"
    assert gm_facts.verdict(10, 0, 70, 95) == "compute"
    assert gm_facts.verdict(5, 0, 3, 20) == "underfilled"
    assert gm_facts.verdict(30, 5, 20, 90) == "mixed"


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_html_draws_the_gpu_metrics_chart(tmp_path):
    from nsys_expert.report.html import render_html

    doc, ser, zoom = pipeline.diagnose_with_series(pipeline.Request([str(MB)]))
    assert set(ser["gpu_metrics"]) == {"sm_active", "tensor_active", "dram"}
    html = render_html(doc, ser, "en", zoom)
    assert re.search(r'data-chart="gpu_metrics" data-series="3"', html)
    assert "DRAM Read Bandwidth [Throughput %]" in html


def test_command_adds_gpu_metrics_and_refuses_several_processes():
    plan = sc.build("quick", sc.Options(app=("python", "train.py"), gpu_metrics="all"))
    assert "--gpu-metrics-devices=all" in plan.commands[0].argv
    assert any("one process per GPU" in str(n) for n in plan.notes)
    assert "--gpu-metrics-devices=all" not in sc.build("quick", sc.Options(app=("python", "t.py"))).commands[0].argv
    with pytest.raises(ValueError, match="one process per GPU"):
        sc.build("torchrun", sc.Options(app=("train.py",), ranks=(0, 1), gpu_metrics="all"))
    with pytest.raises(ValueError, match="'all' or GPU ids"):
        sc.build("quick", sc.Options(app=("train.py",), gpu_metrics="every"))
    mpi = sc.build("mpi", sc.Options(app=("python", "train.py"), gpu_metrics="all"))
    assert mpi.files[0].content.count("--gpu-metrics-devices=all") == 1      # local rank 0 only, as before

    from nsys_expert.cli import command as cmd

    r = CliRunner().invoke(cmd.command_cmd, ["quick", "--gpu-metrics", "0,1", "--", "python", "train.py"])
    assert r.exit_code == 0 and "--gpu-metrics-devices=0,1" in r.output


def test_input_never_written(tmp_path):
    before = sorted(os.listdir(MB))
    load_paths([str(MB)])
    assert sorted(os.listdir(MB)) == before


PINNED = FIXTURES / "gpu_metrics_pcie_pinned_sqlite" / "input"
PAGEABLE = FIXTURES / "gpu_metrics_memcpy_pageable_sqlite" / "input"


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_pinned_copies_at_link_speed_are_pcie_saturated():
    # a real H200 run (fixture README): pinned H2D / D2H alternating at 54.6 / 55.2 GB/s; sqlite3 gives
    # PCIe RX 89.8 % under the H2D copies, TX 92.8 % under the D2H ones, but 43.8 / 49.8 % over the window
    doc, _ = _facts(PINNED)
    f = doc["facts"]
    assert f["memcpy_h2d_gbps"] == pytest.approx(54.62, abs=0.01) and f["memcpy_d2h_gbps"] == pytest.approx(55.19, abs=0.01)
    assert f["gm_pcie_rx_pct"] == pytest.approx(43.81, abs=0.1) and f["gm_pcie_tx_pct"] == pytest.approx(49.79, abs=0.1)
    # each direction under its own copies: an average of both over all copy time would read ~50 %
    assert 89.0 <= f["gm_pcie_copy_pct"] <= 93.5
    top = doc["findings"][0]
    assert top["rule"] == "pcie-saturated" and top["severity"] == "high"
    assert [s["rule"] for s in top["supporting"]] == ["memcpy-bound"]          # one finding per cause
    assert "memcpy-bound" not in [x["rule"] for x in doc["findings"]]


@pytest.mark.slow   # a whole real export with GPU metrics (1-1.5 s); the goldens cover it in the fast set
def test_pageable_copies_stay_memcpy_bound_with_an_idle_link():
    doc, _ = _facts(PAGEABLE)
    f = doc["facts"]
    assert f["memcpy_h2d_gbps"] == pytest.approx(5.81, abs=0.01) and f["memcpy_d2h_gbps"] == pytest.approx(1.22, abs=0.01)
    assert f["gm_pcie_copy_pct"] == pytest.approx(9.46, abs=0.2)                 # sqlite3: RX under the H2D copies
    rules = [x["rule"] for x in doc["findings"]]
    assert rules[0] == "memcpy-bound" and "pcie-saturated" not in rules
