"""Read an nsys SQLite export (``nsys export --type sqlite``) into the canonical frames.

The export is the ground truth the ``nsys stats`` CSV reports are computed from, so this module
builds the same frames the CSV loader gives (``schema.REQUIRED``; ``normalize`` runs on them
afterwards): ``gpu_trace`` (kernels, copies, memsets and whole CUDA-graph executions),
``api_trace`` (CUDA runtime and driver calls), ``nvtx_trace`` (push/pop and start/end ranges) and
the summaries derived from them (``kern_sum``, ``api_sum``, ``mem_time_sum``, ``mem_size_sum``,
``nvtx_sum``, ``osrt_sum``). See ``notes/input-formats.md`` section 3 for the schema.

- The file is opened read-only and immutable (``mode=ro&immutable=1``, ``query_only``): nothing
  is ever written to it or beside it (no journal, no index, no temp table).
- Tables are created lazily by nsys (a table exists only when something of its kind was recorded)
  and their columns changed from 2020 to 2026: every query is built from the columns that exist,
  and what is missing is named in one warning.
- SQL reads only the columns the facts use, with their string ids; the strings (kernel names are
  long and few) are read once for the distinct ids the rows hold (taken from the frame already
  read, not by scanning the table again) and kept as categories: a per-row dictionary code, never
  a per-row string. Polars does every aggregation.
- The big tables (kernels, copies, API calls, OS runtime calls) are read side by side on reader
  threads (``reading.py``, which also holds the connections), while this module turns what they
  give into frames.
"""
from __future__ import annotations

import os
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor

import polars as pl

from ...notes import Note
from ...errors import InputError
from .. import chunks, gpu_metrics, normalize
from . import tables as sqlite_tables
from .callchains import read_call_ops
from .memory import read_device_memory, read_memory_usage
from ..profile import Part
from .reading import BigTables, close_readers, open_readers, derived_columns, read_frame, pid_of, tid_of
from .tables import (GRAPH, KERNEL, MEANING, MEMCPY, MEMSET, NVTX, OSRT, OSRT_SLEEPS, OSRT_WAITS, RUNTIME, read_api_trace, big_jobs, gpu_names, read_gpu_trace, gpu_capabilities, read_nvtx_trace, read_osrt, table_pairs, processes, read_schema, size_summary, summary)  # noqa: F401

EXPORT_HINT = "export the report with: nsys export --type sqlite -o prof prof.nsys-rep"

def read_sqlite(path: str) -> Part:
    """-> Part (kind ``nsys-sqlite``). Raises InputError when the file is not a usable nsys export.
    Opening (journals, time limit, views, required columns) is ``opening.py``'s."""
    from . import opening as sqlite_open

    with sqlite_open.readable(path) as (local, opened_warnings):
        con = open_readers(local)
        try:
            part = _read(con, path)
            part.warnings[:0] = opened_warnings
            return part
        except sqlite3.DatabaseError as e:  # a damaged or cut file fails on the first page it cannot read
            if sqlite_open.timed_out(con):
                raise sqlite_open.limit_error(path) from None
            raise InputError(f"cannot read this SQLite file ({_first_line(e)}): it is damaged or cut short", path,
                             EXPORT_HINT) from None
        finally:
            sqlite_open.release(con)
            close_readers(con)


def _first_line(e: Exception) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:160] if s else type(e).__name__


