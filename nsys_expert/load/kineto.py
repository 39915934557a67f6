"""torch.profiler (Kineto) Chrome-trace JSON: the same canonical tables the nsys loaders give.

A trace (``NAME.pt.trace.json``, ``.json.gz``) is one JSON object whose ``traceEvents`` hold
complete events (``ph: X``, ``ts`` / ``dur`` in µs with the ns as fractions). They become:

- ``gpu_trace``: ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` events (2021: ``Kernel``, ``Memcpy``,
  ``Memset``); device and stream from the args; copies named as nsys names them
  (``Memcpy HtoD (Pageable -> Device)`` -> ``[CUDA memcpy HtoD]``, source kind ``Pageable``);
- ``api_trace``: ``cuda_runtime`` and ``cuda_driver`` calls (2021: ``Runtime``), with the CUPTI
  correlation id that ties each launch to its kernel (the ``ac2g`` flow events carry the same id:
  they are used where a kernel's args lack it);
- ``nvtx_trace``: ``user_annotation`` ranges (``ProfilerStep#N``, ``record_function`` names, the
  DataLoader's ``__next__``), so the analysis window finds the steps as it finds NVTX iterations;
- the summaries (``kern_sum``, ``api_sum``, ``mem_time_sum``, ``mem_size_sum``, ``nvtx_sum``) made
  from them as the SQLite loader makes them.

``deviceProperties`` names the GPUs; ``distributedInfo`` gives the rank (load/ranks.py, runs.py).
- ``cpu_trace``: ``cpu_op`` events (2021: ``Operator``) with their thread, the frame facts/cpu_ops.py
  reads (DataLoader, optimizer, backward, the operator behind each sync and pageable copy);
  ``python_function`` events (``with_stack``) are counted only.

ROCm traces (``hip*`` runtime calls, ``Cijk_*`` kernels) are the same format: ``meta['kineto']['rocm']``
says which platform made the trace (facts/platform.py gives the rules ``gpu_vendor``).
"""
from __future__ import annotations

import json
import os
import re

import polars as pl

from ..errors import InputError
from . import compressed

try:                       # a faster parser when it is installed; the standard one otherwise
    import orjson as _fastjson
except ImportError:        # pragma: no cover - depends on the environment
    _fastjson = None

GPU_CATS = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
RANGE_CATS = {"user_annotation"}
CPU_CATS = {"cpu_op", "Operator", "python_function"}
STEP = re.compile(r"^ProfilerStep#\d+$")
HINT = "save it again with torch.profiler's export_chrome_trace or tensorboard_trace_handler"

_COPY = re.compile(r"^Memcpy\s+(\w+)(?:\s*\(\s*([^)]*?)\s*->\s*([^)]*?)\s*\))?")
_SET = re.compile(r"^Memset\s*(?:\(\s*([^)]*?)\s*\))?")


def looks_like(path: str, head: bytes | None = None) -> bool:
    """A file named like a trace (``*.pt.trace.json``), or whose first bytes open a Chrome-trace object."""
    name = compressed.logical_name(path).lower()
    if name.endswith(".pt.trace.json"):
        return True
    if head is None:
        try:
            head = compressed.head(path, 1 << 16)
        except InputError:
            return False
    # any other JSON (a notes or config file beside the reports) is not a trace: left alone as before
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and (b'"traceEvents"' in head or b'"schemaVersion"' in head)


def _parse(path: str) -> dict:
    data = compressed.read_all(path)
    try:
        doc = _fastjson.loads(data) if _fastjson is not None else json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        what = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        raise InputError(f"this torch.profiler trace is not valid JSON ({what}; the file may be cut)",
                         path, HINT) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise InputError("this JSON file is not a torch.profiler trace (no traceEvents list)", path, HINT)
    return doc


def _ns(us) -> int:
    return int(round(float(us) * 1000.0))


def _copy_name(name: str) -> tuple[str, str | None, str | None]:
    m = _COPY.match(name)
    if not m:
        return "[CUDA memcpy Unknown]", None, None
    return f"[CUDA memcpy {m.group(1)}]", m.group(2), m.group(3)


