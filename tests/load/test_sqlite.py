"""nsys SQLite exports (and .nsys-rep through nsys) read into the same frames and diagnoses as the CSVs."""
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys

import polars as pl
import pytest

from conftest import FIXTURES, SHARED, needs_shared, diagnosed, slow_ones
from nsys_expert import pipeline
from nsys_expert.errors import InputError
from nsys_expert.load import load_paths
from nsys_expert.load.nsysrep import read_nsys_rep
from nsys_expert.load.sqlite import read_sqlite

CLI = os.path.join(os.path.dirname(sys.executable), "nsys-expert")
SHARED_CASES = ["launch_bound", "launch_bound_graphed", "sync_bound", "compute_bound", "memory_bound",
                "memcpy_bound", "healthy", "nccl_single"]


def sqlite_of(fixture: str) -> str:
    d = FIXTURES / fixture / "input"
    return str(next(d.glob("*.sqlite")))


def diagnose(path) -> dict:
    return pipeline.diagnose(pipeline.Request([str(path)]))


def run_cli(*args, env=None):
    return subprocess.run([CLI, "diagnose", *map(str, args)], capture_output=True, text=True, env=env)


# ------------------------------------------------------------------------- same frames as the CSVs
def test_frames_match_the_csv_reports():
    csv = load_paths([str(FIXTURES / "sync_bound" / "input")])
    sq = load_paths([sqlite_of("sync_bound_sqlite")])
    assert {i["kind"] for i in sq.inputs} == {"nsys-sqlite"}
    for table in ("gpu_trace", "api_trace", "nvtx_trace", "kern_sum", "api_sum", "mem_time_sum", "mem_size_sum",
                  "nvtx_sum", "osrt_sum"):
        a, b = csv.tables[table], sq.tables[table]
        assert a.height == b.height, table
        for col in set(a.columns) & set(b.columns):  # same names, same dtypes
            assert a.schema[col] == b.schema[col], (table, col)
    # every GPU operation: same start, duration, name, kind, copy kind and memory kinds
    keys = ["start_ns", "dur_ns", "corr_id", "stream", "device_id", "kind", "copy_kind",
            "src_kind", "dst_kind"]
    a = csv.tables["gpu_trace"].select(*keys, pl.col("name").cast(pl.String)).sort("start_ns", "corr_id")
    b = sq.tables["gpu_trace"].select(*keys, pl.col("name").cast(pl.String)).sort("start_ns", "corr_id")
    assert a.equals(b)
    assert sq.tables["gpu_trace"]["pid"].unique().to_list() == [465]
    assert csv.meta["gpus"] == [{"id": 0, "name": "NVIDIA H200"}]   # names once, not per row
    assert sq.meta["gpus"] == [{"id": 0, "name": "NVIDIA H200", "cc": "9.0"}]   # + TARGET_INFO_GPU's computeMajor.Minor
    # CUDA API calls (runtime and driver), named as nsys stats names them
    keys = ["start_ns", "dur_ns", "name", "base_name", "corr_id", "pid", "tid"]
    assert csv.tables["api_trace"].select(keys).sort("start_ns", "corr_id").equals(
        sq.tables["api_trace"].select(keys).sort("start_ns", "corr_id"))
    # NVTX ranges: names with the domain prefix (cuBLAS:...), nesting level per thread
    keys = ["start_ns", "end_ns", "name", "tid", "level"]
    assert csv.tables["nvtx_trace"].select(keys).sort("start_ns").equals(sq.tables["nvtx_trace"].select(keys).sort("start_ns"))
    # summaries: the same rows, counts and totals (the CSV rounds its percentages and MB)
    for table in ("kern_sum", "api_sum", "mem_time_sum", "nvtx_sum", "osrt_sum"):
        a = csv.tables[table].select("name", "count", "total_ns", "min_ns", "max_ns").sort("name")
        b = sq.tables[table].select("name", "count", "total_ns", "min_ns", "max_ns").sort("name")
        assert a.equals(b), table
        assert csv.tables[table]["name"].to_list() == sq.tables[table]["name"].to_list(), table  # same order


