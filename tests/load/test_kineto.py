"""torch.profiler (Kineto) Chrome traces as an input: the loader on real traces (kernel counts,
launches joined to kernels, step windows), the 2021-era category names, ranks, and bad files."""
from __future__ import annotations

import gzip
import json

import polars as pl
from click.testing import CliRunner

from conftest import expected_doc, FIXTURES, diagnosed
from nsys_expert import pipeline
from nsys_expert.cli import main
from nsys_expert.load import load_paths

SYNC = FIXTURES / "kineto_sync_bound" / "input" / "sync_bound.pt.trace.json.gz"
NCCL = FIXTURES / "kineto_nccl_single" / "input" / "nccl_single.pt.trace.json.gz"


def _events(path):
    return json.loads(gzip.open(path).read())["traceEvents"]


def test_gpu_trace_holds_every_kernel_copy_and_memset_of_the_trace():
    ev = _events(SYNC)
    prof = load_paths([str(SYNC)])
    g = prof.tables["gpu_trace"]
    counts = {k: sum(1 for e in ev if e.get("cat") == c) for k, c in
              (("kernel", "kernel"), ("memcpy", "gpu_memcpy"), ("memset", "gpu_memset"))}
    assert g.filter(pl.col("kind") == "kernel").height == counts["kernel"] == 1202
    assert g.filter(pl.col("kind") == "memcpy").height == counts["memcpy"]
    assert g.filter(pl.col("kind") == "memset").height == counts["memset"]
    # copies named and typed as nsys names them; the kinds from the event name
    cp = g.filter(pl.col("kind") == "memcpy").row(0, named=True)
    assert (str(cp["name"]), cp["copy_kind"], cp["src_kind"], cp["dst_kind"]) == \
        ("[CUDA memcpy DtoH]", "DtoH", "Device", "Pinned")
    # µs with ns fractions -> ns
    first = min((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert g.filter(pl.col("kind") == "kernel")["start_ns"].min() == round(first["ts"] * 1000)
    assert prof.meta["gpus"] == [{"id": 0, "name": "NVIDIA H200", "cc": "9.0"}]   # deviceProperties' computeMajor / Minor
    assert [i["kind"] for i in prof.inputs if i["table"] == "gpu_trace"] == ["kineto"]
    calls = sum(1 for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    assert prof.tables["api_trace"].height == calls


def test_every_kernel_is_joined_to_its_launch_by_correlation_id():
    prof = load_paths([str(SYNC)])
    g, a = prof.tables["gpu_trace"], prof.tables["api_trace"]
    k = g.filter(pl.col("kind") == "kernel")
    launches = k.join(a.select("corr_id", pl.col("name").alias("api")), on="corr_id", how="inner")
    assert launches.height == k.height
    assert set(launches["api"].cast(pl.String).unique()) <= {"cudaLaunchKernel", "cuLaunchKernel",
                                                                 "cudaLaunchKernelExC"}


def test_profiler_steps_are_the_iterations_of_the_window():
    doc = diagnosed(NCCL)
    w = doc["window"]
    assert w["source"] == "nvtx:ProfilerStep"
    steps = [e for e in _events(NCCL) if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    assert len(steps) == 6
    first_kept = sorted(steps, key=lambda e: e["ts"])[1]    # the first step is left out as warm-up
    assert w["iterations"] == 5 and w["start_ns"] == round(first_kept["ts"] * 1000)


def _write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_2021_category_names_and_flow_ids(tmp_path):
    """torch 1.8 traces: Kernel / Runtime / Operator, and a kernel whose args lack the correlation id
    (the ac2g flow gives it)."""
    ev = []
    for i in range(4):
        t = 1000.0 + i * 100
        ev.append({"ph": "X", "cat": "Operator", "name": f"ProfilerStep#{i}", "pid": 7, "tid": 7, "ts": t, "dur": 90})
        ev.append({"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": t + 1,
                   "dur": 5, "args": {"correlation": 10 + i}})
        ev.append({"ph": "s", "cat": "ac2g", "id": 10 + i, "pid": 7, "tid": 7, "ts": t + 1})
        ev.append({"ph": "f", "cat": "ac2g", "id": 10 + i, "pid": 0, "tid": "stream 7", "ts": t + 10, "bp": "e"})
        ev.append({"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": t + 10,
                   "dur": 50.5, "args": {"device": 0}})
    prof = load_paths([str(_write(tmp_path / "old.pt.trace.json", {"traceEvents": ev}))])
    g = prof.tables["gpu_trace"]
    assert g.height == 4 and g["corr_id"].to_list() == [10, 11, 12, 13]
    assert g["dur_ns"].to_list() == [50500] * 4
    assert prof.tables["nvtx_trace"]["name"].to_list() == [f"ProfilerStep#{i}" for i in range(4)]


def test_bad_json_is_one_line_and_exit_2(tmp_path):
    good = gzip.open(SYNC).read()
    cut = tmp_path / "cut.pt.trace.json"
    cut.write_bytes(good[: len(good) // 2])
    r = CliRunner().invoke(main, ["diagnose", str(cut)])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "not valid JSON" in r.stderr and "cut.pt.trace.json" in r.stderr
    other = _write(tmp_path / "x.pt.trace.json", {"hello": 1})
    r = CliRunner().invoke(main, ["diagnose", str(other)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "no traceEvents" in r.stderr


def test_a_json_file_that_is_no_trace_is_left_alone(tmp_path):
    """A notes or config .json beside a trace is not read as one (nor an error)."""
    import shutil
    shutil.copy(NCCL, tmp_path / "nccl_single.pt.trace.json.gz")
    _write(tmp_path / "config.json", {"lr": 0.1})
    prof = load_paths([str(tmp_path)])
    assert prof.tables["gpu_trace"].height == 12
    assert any("not read" in str(w) and "config.json" in str(w) for w in prof.warnings)
    doc = pipeline.diagnose(pipeline.Request([str(tmp_path)]))
    assert not doc.get("ranks") and doc["window"]["source"] == "nvtx:ProfilerStep"


def test_a_folder_of_rank_traces_is_a_job_of_ranks():
    """Two traces that differ only in distributedInfo.rank are two ranks, not one run read twice."""
    doc = diagnosed(FIXTURES / "kineto_2rank_derived" / "input")
    assert [r["rank"] for r in doc["ranks"]] == ["rank0", "rank1"]
    assert all(r["verdict"]["category"] == "memory-bound" for r in doc["ranks"])


def test_a_trace_beside_nsys_reports_is_set_aside(tmp_path):
    """Another recording: none of its tables (not even the ranges the nsys reports lack) joins them."""
    import shutil
    for f in (FIXTURES / "sync_bound" / "input").iterdir():
        if "nvtx" not in f.name:
            shutil.copy(f, tmp_path / f.name)
    shutil.copy(NCCL, tmp_path / "x.pt.trace.json.gz")
    prof = load_paths([str(tmp_path)])
    assert all(i["kind"] != "kineto" for i in prof.inputs) and "nvtx_trace" not in prof.tables
    assert any("torch.profiler trace beside nsys reports" in str(w) for w in prof.warnings)


def test_2021_dataloader_and_optimizer_ranges_are_ranges(tmp_path):
    """Issue 56, item 10: in the 2021 format PyTorch's own record_function ranges are Operator events; the
    DataLoader's were dropped, so a num_workers=0 trace's data wait read as host-bound. The real
    kineto_dataloader_bound trace written in the 2021 category names diagnoses as the trace does."""
    src = json.loads(gzip.open(next((FIXTURES / "kineto_dataloader_bound" / "input").glob("*.json.gz")), "rt").read())
    old = {"kernel": "Kernel", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset", "cuda_runtime": "Runtime",
           "cuda_driver": "Runtime", "user_annotation": "Operator", "cpu_op": "Operator"}
    ev = [dict(e, cat=old.get(e.get("cat"), e.get("cat"))) for e in src["traceEvents"]
          if e.get("cat") != "gpu_user_annotation"]
    path = _write(tmp_path / "old.pt.trace.json", dict(src, traceEvents=ev))
    rng = load_paths([str(path)]).tables["nvtx_trace"]["name"].to_list()
    assert sum(n.startswith("enumerate(DataLoader)#") for n in rng) == 6
    from nsys_expert import config, pipeline
    doc = pipeline.diagnose(pipeline.Request([str(path)], config.Settings()))
    want = expected_doc("kineto_dataloader_bound")
    assert doc["verdict"]["rule"] == want["verdict"]["rule"] == "data-io-bound"
