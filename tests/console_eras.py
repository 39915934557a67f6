"""Golden console fixtures of the older `nsys` eras, rendered from the numbers of real shared cases
(`python tests/console_eras.py` rewrites them; tests/load/test_console_eras.py checks they are up to date).

Public third-party logs show each era's layout, but they are not ours to copy. So each fixture holds
the real numbers of one of our own H200 cases (the `*_sum.csv` reports in `fixtures/<case>/input`, and
the exact bytes of each copy from `fixtures/<case>_sqlite/input/<case>.sqlite`, since the CSV's sizes are
MB rounded to 3 decimals) printed in that era's exact layout: titles, column labels, widths, alignment,
number formats and the lines nsys printed around the tables, as the public samples show them (each
fixture's README names them; docs/console-eras.md shows the layouts side by side).

- ``nsys2019``: nsys 2019.5.2 `nsys profile --stats=true` (MooMooHorse/conv_kernel Project/notes/note1.md,
  ANYMS-A/ANYMS-A.github.io _posts/2023-02-07-cuda-camp-day2.md);
- ``nsys2020``: nsys 2020.x `--stats=true` (mnicely/transfer_examples README.md);
- ``nsys2021``: nsys 2021.x `nsys stats x.qdrep` (tonyyxliu/CUHKSZ-CSC4005
  "docs/Instruction on Profiling with perf and nsys.md", nsys of HPC SDK 21.7).
"""
from __future__ import annotations

import csv
import math
import pathlib
import sqlite3
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures"
# 2025 names of the copy kinds -> the names every era before 2024 printed
OLD_COPY_NAMES = {"Device-to-Host": "DtoH", "Host-to-Device": "HtoD", "Device-to-Device": "DtoD",
                  "Peer-to-Peer": "PtoP"}
COPY_KINDS = {1: "[CUDA memcpy HtoD]", 2: "[CUDA memcpy DtoH]", 8: "[CUDA memcpy DtoD]", 10: "[CUDA memcpy PtoP]"}


# ------------------------------------------------------------------------------ the numbers
def rows(case: str, report: str) -> list[dict]:
    path = FIX / case / "input" / f"{case}_{report}.csv"
    with open(path, newline="", encoding="utf-8") as f:
        out = list(csv.DictReader(f))
    for r in out:
        for k in ("Name", "Operation"):
            if k in r:
                for new, old in OLD_COPY_NAMES.items():
                    r[k] = r[k].replace(f"[CUDA memcpy {new}]", f"[CUDA memcpy {old}]")
    return out