def _read(con: sqlite3.Connection, path: str) -> Part:
    base = os.path.basename(path)
    cols = read_schema(con)
    nsys_like = [t for t in cols if t.startswith(("CUPTI_", "NVTX_", "TARGET_INFO_", "META_DATA_", "OSRT_"))
                 or t == "StringIds"]
    if not nsys_like:
        raise InputError("this SQLite file is not an nsys export (no CUPTI/NVTX/StringIds tables); "
                         "export with nsys export --type sqlite", path)
    from . import opening as sqlite_open

    checked = sqlite_open.check(con, cols, path)
    traces = [t for t in (KERNEL, MEMCPY, MEMSET, GRAPH, RUNTIME, NVTX, OSRT) if t in cols]
    if not traces:
        raise InputError("this nsys export holds no CUDA, NVTX or OS runtime events (no CUPTI_ACTIVITY_KIND_KERNEL, "
                         "CUPTI_ACTIVITY_KIND_RUNTIME, NVTX_EVENTS or OSRT_API table)", path,
                         "profile with nsys profile --trace=cuda,nvtx,osrt and export again")
    meta_export = table_pairs(con, cols, "META_DATA_EXPORT")
    version = meta_export.get("EXPORT_PRODUCT_VERSION") or "2020-era (no META_DATA_EXPORT)"
    part = Part(kind="nsys-sqlite", path=path, version=version, warnings=checked)
    part.meta["session_start_utc_ns"] = sqlite_open.session_start(con, cols)
    if "EXPORT_PRODUCT_VERSION" in meta_export:
        part.meta["nsys_version"] = meta_export["EXPORT_PRODUCT_VERSION"]

    missing = [t for t in (KERNEL, MEMCPY, RUNTIME, NVTX, OSRT) if t not in cols]   # memsets are incidental
    if missing:
        part.warnings.append(Note("load.sqlite_missing_tables", {"file": base, "tables": tuple(
            Note("phrase.table_of", {"table": t, "meaning": Note(MEANING[t])}) for t in missing)}))
    gpus = gpu_names(con, cols)
    if gpus:
        cc = gpu_capabilities(con, cols)
        part.meta["gpus"] = [{"id": k, "name": v, **({"cc": cc[k]} if k in cc else {})} for k, v in sorted(gpus.items())]
    else:
        part.warnings.append(Note("load.no_gpu_table", {"file": base}))

    big = BigTables(con, big_jobs(cols))   # the big reads start now, side by side
    # the *_sum tables (per-name medians of millions of rows) are made on a thread of their own while this
    # one goes on with the next table; each is put in its place in part.tables when all are done
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="nsx-summaries") as sums:
        _traces(con, cols, gpus, big, part, base, sums)
        part.tables = {k: v.result() if isinstance(v, Future) else v for k, v in part.tables.items()}
    part.meta["processes"] = processes(con, cols, part.tables)
    cut = sqlite_tables.long_strings(con, cols)
    if cut:
        part.warnings.append(Note("load.long_names", {"table": f"{base}: StringIds", "kib": sqlite_tables.NAME_MAX >> 10,
                                                      "kept": sqlite_tables.NAME_KEPT, **cut}))
    cut = sqlite_tables.long_inline(con, cols)
    if cut:
        part.warnings.append(Note("load.long_names", {"table": f"{base}: NVTX_EVENTS", "kib": sqlite_tables.NAME_MAX >> 10,
                                                      "kept": sqlite_tables.NAME_KEPT, **cut}))
    usage = read_memory_usage(con, cols)   # --cuda-memory-usage=true: device memory in use over time
    sizes = read_device_memory(con, cols) if usage is not None else None
    if usage is not None and sizes is not None:
        part.tables["mem_usage"], part.tables["device_memory"] = usage, sizes
    gm, gm_meta, gm_warn = gpu_metrics.read(con, cols, gpus, path, read_frame)   # --gpu-metrics-devices samples
    part.warnings += gm_warn
    if gm is not None:
        part.tables["gpu_metrics"], part.meta["gpu_metrics"] = gm, gm_meta
    return part


UNNAMED = "[unnamed kernel]"


def _traces(con: sqlite3.Connection, cols: dict, gpus: dict, big: "BigTables", part: Part, base: str,
            sums: ThreadPoolExecutor) -> None:
    """The trace tables into ``part.tables``, and the summaries made from them (as futures, on ``sums``)."""
    cuda = any(t in cols for t in (KERNEL, MEMCPY, MEMSET, GRAPH, RUNTIME))
    if cuda:
        gpu, n_graph = read_gpu_trace(con, cols, gpus, big)
        unnamed = gpu["name"].null_count()
        if unnamed:   # a kernel whose StringIds entry is NULL or missing: kept, named so, and said
            gpu = gpu.with_columns(pl.col("name").cast(pl.String).fill_null(UNNAMED).cast(pl.Categorical))
            part.warnings.append(Note("load.unnamed_kernels", {"file": base, "n": unnamed, "name": UNNAMED}))
        part.tables["gpu_trace"] = gpu
        if n_graph:
            part.warnings.append(Note("load.graphs_whole", {"file": base, "n": n_graph}))
        ops = gpu.select("name", "dur_ns", "bytes", "kind")   # the summaries' columns: filters copy these alone
        kernels = ops.filter(pl.col("kind") == "kernel") if (ops["kind"] != "kernel").any() else ops
        part.tables["kern_sum"] = sums.submit(summary, kernels, "dur_ns")
        mem = ops.filter(pl.col("kind").is_in(["memcpy", "memset"])).with_columns(pl.col("name").cast(pl.String))
        part.tables["mem_time_sum"] = sums.submit(summary, mem, "dur_ns")
        part.tables["mem_size_sum"] = sums.submit(size_summary, mem)
        part.tables["gpu_trace"] = gpu   # its kind (the table each operation came from) saves normalize a pass
    if RUNTIME in cols:
        api = read_api_trace(con, cols, big)
        part.tables["api_trace"] = api
        part.tables["api_sum"] = sums.submit(summary, api, "dur_ns")
        ops = read_call_ops(con, cols)   # --cudabacktrace: the ATen operator under each blocking call
        if ops is not None:
            part.tables["call_ops"] = ops
    if NVTX in cols:
        nvtx = read_nvtx_trace(con, cols)
        part.tables["nvtx_trace"] = nvtx
        part.tables["nvtx_sum"] = sums.submit(summary, nvtx.filter(pl.col("end_ns").is_not_null()), "dur_ns", style=True)
    if OSRT in cols:
        osrt = read_osrt(con, cols, big)
        part.tables["osrt_sum"] = sums.submit(summary, osrt, "dur_ns")
        # the blocking calls and sleeps, per thread: what a thread waited in while the GPU idled (facts/waits.py)
        part.tables["osrt_trace"] = osrt.filter(pl.col("name").is_in(sorted(OSRT_WAITS | OSRT_SLEEPS))).select(
            "start_ns", "end_ns", "dur_ns", "name", "pid", "tid")