def _agree(csv_doc: dict, sq_doc: dict, case: str) -> None:
    top = lambda d: d["findings"][0]["rule"] if d["findings"] else None  # noqa: E731
    if case == "launch_bound_graphed":
        # the CSV trace cannot see graph work (GPU facts absent by design); the SQLite graph trace can
        assert "gpu_active_pct" not in csv_doc["facts"]
        assert sq_doc["facts"]["gpu_active_pct"] > 95
        assert not any(f["severity"] in ("high", "critical") for f in sq_doc["findings"])
        assert not any("re-profile with --cuda-graph-trace=node to see the graph kernels" in str(w) for w in sq_doc["warnings"])
        return
    assert top(sq_doc) == top(csv_doc)
    assert [f["rule"] for f in sq_doc["findings"]] == [f["rule"] for f in csv_doc["findings"]]
    assert abs(sq_doc["facts"]["gpu_active_pct"] - csv_doc["facts"]["gpu_active_pct"]) <= 0.5
    assert sq_doc["window"]["source"] == csv_doc["window"]["source"]


@pytest.mark.parametrize("case", ["sync_bound", "memcpy_bound", "launch_bound_graphed"])
def test_sqlite_fixture_agrees_with_csv(case):
    _agree(diagnosed(FIXTURES / case / "input"), diagnosed(sqlite_of(f"{case}_sqlite")), case)


@needs_shared
@pytest.mark.parametrize("case", slow_ones(SHARED_CASES, {   # 0.4-0.6 s each (issue 56, item 14)
    "compute_bound", "memory_bound", "memcpy_bound", "healthy", "nccl_single"}))
def test_shared_sqlite_agrees_with_csv(case):
    _agree(diagnosed(FIXTURES / case / "input"), diagnosed(SHARED / "cases" / case / f"{case}.sqlite"), case)


# ---------------------------------------------------------------------------------- read-only
def test_the_export_is_never_written(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    path = src / "sync_bound.sqlite"
    shutil.copy(sqlite_of("sync_bound_sqlite"), path)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns, os.stat(path).st_size)
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP)
    doc = diagnose(path)
    assert doc["findings"][0]["rule"] == "sync-bound"
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns, os.stat(path).st_size)
    assert after == before
    assert sorted(os.listdir(src)) == ["sync_bound.sqlite"]  # no -journal, -wal or -shm beside it


# ------------------------------------------------------------------------------- CUDA graphs
def test_graph_executions_count_as_busy_not_as_kernels():
    prof = load_paths([sqlite_of("launch_bound_graphed_sqlite")])
    g = prof.tables["gpu_trace"]
    graphs = g.filter(pl.col("kind") == "graph")
    assert graphs.height == 200 and set(graphs["name"].cast(pl.String)) == {"[CUDA graph]"}
    launches = prof.tables["api_trace"].filter(pl.col("base_name") == "cudaGraphLaunch")
    assert graphs.join(launches, on="corr_id", how="semi").height == 200   # correlated with their launch
    assert "[CUDA graph]" not in prof.tables["kern_sum"]["name"].to_list()
    doc = diagnosed(sqlite_of("launch_bound_graphed_sqlite"))
    f = doc["facts"]
    assert f["gpu_active_pct"] == f["kernel_active_pct"] > 95
    # graph executions are not kernels: the 10 warm-up kernels run before the window
    in_win = g.filter((pl.col("start_ns") >= doc["window"]["start_ns"]) & (pl.col("start_ns") < doc["window"]["end_ns"]))
    assert f["kernel_count"] == in_win.filter(pl.col("kind") == "kernel").height == 0
    assert f["kernel_small_share_pct"] == 0.0   # each graph execution is one launch of ~185 us
    assert "kernel_median_us" not in f
    assert any("not itemized" in str(w) for w in doc["warnings"])
    assert not any(r["rule"] == "launch-bound" for r in doc["findings"])
    assert "launch-bound" not in [n["rule"] for n in doc["not_evaluated"]]   # evaluated, and quiet


# ---------------------------------------------------------------------------- schema eras
def test_2020_export_without_enum_or_version_tables():
    part = read_sqlite(sqlite_of("cupy_nsys2020_sqlite"))
    assert part.version == "2020-era (no META_DATA_EXPORT)"
    assert any("CUPTI_ACTIVITY_KIND_MEMCPY" in str(w) for w in part.warnings)
    assert part.meta["gpus"] == [{"id": 0, "name": "Quadro RTX 8000"}, {"id": 1, "name": "Quadro RTX 8000"}]
    g = part.tables["gpu_trace"]
    assert g.height == 15 and g["device_id"].unique().to_list() == [0]
    assert load_paths([sqlite_of("cupy_nsys2020_sqlite")]).meta["gpus"] == [{"id": 0, "name": "Quadro RTX 8000"}]
    n = part.tables["nvtx_trace"].sort("start_ns")
    assert n["name"].to_list() == ["square-diff", "data generation", "copy", "compute", "faster compute"]
    assert n["level"].to_list() == [0, 1, 1, 1, 1]
    api = part.tables["api_trace"]
    assert {"cuLaunchKernel", "cudaMalloc"} <= set(api["name"])   # driver and runtime, _v3020 dropped
    assert part.tables["kern_sum"]["count"].sum() == 15