def read_kineto(path: str):
    """-> Part (kind ``kineto``). Raises InputError when the file is no readable trace."""
    from .profile import Part
    from .sqlite_tables import _size_summary, _summary

    doc = _parse(path)
    base = os.path.basename(path)
    gpu = {k: [] for k in ("start_ns", "dur_ns", "corr_id", "bytes", "src_kind", "dst_kind", "device_id",
                           "stream", "name")}
    api = {k: [] for k in ("start_ns", "dur_ns", "name", "corr_id", "pid", "tid")}
    rng = {k: [] for k in ("start_ns", "dur_ns", "name", "pid", "tid")}
    cpu = {k: [] for k in ("start_ns", "dur_ns", "name", "pid", "tid")}
    flows: dict[tuple, int] = {}     # (pid, tid, ts) of a flow's GPU end -> its id (a correlation id)
    n_flows = n_cpu = 0
    no_corr = []                     # rows of GPU events whose args give no correlation id
    for e in doc["traceEvents"]:
        if not isinstance(e, dict):
            continue
        ph, cat = e.get("ph"), e.get("cat")
        if ph in ("s", "f") and cat == "ac2g":
            n_flows += ph == "s"
            if ph == "f" and "id" in e:
                flows[(e.get("pid"), e.get("tid"), e.get("ts"))] = e["id"]
            continue
        if ph != "X" or "ts" not in e:
            continue
        args = e.get("args") or {}
        name = str(e.get("name", ""))
        try:
            ts, dur = _ns(e["ts"]), _ns(e.get("dur", 0))
        except (TypeError, ValueError):
            continue
        kind = GPU_CATS.get(cat)
        if kind is not None:
            src = dst = None
            if kind == "memcpy":
                name, src, dst = _copy_name(name)
            elif kind == "memset":
                m = _SET.match(name)
                src, name = (m.group(1) if m else None), "[CUDA memset]"
            corr = args.get("correlation")
            if corr is None:
                no_corr.append((len(gpu["name"]), (e.get("pid"), e.get("tid"), e.get("ts"))))
            dev = args.get("device", e.get("pid"))
            strm = args.get("stream", e.get("tid"))
            for k, v in (("start_ns", ts), ("dur_ns", dur), ("corr_id", corr), ("bytes", args.get("bytes")),
                         ("src_kind", src), ("dst_kind", dst), ("name", name),
                         ("device_id", dev if isinstance(dev, int) else 0),
                         ("stream", strm if isinstance(strm, int) else None)):
                gpu[k].append(v)
        elif cat in API_CATS:
            for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name), ("corr_id", args.get("correlation")),
                         ("pid", _int(e.get("pid"))), ("tid", _int(e.get("tid")))):
                api[k].append(v)
        elif cat in RANGE_CATS or (cat in CPU_CATS and STEP.match(name)):
            for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name), ("pid", _int(e.get("pid"))),
                         ("tid", _int(e.get("tid")))):
                rng[k].append(v)
        elif cat in CPU_CATS:
            n_cpu += 1
            if cat != "python_function":     # Python frames (with_stack) are many and name no operator
                for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name), ("pid", _int(e.get("pid"))),
                             ("tid", _int(e.get("tid")))):
                    cpu[k].append(v)
    for row, key in no_corr:        # 2021-era kernels: the correlation id is the flow's id
        gpu["corr_id"][row] = flows.get(key)

    rocm = _is_rocm(doc, api["name"])
    part = Part(kind="kineto", path=path, version=_version(doc, rocm))
    part.meta.update(_meta(doc, rocm, gpu["name"]))
    main_pid = _main_pid(api["pid"])
    g = pl.DataFrame(gpu, schema={"start_ns": pl.Int64, "dur_ns": pl.Int64, "corr_id": pl.Int64,
                                  "bytes": pl.Float64, "src_kind": pl.String, "dst_kind": pl.String,
                                  "device_id": pl.Int64, "stream": pl.Int64, "name": pl.String})
    g = g.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
                       pl.lit(main_pid, pl.Int64).alias("pid")).sort("start_ns", maintain_order=True)
    a = pl.DataFrame(api, schema={"start_ns": pl.Int64, "dur_ns": pl.Int64, "name": pl.String,
                                  "corr_id": pl.Int64, "pid": pl.Int64, "tid": pl.Int64})
    a = a.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns")).sort("start_ns", maintain_order=True)
    part.tables["gpu_trace"] = g
    part.tables["kern_sum"] = _summary(g.filter(~pl.col("name").str.starts_with("[CUDA ")), "dur_ns")
    mem = g.filter(pl.col("name").str.starts_with("[CUDA mem"))
    part.tables["mem_time_sum"] = _summary(mem, "dur_ns")
    part.tables["mem_size_sum"] = _size_summary(mem)
    if a.height or not g.height:
        part.tables["api_trace"] = a
        part.tables["api_sum"] = _summary(a, "dur_ns")
    else:
        part.warnings.append(f"{base}: no cuda_runtime events in this trace (profiled without the CPU activity?): "
                             f"launches and synchronizations are not seen")
    if cpu["name"]:
        c = pl.DataFrame(cpu, schema={"start_ns": pl.Int64, "dur_ns": pl.Int64, "name": pl.String,
                                      "pid": pl.Int64, "tid": pl.Int64})
        part.tables["cpu_trace"] = c.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns")).sort(
            "start_ns", maintain_order=True)
    if rng["name"]:
        n = _ranges(rng)
        part.tables["nvtx_trace"] = n
        part.tables["nvtx_sum"] = _summary(n, "dur_ns", style=True)
    if g.height:
        joined = g.filter(pl.col("corr_id").is_not_null() & ~pl.col("name").str.starts_with("[CUDA "))
        launched = joined.join(a.select("corr_id").unique(), on="corr_id", how="semi").height
        part.meta["kineto"]["kernels_joined_to_launch"] = launched
    part.meta["kineto"].update(flows=n_flows, cpu_ops=n_cpu, ranges=len(rng["name"]))
    if part.meta["kineto"].get("rank") is not None:
        part.meta["processes"] = [{"pid": main_pid, "name": f"rank {part.meta['kineto']['rank']}"}]
    return part