def sizes(case: str) -> list[dict]:
    """Per operation: count, total / avg / min / max / stddev bytes (exact, from the case's SQLite
    export; the CSV's MB columns agree to their 3 decimals), largest total first."""
    db = sqlite3.connect(f"file:{FIX / (case + '_sqlite') / 'input' / (case + '.sqlite')}?mode=ro", uri=True)
    groups: dict[str, list[int]] = {}
    for kind, nbytes in db.execute("SELECT copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
        groups.setdefault(COPY_KINDS[kind], []).append(nbytes)
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_MEMSET'").fetchone():
        for (nbytes,) in db.execute("SELECT bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            groups.setdefault("[CUDA memset]", []).append(nbytes)
    out = []
    for name, b in groups.items():
        avg = sum(b) / len(b)
        std = math.sqrt(sum((x - avg) ** 2 for x in b) / (len(b) - 1)) if len(b) > 1 else 0.0
        out.append({"name": name, "count": len(b), "total": sum(b), "avg": avg, "min": min(b), "max": max(b),
                    "std": std})
    check = {r["Operation"]: float(r["Total (MB)"]) for r in rows(case, "cuda_gpu_mem_size_sum")}
    for r in out:
        assert abs(r["total"] / 1e6 - check[r["name"]]) <= 0.0005 + 1e-9, (r, check)
    return sorted(out, key=lambda r: (-r["total"], r["name"]))


# ------------------------------------------------------------------------------ number formats
def _sep(x: str, grouping: bool) -> str:
    if not grouping:
        return x
    whole, _, frac = x.partition(".")
    sign = "-" if whole.startswith("-") else ""
    whole = f"{int(whole.lstrip('-')):,}"
    return sign + whole + ("." + frac if frac else "")


def fixed(v, decimals: int, grouping: bool = False) -> str:
    return _sep(f"{float(v):.{decimals}f}", grouping)


def integer(v, grouping: bool = False) -> str:
    return _sep(str(int(float(v))), grouping)


# ------------------------------------------------------------------------------ table layouts
def table_2019(labels: list[str], widths: list[int], body: list[list[str]]) -> list[str]:
    """2019.5: fixed column widths, labels and numbers right-aligned, the name column left-aligned in
    80 characters (longer names run past it), no leading space."""
    def line(cells):
        return "  ".join(c.rjust(w) if k < len(cells) - 1 else c.ljust(w) for k, (c, w) in enumerate(zip(cells, widths)))
    return [line(labels), "  ".join("-" * w for w in widths)] + [line(r) for r in body]


def table_2020(labels: list[str], body: list[list[str]]) -> list[str]:
    """2020-2021 column format: each column as wide as its widest cell, labels centred (the odd space
    on the right), numbers right-aligned, the name left-aligned; every line starts with one space."""
    widths = [max([len(l)] + [len(r[k]) for r in body]) for k, l in enumerate(labels)]

    def line(cells, header=False):
        out = []
        for k, (c, w) in enumerate(zip(cells, widths)):
            out.append(format(c, f"^{w}") if header else c.ljust(w) if k == len(cells) - 1 else c.rjust(w))
        return " " + "  ".join(out)
    return [line(labels, True), " " + "  ".join("-" * w for w in widths)] + [line(r) for r in body]


def _time_body(rs: list[dict], count: str, name: str, std: bool, grouping: bool) -> list[list[str]]:
    body = []
    for r in rs:
        cells = [fixed(r["Time (%)"], 1), integer(r["Total Time (ns)"], grouping), integer(r[count], grouping),
                 fixed(r["Avg (ns)"], 1, grouping), integer(r["Min (ns)"], grouping), integer(r["Max (ns)"], grouping)]
        if std:
            cells.append(fixed(r["StdDev (ns)"], 1, grouping))
        body.append(cells + [r[name]])
    return body


def _size_body_kib(ss: list[dict], decimals: tuple[int, ...], std: bool, grouping: bool) -> list[list[str]]:
    body = []
    for s in ss:
        d_total, d_avg, d_min, d_max = decimals[:4]
        cells = [fixed(s["total"] / 1024, d_total, grouping), integer(s["count"], grouping),
                 fixed(s["avg"] / 1024, d_avg, grouping), fixed(s["min"] / 1024, d_min, grouping),
                 fixed(s["max"] / 1024, d_max, grouping)]
        if std:
            cells.append(fixed(s["std"] / 1024, decimals[4], grouping))
        body.append(cells + [s["name"]])
    return body


# ------------------------------------------------------------------------------ the eras
def render_2019(case: str) -> str:
    """nsys 2019.5.2 `nsys profile --stats=true` (layout of MooMooHorse/conv_kernel Project/notes/note1.md)."""
    w = [7, 14, 10, 14, 14, 14, 80]
    api = table_2019(["Time(%)", "Total Time", "Calls", "Average", "Minimum", "Maximum", "Name"], w,
                     _time_body(rows(case, "cuda_api_sum"), "Num Calls", "Name", False, False))
    kern = table_2019(["Time(%)", "Total Time", "Instances", "Average", "Minimum", "Maximum", "Name"], w,
                      _time_body(rows(case, "cuda_gpu_kern_sum"), "Instances", "Name", False, False))
    mtime = table_2019(["Time(%)", "Total Time", "Operations", "Average", "Minimum", "Maximum", "Name"], w,
                       _time_body(rows(case, "cuda_gpu_mem_time_sum"), "Count", "Operation", False, False))
    msize = table_2019(["Total", "Operations", "Average", "Minimum", "Maximum", "Name"], [17, 14, 17, 17, 17, 80],
                       _size_body_kib(sizes(case), (1, 1, 3, 1), False, False))
    osrt = table_2019(["Time(%)", "Total Time", "Calls", "Average", "Minimum", "Maximum", "Name"], w,
                      _time_body(rows(case, "osrt_sum"), "Num Calls", "Name", False, False))
    n_events = 12345
    conf = ["**** collection configuration ****"] + [f"\t{x}" for x in (
        "force-overwrite = false", "stop-on-exit = true", "export_sqlite = true", "stats = true",
        "capture-range = none", "stop-on-range-end = false", "Beta: ftrace events:", "ftrace-keep-user-config = false",
        "trace-GPU-context-switch = false", "delay = 0 seconds", "duration = 0 seconds", "kill = signal number 15",
        "inherit-environment = true", "show-output = true", "trace-fork-before-exec = false", "sample_cpu = true",
        "backtrace_method = LBR", "wait = all", "trace_cublas = false", "trace_cuda = true", "trace_cudnn = false",
        "trace_nvtx = true", "trace_mpi = false", "trace_openacc = false", "trace_vulkan = false",
        "trace_opengl = true", "trace_osrt = true", "osrt-threshold = 0 nanoseconds", "cudabacktrace = false",
        "cudabacktrace-threshold = 0 nanoseconds", "profile_processes = tree",
        f"application command = python3", f"application arguments = {case}.py",
        "application working directory = /build", "NVTX profiler range trigger = ",
        "NVTX profiler domain trigger = ", "environment variables:", "Collecting data...")]
    out = conf + [
        f"{case}: done",
        "",
        "\tGenerating the /build/report1.qdstrm file.", "\tCapturing raw events...", "",
        f"\t**** WARNING: The collection generated {n_events + 26} total events. ****",
        "\tImporting this QDSTRM file into the NVIDIA Nsight Systems GUI may take several minutes to complete.", "",
        "\tCapturing symbol files...", "\tSaving diagnostics...", "\tSaving qdstrm file to disk...",
        "\tFinished saving file.", "", "",
        "Importing the qdstrm file using /opt/nvidia/nsight-systems/2019.5.2/host-linux-x64/QdstrmImporter.", "",
        "Importing...", "", "Importing [==================================================100%]",
        'Saving report to file "/build/report1.qdrep"', "Report file saved.",
        "Please discard the qdstrm file and use the qdrep file instead.", "",
        "Removed /build/report1.qdstrm as it was successfully imported.", "Please use the qdrep file instead.", "",
        "Exporting the qdrep file to SQLite database using /opt/nvidia/nsight-systems/2019.5.2/host-linux-x64/"
        "nsys-exporter.", "", f"Exporting {n_events} events:", "",
        "0%   10   20   30   40   50   60   70   80   90   100%",
        "|----|----|----|----|----|----|----|----|----|----|",
        "***************************************************", "",
        "Exported successfully to", "/build/report1.sqlite", "",
        "Generating CUDA API Statistics...", "CUDA API Statistics (nanoseconds)", ""] + api + [
        "", "", "", "", "Generating CUDA Kernel Statistics...", "", "Generating CUDA Memory Operation Statistics...",
        "CUDA Kernel Statistics (nanoseconds)", ""] + kern + [
        "", "", "CUDA Memory Operation Statistics (nanoseconds)", ""] + mtime + [
        "", "", "CUDA Memory Operation Statistics (KiB)", ""] + msize + [
        "", "", "", "", "Generating Operating System Runtime API Statistics...",
        "Operating System Runtime API Statistics (nanoseconds)", ""] + osrt + [
        "", "", "", "", "Generating NVTX Push-Pop Range Statistics...", "NVTX Push-Pop Range Statistics (nanoseconds)"]
    return "\n".join(out) + "\n"


def render_2020(case: str) -> str:
    """nsys 2020.x `nsys profile --stats=true` (layout of mnicely/transfer_examples README.md)."""
    g = True
    api = table_2020(["Time(%)", "Total Time (ns)", "Num Calls", "Average", "Minimum", "Maximum", "Name"],
                     _time_body(rows(case, "cuda_api_sum"), "Num Calls", "Name", False, g))
    kern = table_2020(["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"],
                      _time_body(rows(case, "cuda_gpu_kern_sum"), "Instances", "Name", False, g))
    mtime = table_2020(["Time(%)", "Total Time (ns)", "Operations", "Average", "Minimum", "Maximum", "Operation"],
                       _time_body(rows(case, "cuda_gpu_mem_time_sum"), "Count", "Operation", False, g))
    msize = table_2020(["Total", "Operations", "Average", "Minimum", "Maximum", "Operation"],
                       _size_body_kib(sizes(case), (3, 3, 3, 3), False, g))
    osrt = table_2020(["Time(%)", "Total Time (ns)", "Num Calls", "Average", "Minimum", "Maximum", "Name"],
                      _time_body(rows(case, "osrt_sum"), "Num Calls", "Name", False, g))
    nvtx = table_2020(["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Range"],
                      _time_body(rows(case, "nvtx_pushpop_sum"), "Instances", "Range", False, g))
    tmp = "/tmp/nsys-report-5c1e-77a0-3b42-91d8"
    out = ["Collecting data...", f"{case}: done", "Processing events...", "Capturing symbol files...",
           f'Saving temporary "{tmp}.qdstrm" file to disk...', "Creating final output files...", "",
           "Processing [==============================================================100%]",
           f'Saved report file to "{tmp}.qdrep"',
           "Exporting 12345 events: [==================================================100%]", "",
           "Exported successfully to", f"{tmp}.sqlite", "", ""]
    for title, t in (("CUDA API Statistics:", api), ("CUDA Kernel Statistics:", kern),
                     ("CUDA Memory Operation Statistics (by time):", mtime),
                     ("CUDA Memory Operation Statistics (by size in KiB):", msize),
                     ("Operating System Runtime API Statistics:", osrt), ("NVTX Push-Pop Range Statistics:", nvtx)):
        out += [title, ""] + t + ["", "", ""]
    out = out[:-2] + [f'Report file moved to "/build/{case}.qdrep"', f'Report file moved to "/build/{case}.sqlite"']
    return "\n".join(out) + "\n"


def render_2021(case: str) -> str:
    """nsys 2021.x `nsys stats x.qdrep` (layout of tonyyxliu/CUHKSZ-CSC4005
    'docs/Instruction on Profiling with perf and nsys.md', nsys of HPC SDK 21.7)."""
    g = True
    reports = "/opt/nvidia/hpc_sdk/Linux_x86_64/21.7/profilers/Nsight_Systems/target-linux-x64/reports"
    sq = f"./{case}.sqlite"
    api = table_2020(["Time(%)", "Total Time (ns)", "Num Calls", "Average", "Minimum", "Maximum", "StdDev", "Name"],
                     _time_body(rows(case, "cuda_api_sum"), "Num Calls", "Name", True, g))
    kern = table_2020(["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "StdDev", "Name"],
                      _time_body(rows(case, "cuda_gpu_kern_sum"), "Instances", "Name", True, g))
    mtime = table_2020(["Time(%)", "Total Time (ns)", "Operations", "Average", "Minimum", "Maximum", "StdDev",
                        "Operation"], _time_body(rows(case, "cuda_gpu_mem_time_sum"), "Count", "Operation", True, g))
    msize = table_2020(["Total", "Operations", "Average", "Minimum", "Maximum", "StdDev", "Operation"],
                       _size_body_kib(sizes(case), (3, 3, 3, 3, 3), True, g))
    osrt = table_2020(["Time(%)", "Total Time (ns)", "Num Calls", "Average", "Minimum", "Maximum", "StdDev", "Name"],
                      _time_body(rows(case, "osrt_sum"), "Num Calls", "Name", True, g))
    out = [f"[user@node21 build]$ nsys stats ./{case}.qdrep", f"Using {sq} for SQL queries."]
    for script, t in (("cudaapisum", api), ("gpukernsum", kern), ("gpumemtimesum", mtime), ("gpumemsizesum", msize),
                      ("osrtsum", osrt)):
        out += [f"Running [{reports}/{script}.py {sq}]... ", ""] + t + [""]
    return "\n".join(out[:-1]) + "\n"


def render_2020_1(case: str) -> str:
    """The first 2020 layout (CSCfi/csc-user-guide docs/computing/nsys.md, a `.qdrep` run without the
    2019.5 importer lines): the 2019.5 titles and tables, each title directly over its header, a blank
    line before each 'Generating ...' line. Not a fixture: tests/load/test_console_eras.py reads it as a
    variant of the 2020 fixture (same case, same tables)."""
    w = [7, 14, 10, 14, 14, 14, 61]
    body = {
        "api": table_2019(["Time(%)", "Total Time", "Calls", "Average", "Minimum", "Maximum", "Name"], w,
                          _time_body(rows(case, "cuda_api_sum"), "Num Calls", "Name", False, False)),
        "kern": table_2019(["Time(%)", "Total Time", "Instances", "Average", "Minimum", "Maximum", "Name"], w,
                           _time_body(rows(case, "cuda_gpu_kern_sum"), "Instances", "Name", False, False)),
        "mtime": table_2019(["Time(%)", "Total Time", "Operations", "Average", "Minimum", "Maximum", "Name"], w,
                            _time_body(rows(case, "cuda_gpu_mem_time_sum"), "Count", "Operation", False, False)),
        "msize": table_2019(["Total", "Operations", "Average", "Minimum", "Maximum", "Name"], [19, 14, 19, 17, 19, 48],
                            _size_body_kib(sizes(case), (3, 3, 3, 3), False, False)),
        "osrt": table_2019(["Time(%)", "Total Time", "Calls", "Average", "Minimum", "Maximum", "Name"], w,
                           _time_body(rows(case, "osrt_sum"), "Num Calls", "Name", False, False)),
    }
    body = {k: [line.rstrip() for line in t] for k, t in body.items()}
    tmp = "/tmp/user/6584503/nsys-report-b4eb-c068-9292-3b17"
    out = ["Collecting data...", f"{case}: done", "Processing events...", "Capturing symbol files...",
           f'Saving temporary "{tmp}.qdstrm" file to disk...', "Creating final output files...", "",
           "Processing [==============================================================100%]",
           f'Saved report file to "{tmp}.qdrep"', "", "Exporting 12345 events:", "",
           "Generating CUDA API Statistics...", "", "CUDA API Statistics (nanoseconds)"] + body["api"] + [
        "", "Generating CUDA Kernel Statistics...", "CUDA Kernel Statistics (nanoseconds)"] + body["kern"] + [
        "", "Generating CUDA Memory Operation Statistics...", "CUDA Memory Operation Statistics (nanoseconds)"] + \
        body["mtime"] + ["", "CUDA Memory Operation Statistics (KiB)"] + body["msize"] + [
        "", "Generating Operating System Runtime API Statistics...",
        "Operating System Runtime API Statistics (nanoseconds)"] + body["osrt"]
    return "\n".join(out) + "\n"


FIXTURES = {
    "console_nsys2019_memcpy_bound": (render_2019, "memcpy_bound", "stats_true_2019.5.txt"),
    "console_nsys2020_sync_bound": (render_2020, "sync_bound", "stats_true_2020.txt"),
    "console_nsys2021_memcpy_bound": (render_2021, "memcpy_bound", "nsys_stats_2021.txt"),
}


def render(name: str) -> str:
    fn, case, _ = FIXTURES[name]
    return fn(case)


def write_all() -> list[pathlib.Path]:
    out = []
    for name, (_, _, file) in FIXTURES.items():
        p = FIX / name / "input" / file
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(render(name), encoding="utf-8")
        out.append(p)
    return out


if __name__ == "__main__":
    for p in write_all():
        print(p.relative_to(ROOT))
    sys.exit(0)
