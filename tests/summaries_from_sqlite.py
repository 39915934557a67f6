"""The summary reports `nsys stats` writes, made from an SQLite export (issue 56, item 4): cuda_gpu_kern_sum,
cuda_api_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum and nvtx_sum as CSV, with the columns of nsys
2025.3 (`fixtures/sync_bound_summaries`). What a user of the same run has as console text, for the SQLite-only
fixtures: tests/cases/test_summary_vs_trace.py diagnoses them against the export's own verdict.

    python tests/summaries_from_sqlite.py EXPORT.sqlite[.gz] OUT_DIR PREFIX

Kernel names are the demangled ones, API names without their _vNNNN suffix, push / pop ranges ':name' (the
default domain), as nsys stats prints them; statistics over every row of the export (the whole profile)."""
import csv
import gzip
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile

COPY_KINDS = {1: "[CUDA memcpy Host-to-Device]", 2: "[CUDA memcpy Device-to-Host]", 8: "[CUDA memcpy Device-to-Device]",
              10: "[CUDA memcpy Peer-to-Peer]"}
TIME_HEAD = ["Time (%)", "Total Time (ns)", "{count}", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"]


def _stats(values: list) -> tuple:
    v = sorted(values)
    total = sum(v)
    return total, len(v), total / len(v), statistics.median(v), v[0], v[-1], statistics.pstdev(v) if len(v) > 1 else 0.0


def _time_table(path: str, count: str, last: list[str], groups: dict, cells=lambda name: [name]) -> None:
    """One row per name: the share of the total time, total, count, average, median, min, max, deviation."""
    every = sum(sum(v) for v in groups.values()) or 1
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([h.format(count=count) for h in TIME_HEAD] + last)
        for name, durs in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
            tot, n, avg, med, lo, hi, sd = _stats(durs)
            w.writerow([round(100 * tot / every, 1), tot, n, round(avg, 1), med, lo, hi, round(sd, 1)] + cells(name))


def _api_name(name: str) -> str:
    return name.split("_v")[0] if name.startswith("cuda") else name


def write_summaries(src: str, out: str, prefix: str) -> None:
    os.makedirs(out, exist_ok=True)
    tmp = None
    if src.endswith(".gz"):
        with tempfile.NamedTemporaryFile(suffix=".sqlite", delete=False) as fh, gzip.open(src) as gz:
            shutil.copyfileobj(gz, fh)
            tmp = src = fh.name
    try:
        con = sqlite3.connect(src)
        _write(con, out, prefix)
        con.close()
    finally:
        if tmp:
            os.unlink(tmp)


def _write(con, out: str, prefix: str) -> None:
    names = dict(con.execute("select id, value from StringIds"))
    tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
    kern: dict = {}
    for s, e, nid in con.execute("select start, end, coalesce(demangledName, shortName) from CUPTI_ACTIVITY_KIND_KERNEL"):
        kern.setdefault(names.get(nid, "?"), []).append(e - s)
    _time_table(f"{out}/{prefix}_cuda_gpu_kern_sum.csv", "Instances", ["Name"], kern)
    api: dict = {}
    for s, e, nid in con.execute("select start, end, nameId from CUPTI_ACTIVITY_KIND_RUNTIME"):
        api.setdefault(_api_name(names.get(nid, "?")), []).append(e - s)
    _time_table(f"{out}/{prefix}_cuda_api_sum.csv", "Num Calls", ["Name"], api)
    times: dict = {}
    sizes: dict = {}
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        for s, e, b, kind in con.execute("select start, end, bytes, copyKind from CUPTI_ACTIVITY_KIND_MEMCPY"):
            op = COPY_KINDS.get(kind, "[CUDA memcpy Unknown]")
            times.setdefault(op, []).append(e - s)
            sizes.setdefault(op, []).append(b / 1e6)
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for s, e, b in con.execute("select start, end, bytes from CUPTI_ACTIVITY_KIND_MEMSET"):
            times.setdefault("[CUDA memset]", []).append(e - s)
            sizes.setdefault("[CUDA memset]", []).append(b / 1e6)
    _time_table(f"{out}/{prefix}_cuda_gpu_mem_time_sum.csv", "Count", ["Operation"], times)
    with open(f"{out}/{prefix}_cuda_gpu_mem_size_sum.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)", "Operation"])
        for op, mb in sorted(sizes.items(), key=lambda kv: -sum(kv[1])):
            tot, n, avg, med, lo, hi, sd = _stats(mb)
            w.writerow([f"{tot:.3f}", n, f"{avg:.3f}", f"{med:.3f}", f"{lo:.3f}", f"{hi:.3f}", f"{sd:.3f}", op])
    ranges: dict = {}
    for s, e, text, tid in con.execute("select start, end, text, textId from NVTX_EVENTS where eventType = 59 "
                                       "and end is not null"):
        ranges.setdefault(text if text is not None else names.get(tid, "?"), []).append(e - s)
    _time_table(f"{out}/{prefix}_nvtx_sum.csv", "Instances", ["Style", "Range"], ranges,
                cells=lambda name: ["PushPop", name if name.startswith(":") else ":" + name])


if __name__ == "__main__":
    write_summaries(*sys.argv[1:4])