def test_2026_export_two_gpus_two_processes():
    part = read_sqlite(sqlite_of("h100_2gpu_nsys2026_sqlite"))
    assert part.version == "2026.2.1.210"
    g = part.tables["gpu_trace"]
    per = g.group_by("device_id", "pid").len().sort("device_id")
    assert per.rows() == [(0, 111, 2184), (1, 112, 2184)]   # per GPU: 1721 kernels, 452 copies, 11 memsets
    assert "gpus" not in part.meta                            # no TARGET_INFO_GPU in 2026 exports
    assert any("TARGET_INFO_GPU" in str(w) for w in part.warnings)
    assert sorted(part.tables["api_trace"]["pid"].unique().to_list()) == [111, 112]
    assert [p["pid"] for p in part.meta["processes"]] == [111, 112]


def _mini_export(path, with_enums=False):
    """A small hand-made export: 2020-like (no ENUM / META tables) unless ``with_enums``."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'cudaLaunchKernel_v7000'), (3, 'step'),
                                     (4, 'ncclAllReduce'), (5, 'cudaMemcpyAsync_v3020');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, contextId INT, streamId INT,
            correlationId INT, globalPid INT, demangledName INT, shortName INT, gridX INT, gridY INT, gridZ INT,
            blockX INT, blockY INT, blockZ INT, registersPerThread INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 1500, 0, 1, 7, 10, 5 << 24, 1, 1, 2, 1, 1, 128, 1, 1, 32);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, streamId INT, correlationId INT,
            globalPid INT, bytes INT, copyKind INT, srcKind INT, dstKind INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2000, 2600, 0, 7, 11, 5 << 24, 4096, 1, 0, 2),
                                                      (3000, 3100, 0, 7, 12, 5 << 24, 64, 2, 2, 1);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT,
            correlationId INT, nameId INT, returnValue INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (900, 990, 0, (5 << 24) + 6, 10, 2, 0),
                                                       (1900, 1990, 0, (5 << 24) + 6, 11, 5, 0);
        CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, rangeId INT, category INT, color INT,
            text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT);
        INSERT INTO NVTX_EVENTS VALUES (10, NULL, 75, NULL, NULL, NULL, 'NCCL', (5 << 24) + 6, NULL, NULL, 2),
            (800, 4000, 59, NULL, NULL, NULL, NULL, (5 << 24) + 6, NULL, 3, 0),
            (850, 880, 59, NULL, NULL, NULL, NULL, (5 << 24) + 6, NULL, 4, 2),
            (890, 890, 59, NULL, NULL, NULL, 'empty', (5 << 24) + 6, NULL, NULL, 0),
            (4000, 4100, 59, NULL, NULL, NULL, 'after', (5 << 24) + 6, NULL, NULL, 0),
            (700, 5000, 60, 1, NULL, NULL, 'async', (5 << 24) + 6, (5 << 24) + 9, NULL, 0),
            (900, NULL, 34, NULL, NULL, NULL, 'a mark', (5 << 24) + 6, NULL, NULL, 0);
    """)
    if with_enums:
        con.executescript("""
            CREATE TABLE ENUM_CUDA_MEM_KIND (id INT, name TEXT, label TEXT);
            INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'P', 'Pageable'), (1, 'PN', 'Pinned'), (2, 'D', 'Device');
            CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
            INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2099.1.0');
        """)
    con.commit()
    con.close()