def _int(v) -> int | None:
    return v if isinstance(v, int) else None


def _main_pid(pids: list) -> int | None:
    counts: dict = {}
    for p in pids:
        if p is not None:
            counts[p] = counts.get(p, 0) + 1
    return max(counts, key=counts.get) if counts else None


def _ranges(rng: dict) -> pl.DataFrame:
    """user_annotation ranges with their nesting depth on their thread (0 = top), as push/pop NVTX."""
    from .sqlite_tables import NVTX_PUSHPOP, _levels
    n = pl.DataFrame(rng, schema={"start_ns": pl.Int64, "dur_ns": pl.Int64, "name": pl.String,
                                  "pid": pl.Int64, "tid": pl.Int64})
    n = n.sort("start_ns", maintain_order=True).with_row_index("range_id", offset=1).with_columns(
        pl.col("range_id").cast(pl.Int64), (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        pl.lit(NVTX_PUSHPOP).alias("event"), pl.lit("PushPop").alias("style"),
        (pl.col("pid").fill_null(0) * (1 << 32) + pl.col("tid").fill_null(0)).alias("gtid"))
    n = n.join(_levels(n), on="range_id", how="left", maintain_order="left")
    return n.select("start_ns", "end_ns", "dur_ns", "name", "style", "pid", "tid", "level", "range_id")


def _is_rocm(doc: dict, api_names: list) -> bool:
    """ROCm: the header says so (``hip_runtime_version``, ``roctracer_version``), or, in traces whose header
    names no runtime (HTA's MI250 sample), the runtime calls are HIP's."""
    if doc.get("hip_runtime_version") or doc.get("roctracer_version"):
        return True
    if doc.get("cuda_runtime_version") or doc.get("cupti_version"):
        return False
    hip = sum(1 for n in api_names[:5000] if n.startswith("hip"))
    return hip > 0 and hip * 2 >= min(len(api_names), 5000)


_ISA = re.compile(r"_ISA(\d{2,4}[a-z]?)_")


def _arch(kernel_names: list) -> str | None:
    """The gfx target hipBLASLt / Tensile names in its kernels (``Cijk_..._ISA90a_...`` -> ``gfx90a``)."""
    for n in kernel_names[:200_000]:
        if n.startswith("Cijk_"):
            m = _ISA.search(n)
            if m:
                return "gfx" + m.group(1)
    return None


def _version(doc: dict, rocm: bool = False) -> str:
    if rocm:
        hip = doc.get("hip_runtime_version")
        return f"torch.profiler (ROCm, schema {doc.get('schemaVersion', '?')}" + (f", HIP runtime {hip})" if hip else ")")
    cuda = doc.get("cuda_runtime_version")
    return f"torch.profiler (schema {doc.get('schemaVersion', '?')}" + (f", CUDA runtime {cuda})" if cuda else ")")


def _meta(doc: dict, rocm: bool = False, kernel_names: list | None = None) -> dict:
    meta: dict = {}
    props = doc.get("deviceProperties")
    arch = _arch(kernel_names or []) if rocm else None
    if isinstance(props, list):
        gpus = []
        for i, p in enumerate(props):
            if not isinstance(p, dict):
                continue
            name = str(p.get("name") or "").strip()
            if rocm and arch and arch not in name:   # MI250 traces say only 'AMD Radeon Graphics'
                name = f"{name or 'AMD GPU'} ({arch})"
            gpus.append({"id": int(p.get("id", i)), "name": name or "unknown"})
        if gpus:
            meta["gpus"] = gpus
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    meta["kineto"] = {"rank": info.get("rank"), "world_size": info.get("world_size"),
                      "backend": info.get("backend"), "rocm": rocm}
    meta["gpu_vendor"] = "amd" if rocm else "nvidia"
    if info.get("rank") is not None:
        meta["dist_rank"] = info.get("rank")
    return meta
