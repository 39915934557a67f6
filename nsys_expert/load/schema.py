"""Known `nsys stats` reports: how to recognise each one by its header, and its canonical columns.

A header cell such as ``Total Time (ns)`` is split into a *label* (``totaltime``: lower case, no
spaces) and a *unit* (``ns``). Every report era spells its labels a little differently
(``Time(%)`` / ``Time (%)``, ``Average`` / ``Avg``, ``Start Time`` / ``Start``); the alias table maps
them all to one canonical column name. Units are converted on load: times to ns, sizes to bytes
(MB = 10^6 bytes), throughputs to bytes/s. See ``notes/input-formats.md`` sections 1.3-1.6.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# canonical column name -> value class ("ts"/"dur": time in ns; "bytes"; "bps": bytes/s;
# "int"; "float"; "pct"; "str")
# nsys writes ns / us / ms / s and B / KB / MB / GB; µs and KiB / MiB / GiB are read too (load/numbers.py
# warns about them: a file that holds them was written by another program)
TIME_UNITS = {"µs": 1e3, "μs": 1e3, "ns": 1.0, "nsec": 1.0, "nsecond": 1.0, "us": 1e3, "usec": 1e3, "usecond": 1e3,
              "ms": 1e6, "msec": 1e6, "msecond": 1e6, "s": 1e9, "sec": 1e9, "second": 1e9}
SIZE_UNITS = {"b": 1.0, "byte": 1.0, "bytes": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9,
              "kib": 1024.0, "mib": float(1 << 20), "gib": float(1 << 30)}
RATE_UNITS = {"mb/s": 1e6, "mbps": 1e6, "gb/s": 1e9, "kb/s": 1e3, "b/s": 1.0}

# label (normalised) -> (canonical name, value class)
ALIASES: dict[str, tuple[str, str]] = {
    # summaries
    "time": ("time_pct", "pct"),
    "totaltime": ("total_ns", "dur"),
    "numcalls": ("count", "int"),
    "calls": ("count", "int"),                 # 2019.5
    "instances": ("count", "int"),
    "count": ("count", "int"),
    "operations": ("count", "int"),
    "avg": ("avg_ns", "dur"),
    "average": ("avg_ns", "dur"),
    "med": ("med_ns", "dur"),
    "median": ("med_ns", "dur"),
    "min": ("min_ns", "dur"),
    "minimum": ("min_ns", "dur"),
    "max": ("max_ns", "dur"),
    "maximum": ("max_ns", "dur"),
    "stddev": ("std_ns", "dur"),
    "name": ("name", "str"),
    "operation": ("name", "str"),
    "range": ("name", "str"),
    "category": ("category", "str"),
    "style": ("style", "str"),
    "gridxyz": ("grid", "str"),
    "blockxyz": ("block", "str"),
    # memory size summary ("Total (MB)" etc. are mapped by unit class below)
    "total": ("total_bytes", "bytes"),
    # traces
    "start": ("start_ns", "ts"),
    "starttime": ("start_ns", "ts"),
    "end": ("end_ns", "ts"),
    "duration": ("dur_ns", "dur"),
    "durchild": ("dur_child_ns", "dur"),
    "durnonchild": ("dur_nonchild_ns", "dur"),
    "corrid": ("corr_id", "int"),
    "result": ("result", "int"),
    "pid": ("pid", "int"),
    "tid": ("tid", "int"),
    "t-pri": ("thread_priority", "int"),
    "threadname": ("thread_name", "str"),
    "grdx": ("grid_x", "int"), "grdy": ("grid_y", "int"), "grdz": ("grid_z", "int"),
    "blkx": ("block_x", "int"), "blky": ("block_y", "int"), "blkz": ("block_z", "int"),
    "reg/trd": ("regs_per_thread", "int"),
    "stcsmem": ("static_smem_bytes", "bytes"),
    "dymsmem": ("dynamic_smem_bytes", "bytes"),
    "bytes": ("bytes", "bytes"),
    "throughput": ("throughput_bps", "bps"),
    "srcmemkd": ("src_kind", "str"),
    "dstmemkd": ("dst_kind", "str"),
    "device": ("device", "str"),
    "ctx": ("context", "int"),
    "greenctx": ("green_context", "int"),
    "strm": ("stream", "int"),
    "lvl": ("level", "int"),
    "numchild": ("num_child", "int"),
    "rangeid": ("range_id", "int"),
    "parentid": ("parent_id", "int"),
    "rangestack": ("range_stack", "str"),
    "nametree": ("name_tree", "str"),
    "hwid": ("hw_id", "int"),
    "vmid": ("vm_id", "int"),
    # nvtx_gpu_proj_sum
    "totalprojtime": ("total_proj_ns", "dur"),
    "totalrangetime": ("total_range_ns", "dur"),
    "rangeinstances": ("count", "int"),
    "projavg": ("proj_avg_ns", "dur"),
    "projmed": ("proj_med_ns", "dur"),
    "projmin": ("proj_min_ns", "dur"),
    "projmax": ("proj_max_ns", "dur"),
    "projstddev": ("proj_std_ns", "dur"),
    "totalgpuops": ("total_gpu_ops", "int"),
    "avggpuops": ("avg_gpu_ops", "float"),
    "avgrangelvl": ("avg_range_level", "float"),
    "avgnumchild": ("avg_num_child", "float"),
    # cuda_kern_exec_sum
    "devid": ("device_id", "int"),
    "qcount": ("queued_count", "int"),
    "apiname": ("api_name", "str"),
    "kernelname": ("kernel_name", "str"),
}
for _p, _what in (("t", "total"), ("a", "api"), ("q", "queue"), ("k", "kernel")):
    for _stat, _canon in (("avg", "avg"), ("med", "med"), ("min", "min"), ("max", "max"), ("stddev", "std")):
        ALIASES[f"{_p}{_stat}"] = (f"{_what}_{_canon}_ns", "dur")


@dataclass(frozen=True)
class ReportSpec:
    table: str               # canonical table name used by the facts layer
    names: tuple[str, ...]   # report names (new and old) as they appear in file names
    needs: frozenset[str]    # normalised header labels that must all be present
    forbids: frozenset[str] = frozenset()
    title: str = ""


def _spec(table, names, needs, forbids=(), title=""):
    return ReportSpec(table, tuple(names), frozenset(needs), frozenset(forbids), title)


# Order matters only for ties; every signature below is distinct from the others.
REPORTS: list[ReportSpec] = [
    _spec("gpu_trace", ["cuda_gpu_trace", "gputrace"], {"start", "duration", "corrid", "strm", "name"},
          title="CUDA GPU trace"),
    _spec("api_trace", ["cuda_api_trace", "cudaapitrace"], {"duration", "name", "result", "corrid"},
          title="CUDA API trace"),
    _spec("nvtx_trace", ["nvtx_pushpop_trace", "nvtxpptrace"], {"start", "end", "duration", "name", "rangeid"},
          title="NVTX push/pop trace"),
    _spec("kern_exec_sum", ["cuda_kern_exec_sum", "kernexecsum"], {"qcount", "apiname", "kernelname"},
          title="CUDA kernel launch & exec summary"),
    _spec("gpu_sum", ["cuda_gpu_sum", "gpusum", "cuda_api_gpu_sum"], {"time", "totaltime", "category", "operation"},
          title="CUDA GPU summary (kernels and memory operations)"),
    _spec("mem_time_sum", ["cuda_gpu_mem_time_sum", "gpumemtimesum"], {"time", "totaltime", "operation"},
          forbids={"category"}, title="GPU memory operations by time"),
    _spec("mem_size_sum", ["cuda_gpu_mem_size_sum", "gpumemsizesum"], {"total", "operation"},
          forbids={"time"}, title="GPU memory operations by size"),
    _spec("kern_sum", ["cuda_gpu_kern_sum", "gpukernsum"], {"time", "totaltime", "instances", "name"},
          forbids={"category", "style"}, title="CUDA GPU kernel summary"),
    _spec("nvtx_gpu_proj_sum", ["nvtx_gpu_proj_sum"], {"range", "totalprojtime"},
          title="NVTX GPU projection summary"),
    _spec("nvtx_sum", ["nvtx_sum", "nvtxsum"], {"time", "totaltime", "style", "range"},
          title="NVTX range summary"),
    _spec("nvtx_pushpop_sum", ["nvtx_pushpop_sum", "nvtxppsum"], {"time", "totaltime", "range"},
          forbids={"style"}, title="NVTX push/pop range summary"),
    # cuda_api_sum and osrt_sum share one header; the file name or the row names decide
    _spec("api_sum", ["cuda_api_sum", "cudaapisum"], {"time", "totaltime", "numcalls", "name"},
          title="CUDA API summary"),
    _spec("osrt_sum", ["osrt_sum", "osrtsum"], {"time", "totaltime", "numcalls", "name"},
          title="OS runtime summary"),
]
SPEC_BY_TABLE = {s.table: s for s in REPORTS}
SPEC_BY_NAME = {n: s for s in REPORTS for n in s.names}
# report names nsys-expert recognises but does not use (read nothing, say so)
UNUSED_REPORT_NAMES = {
    "cuda_gpu_kern_gb_sum", "cuda_kern_exec_trace", "kernexectrace", "nvtx_startend_sum", "nvtx_kern_sum",
    "nvtxkernsum", "nvtx_gpu_proj_trace", "openmp_sum", "openmpevtsum", "openacc_sum", "openaccsum",
    "um_sum", "um_total_sum", "um_cpu_page_faults_sum", "unifiedmemory", "unifiedmemorytotals",
    "umcpupagefaults", "mpi_event_sum", "mpi_event_trace", "mpi_msg_size_sum", "syscall_sum",
    "opengl_khr_range_sum", "opengl_khr_gpu_range_sum", "vulkan_marker_sum", "vulkan_gpu_marker_sum",
    "dx11_pix_sum", "dx12_gpu_marker_sum", "dx12_pix_sum", "wddm_queue_sum", "khrdebugsum",
    "khrdebuggpusum", "vulkanmarkerssum", "vulkangpumarkersum", "dx11pixsum", "dx12gpumarkersum",
    "dx12pixsum", "wddmqueuesdetails",
}
_ALL_NAMES = sorted(list(SPEC_BY_NAME) + list(UNUSED_REPORT_NAMES), key=len, reverse=True)
_NAME_RE = re.compile(r"(?:^|[_.\-])(" + "|".join(re.escape(n) for n in _ALL_NAMES) + r")(?:_[^.]*)?\.(?:csv|tsv|txt)(?:\.gz)?$",
                      re.IGNORECASE)

def split_header_cell(cell: str) -> tuple[str, str | None]:
    """``'Total Time (ns)'`` -> ``('totaltime', 'ns')``; ``'Time(%)'`` -> ``('time', '%')``: the unit is
    a last ``(...)`` without parentheses inside. Plain string work, linear in the cell (the regex it
    replaces, ``\\s*(.*?)\\s*(\\(...\\))?\\s*$``, took minutes on one 10 KB header cell of spaces)."""
    text = cell.strip().strip('"').strip()
    label, unit = text, None
    if text.endswith(")"):
        i = text.rfind("(")
        if i >= 0 and ")" not in text[i + 1:-1]:
            label, unit = text[:i].strip(), text[i + 1:-1]
    if "\n" in label:    # what the regex did: '.' stops at a line break, and the cell was kept whole
        label, unit = cell, None
    return label.lower().replace(" ", ""), unit.strip().lower() if unit else None


def report_name_from_filename(filename: str) -> str | None:
    """``prof_cuda_gpu_trace.csv`` -> ``cuda_gpu_trace`` (longest known report name that ends the stem)."""
    m = _NAME_RE.search(filename)
    return m.group(1).lower() if m else None


def match_header(labels: list[str]) -> list[ReportSpec]:
    """The report specs whose signature the header labels satisfy. nsys 2019.5 spelled two labels
    its own way: ``Calls`` (later ``Num Calls``), and ``Name`` over the memory operations (later
    ``Operation``; its tables are the ones that count ``Operations``)."""
    have = set(labels)
    if "calls" in have:
        have.add("numcalls")
    if "operations" in have and "name" in have:
        have.add("operation")
    return [s for s in REPORTS if s.needs <= have and not (s.forbids & have)]


def column_plan(cells: list[str]) -> list[tuple[str, str, str, float]]:
    """For each header cell: (original cell, canonical name, value class, factor to canonical unit).

    Unknown labels keep their own name (lower case) as class ``str``; nothing is dropped.
    """
    plan = []
    seen = set()
    for cell in cells:
        label, unit = split_header_cell(cell)
        canon, cls = ALIASES.get(label, (re.sub(r"\W+", "_", label).strip("_") or "col", "str"))
        factor = 1.0
        if unit in ("%",):
            cls = "pct" if cls in ("pct", "float") else cls
        elif unit in TIME_UNITS and cls in ("dur", "ts", "float", "str"):
            factor = TIME_UNITS[unit]
            cls = cls if cls in ("dur", "ts") else "dur"
        elif unit in SIZE_UNITS:
            factor = SIZE_UNITS[unit]
            if label in ("avg", "average", "med", "min", "minimum", "max", "maximum", "stddev", "total"):
                canon = {"total": "total_bytes"}.get(label, canon.replace("_ns", "_bytes"))
            cls = "bytes"
        elif unit in RATE_UNITS:
            factor = RATE_UNITS[unit]
            cls = "bps"
        name = canon
        n = 2
        while name in seen:  # a label repeated in one header: keep both
            name = f"{canon}_{n}"
            n += 1
        seen.add(name)
        plan.append((cell, name, cls, factor))
    return plan


# The columns each canonical table must have after loading (dtype of each), whatever the era.
# A report that lacks one of them cannot feed the facts that need it and is rejected with a
# message naming the column.
REQUIRED = {
    "gpu_trace": {"start_ns": "i64", "dur_ns": "i64", "name": "str"},
    "api_trace": {"start_ns": "i64", "dur_ns": "i64", "name": "str"},
    "nvtx_trace": {"start_ns": "i64", "end_ns": "i64", "name": "str"},
    "kern_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "api_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "osrt_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "gpu_sum": {"total_ns": "i64", "count": "i64", "name": "str", "category": "str"},
    "mem_time_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "mem_size_sum": {"total_bytes": "f64", "count": "i64", "name": "str"},
    "nvtx_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "nvtx_pushpop_sum": {"total_ns": "i64", "count": "i64", "name": "str"},
    "nvtx_gpu_proj_sum": {"total_proj_ns": "i64", "name": "str"},
    "kern_exec_sum": {"count": "i64", "api_name": "str", "kernel_name": "str"},
    # Nsight Compute (load/ncu.py): details page (long), its rule rows, and the raw page made long
    "ncu": {"launch_id": "i64", "kernel_name": "str", "section": "str", "metric": "str", "unit": "str",
            "value": "f64", "text": "str"},
    "ncu_rules": {"launch_id": "i64", "kernel_name": "str", "rule": "str", "type": "str", "speedup_pct": "f64"},
    "ncu_raw": {"launch_id": "i64", "kernel_name": "str", "metric": "str", "unit": "str", "value": "f64",
                "text": "str"},
}


# Columns worth reading per table (None: all). The GPU trace is the one big file; its grid, block,
# register, shared-memory, throughput and context columns feed no fact (launch configuration comes
# from Nsight Compute; throughput is recomputed from bytes / duration).
# The API trace is the other big file (about two calls per GPU operation): its result code, thread
# priority and thread name feed no fact either (a thread is its id); a thread name per row cost 16+
# bytes a call (at 20 M calls, 0.8 GB with the two integer columns).
KEEP = {
    "gpu_trace": {"start_ns", "dur_ns", "corr_id", "bytes", "src_kind", "dst_kind", "device", "stream", "name"},
    "api_trace": {"start_ns", "dur_ns", "end_ns", "corr_id", "pid", "tid", "name"},
}