@pytest.mark.parametrize("with_enums", [False, True])
def test_mini_export_names_kinds_and_levels(tmp_path, with_enums):
    path = tmp_path / "mini.sqlite"
    _mini_export(path, with_enums)
    part = read_sqlite(str(path))
    assert part.version == ("2099.1.0" if with_enums else "2020-era (no META_DATA_EXPORT)")
    g = part.tables["gpu_trace"].sort("start_ns")
    assert g["name"].cast(pl.String).to_list() == ["gemm_kernel", "[CUDA memcpy Host-to-Device]",
                                                   "[CUDA memcpy Device-to-Host]"]
    assert g["src_kind"].to_list() == [None, "Pageable", "Device"]   # memory kind 0 is Pageable, 1 Pinned
    assert g["dst_kind"].to_list() == [None, "Device", "Pinned"]
    assert g["pid"].to_list() == [5, 5, 5] and g["dur_ns"].to_list() == [500, 600, 100]
    assert g["bytes"].to_list()[1:] == [4096.0, 64.0]
    a = part.tables["api_trace"]
    assert a["name"].to_list() == ["cudaLaunchKernel", "cudaMemcpyAsync"] and a["tid"].to_list() == [6, 6]
    n = part.tables["nvtx_trace"].sort("start_ns", "dur_ns", descending=[False, True])
    assert n["name"].to_list() == ["async", "step", "NCCL:ncclAllReduce", "empty", "after"]
    assert n["level"].to_list() == [None, 0, 1, 1, 0]   # start/end ranges have no push/pop level
    s = part.tables["nvtx_sum"]
    assert dict(zip(s["name"], s["style"])) == {"async": "StartEnd", "step": "PushPop", "after": "PushPop",
                                               "NCCL:ncclAllReduce": "PushPop", "empty": "PushPop"}
    assert any("OSRT_API" in str(w) for w in part.warnings) and any("TARGET_INFO_GPU" in str(w) for w in part.warnings)
    assert "osrt_sum" not in part.tables
    prof = load_paths([str(path)])   # normalize accepts every frame
    assert prof.tables["gpu_trace"]["copy_kind"].to_list() == [None, "HtoD", "DtoH"]


# -------------------------------------------------------------------------------- bad files
def _one_line_exit_2(r):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.slow
def test_broken_sqlite_files_exit_2_with_one_line(tmp_path):
    fake = tmp_path / "fake.sqlite"
    fake.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    r = run_cli(fake)
    _one_line_exit_2(r)
    assert "not a valid SQLite file" in r.stderr
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    r = run_cli(foreign)
    _one_line_exit_2(r)
    assert "not an nsys export (no CUPTI/NVTX/StringIds tables); export with nsys export --type sqlite" in r.stderr
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(open(sqlite_of("sync_bound_sqlite"), "rb").read()[:300_000])
    _one_line_exit_2(run_cli(cut))
    empty = tmp_path / "empty.sqlite"   # an nsys export with nothing traced
    con = sqlite3.connect(empty)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.commit()
    con.close()
    r = run_cli(empty)
    _one_line_exit_2(r)
    assert "no CUDA, NVTX or OS runtime events" in r.stderr


# ------------------------------------------------------------------------------------ .nsys-rep
def _fake_rep(tmp_path):
    d = tmp_path / "user"
    d.mkdir()
    rep = d / "prof.nsys-rep"
    rep.write_bytes(b"\x00\x01NSYS-REP\x00" + bytes(range(256)) * 4)
    return rep


def test_nsys_rep_without_nsys(tmp_path, monkeypatch):
    rep = _fake_rep(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(InputError) as e:
        read_nsys_rep(str(rep))
    assert "nsys export --type sqlite -o prof prof.nsys-rep" in e.value.line()
    assert "nsys stats --format csv" in e.value.line()
    r = run_cli(rep, env={**os.environ, "PATH": str(tmp_path / "nothing-here")})
    _one_line_exit_2(r)
    assert "not on PATH" in r.stderr


def _fake_nsys(tmp_path, body: str) -> dict:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_nsys_rep_is_exported_to_a_temp_folder(tmp_path):
    rep = _fake_rep(tmp_path)
    log = tmp_path / "argv.txt"
    env = _fake_nsys(tmp_path, f"""
echo "$@" > {log}
while [ $# -gt 0 ]; do
  if [ "$1" = "--output" ]; then out="$2"; fi
  shift
done
cp {sqlite_of("sync_bound_sqlite")} "$out"
chmod u+w "$out"
""")
    r = subprocess.run([CLI, "diagnose", str(rep), "--format", "json"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["rule"] == "sync-bound"
    assert {os.path.basename(i["path"]) for i in doc["inputs"]} == {"prof.nsys-rep"}
    argv = log.read_text().split()
    assert argv[:4] == ["export", "--type", "sqlite", "--output"]
    out = argv[4]
    assert os.path.basename(os.path.dirname(out)).startswith("nsys-expert-") and out.endswith("prof.sqlite")
    assert argv[5:] == ["--force-overwrite=true", str(rep)]
    assert not os.path.exists(os.path.dirname(out))          # the temp folder is removed after reading
    assert sorted(os.listdir(rep.parent)) == ["prof.nsys-rep"]  # nothing beside the user's file


def test_nsys_rep_export_failure_is_one_line(tmp_path):
    rep = _fake_rep(tmp_path)
    env = _fake_nsys(tmp_path, """
echo "Processing events..."
echo "Error: the report was made by a newer version of Nsight Systems" >&2
echo "  details follow" >&2
exit 1
""")
    r = run_cli(rep, env=env)
    _one_line_exit_2(r)
    assert "nsys export failed (exit 1): Error: the report was made by a newer version" in r.stderr


def test_nsys_rep_cache_folder_is_reused(tmp_path, monkeypatch):
    rep = _fake_rep(tmp_path)
    count = tmp_path / "count.txt"
    env = _fake_nsys(tmp_path, f"""
echo x >> {count}
while [ $# -gt 0 ]; do
  if [ "$1" = "--output" ]; then out="$2"; fi
  shift
done
cp {sqlite_of("memcpy_bound_sqlite")} "$out"
""")
    monkeypatch.setenv("PATH", env["PATH"])
    cache = tmp_path / "cache"
    for _ in range(2):
        part = read_nsys_rep(str(rep), cache_dir=str(cache))
        assert part.path == str(rep) and part.tables["gpu_trace"].height > 0
    assert count.read_text().count("x") == 1
    assert len(list(cache.glob("prof-*.sqlite"))) == 1


# ------------------------------------------------------------------ CSV reports beside an export
def test_csv_reports_beside_an_export_are_not_parsed(tmp_path, monkeypatch):
    """The export gives the trace tables: the CSVs of those tables are named as not used, never parsed;
    the CSVs of tables the export does not give (cuda_gpu_sum, nvtx_gpu_proj_sum, ...) are still read."""
    from nsys_expert.load import csv_reports

    for f in (FIXTURES / "sync_bound" / "input").iterdir():
        shutil.copy(f, tmp_path)
    shutil.copy(sqlite_of("sync_bound_sqlite"), tmp_path)
    (tmp_path / "sync_bound_cuda_gpu_mem_size_sum.csv").write_text(  # a header and no rows: loses silently
        (FIXTURES / "sync_bound" / "input" / "sync_bound_cuda_gpu_mem_size_sum.csv").read_text().splitlines()[0] + "\n")
    seen = []
    real = csv_reports.read_report
    monkeypatch.setattr(csv_reports, "read_report", lambda sn: seen.append(os.path.basename(sn.path)) or real(sn))
    prof = load_paths([str(tmp_path)])
    assert "sync_bound_cuda_gpu_trace.csv" not in seen and "sync_bound_cuda_api_trace.csv" not in seen
    assert {"sync_bound_cuda_gpu_sum.csv", "sync_bound_nvtx_gpu_proj_sum.csv"} <= set(seen)
    assert prof.source_name("gpu_trace") == "sync_bound.sqlite"
    assert prof.source_name("gpu_sum") == "sync_bound_cuda_gpu_sum.csv"
    line = next(str(w) for w in prof.warnings if "the richest source" in str(w))
    assert "not used: " in line and "sync_bound_cuda_gpu_trace.csv" in line
    assert "sync_bound_cuda_gpu_mem_size_sum.csv" in seen   # empty: parsed, and it loses without a word
    assert "sync_bound_cuda_gpu_mem_size_sum.csv" not in line
    # the same diagnosis, warnings included, as when every CSV is parsed (nothing read first)
    skipping = diagnose(tmp_path)
    monkeypatch.setattr("nsys_expert.load._read_exports", lambda files, logical, sniffs: ({}, {}))
    seen.clear()
    parsing = diagnose(tmp_path)
    assert "sync_bound_cuda_gpu_trace.csv" in seen
    assert json.dumps(skipping, sort_keys=True, default=str) == json.dumps(parsing, sort_keys=True, default=str)


def test_the_sqlite3_path_reads_the_same_tables_as_adbc(monkeypatch):
    """Without the ADBC driver (or when it fails) every table is read through sqlite3: the same frames,
    derived columns (durations, pid / tid from globalPid / globalTid) included."""
    import nsys_expert.load.sqlite.export as sq
    import nsys_expert.load.sqlite.reading as sr
    path = sqlite_of("sync_bound_sqlite")
    fast = read_sqlite(path)
    orig = sq.open_readers

    def without_adbc(p):
        con = orig(p)
        sr._ADBC.pop(id(con), None)
        sr._URI.pop(id(con), None)
        return con
    monkeypatch.setattr(sq, "open_readers", without_adbc)
    slow = read_sqlite(path)
    assert list(fast.tables) == list(slow.tables)
    for t in fast.tables:
        assert fast.tables[t].equals(slow.tables[t]), t
    assert {"dur_ns", "pid", "tid"} <= set(slow.tables["api_trace"].columns)
