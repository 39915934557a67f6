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
- ``py_trace``: ``python_function`` events (``with_stack=True``): the Python frames, named
  ``file(LINE): function`` (the line is the function's first line), nested on their thread; what
  facts/where.py reads to say where in the user's code a call or a kernel came from.

ROCm traces (``hip*`` runtime calls, ``Cijk_*`` kernels) are the same format: ``meta['kineto']['rocm']``
says which platform made the trace (facts/platform.py gives the rules ``gpu_vendor``).
"""
from __future__ import annotations

import os
import re
from collections import Counter

import polars as pl

from ..notes import Note
from ..errors import InputError
from . import compressed, kineto_decode
from . import kineto_values as kv

GPU_CATS = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
RANGE_CATS = {"user_annotation"}
CPU_CATS = {"cpu_op", "Operator", "python_function"}
STEP = re.compile(r"^ProfilerStep#\d+$")
# before user_annotation (the 2021 format), PyTorch's own record_function ranges come as Operator events: the
# step, the DataLoader's next batch, the optimizer's step and zero_grad (issue 56, item 10: a num_workers=0
# ResNet trace's DataLoader ranges were dropped, and its data wait called host-bound)
RECORD_FUNCTION_2021 = re.compile(r"^(ProfilerStep#\d+$|enumerate\(DataLoader\)#|Optimizer\.(step|zero_grad)#)")

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


def _copy_name(name: str) -> tuple[str, str | None, str | None]:
    m = _COPY.match(name)
    if not m:
        return "[CUDA memcpy Unknown]", None, None
    return f"[CUDA memcpy {m.group(1)}]", m.group(2), m.group(3)


_T = {"start_ns": pl.Int64, "dur_ns": pl.Int64}
GPU = {**_T, "corr_id": pl.Int64, "bytes": pl.Float64, "src_kind": pl.String, "dst_kind": pl.String,
       "device_id": pl.Int64, "stream": pl.Int64, "name": pl.String}
API = {**_T, "name": pl.String, "corr_id": pl.Int64, "pid": pl.Int64, "tid": pl.Int64}
RNG = CPU = {**_T, "name": pl.String, "pid": pl.Int64, "tid": pl.Int64}


class _Columns:
    """The tables' columns, one piece of events at a time: lists for the piece, then a frame each."""

    def __init__(self):
        self.frames: dict[str, list[pl.DataFrame]] = {"gpu": [], "api": [], "rng": [], "cpu": [], "py": []}
        self.flows: dict[tuple, int] = {}   # (pid, tid, ts) of a flow's GPU end -> its id (a correlation id)
        self.n_flows = self.n_cpu = self.n_gpu = 0
        self.no_corr: list = []              # rows of GPU events whose args give no correlation id
        self.dropped: Counter = Counter()    # (what, why) -> values dropped (load/kineto_values.py)
        self.reserved: dict[int, int] = {}   # device -> the allocator's reserved bytes at the last [memory] event
        self.mem: list[tuple] = []           # (ns, device, change of the reserve)

    def add(self, events: list) -> None:
        gpu = {k: [] for k in GPU}
        api, rng, cpu, py = ({k: [] for k in API}, {k: [] for k in RNG}, {k: [] for k in CPU}, {k: [] for k in CPU})
        no_args, unset = kineto_decode.NO_ARGS, kineto_decode.UNSET
        for e in events:
            ph, cat = e.ph, e.cat
            if not isinstance(cat, str):
                continue
            if ph in ("s", "f") and cat == "ac2g":
                self.n_flows += ph == "s"
                if ph == "f" and e.id is not unset:
                    self.flows[kv.key(e.pid, e.tid, e.ts)] = e.id
                continue
            if ph == "i" and e.name == "[memory]":   # profile_memory=True: the caching allocator's reserve
                self._memory(e)
                continue
            if ph != "X" or e.ts is None:
                continue
            name = e.name if isinstance(e.name, str) else str(e.name)
            ts, dur = kv.time_ns(e.ts, self.dropped, "events"), kv.time_ns(e.dur, self.dropped, "events")
            if ts is None or dur is None:
                continue
            kind = GPU_CATS.get(cat)
            if kind is not None:
                args = e.args or no_args
                src = dst = None
                if kind == "memcpy":
                    name, src, dst = _copy_name(name)
                elif kind == "memset":
                    m = _SET.match(name)
                    src, name = (m.group(1) if m else None), "[CUDA memset]"
                corr = args.correlation
                if corr is None:
                    self.no_corr.append((self.n_gpu + len(gpu["name"]), kv.key(e.pid, e.tid, e.ts)))
                dev = e.pid if args.device is unset else args.device
                strm = e.tid if args.stream is unset else args.stream
                for k, v in (("start_ns", ts), ("dur_ns", dur), ("corr_id", corr), ("bytes", args.bytes),
                             ("src_kind", src), ("dst_kind", dst), ("device_id", dev if args.device is unset and isinstance(dev, int)
                                                         else 0 if args.device is unset else kv.device(dev, e.pid, self.dropped)),
                             ("stream", strm if isinstance(strm, int) else None), ("name", name)):
                    gpu[k].append(v)
            elif cat in API_CATS:
                for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name),
                             ("corr_id", (e.args or no_args).correlation), ("pid", _int(e.pid)), ("tid", _int(e.tid))):
                    api[k].append(v)
            elif cat in RANGE_CATS or (cat in CPU_CATS and STEP.match(name)) or \
                    (cat == "Operator" and RECORD_FUNCTION_2021.match(name)):
                for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name), ("pid", _int(e.pid)),
                             ("tid", _int(e.tid))):
                    rng[k].append(v)
            elif cat in CPU_CATS:
                self.n_cpu += 1
                out = py if cat == "python_function" else cpu     # Python frames (with_stack) apart
                for k, v in (("start_ns", ts), ("dur_ns", dur), ("name", name), ("pid", _int(e.pid)),
                             ("tid", _int(e.tid))):
                    out[k].append(v)
        self.n_gpu += len(gpu["name"])
        for key, cols, schema in (("gpu", gpu, GPU), ("api", api, API), ("rng", rng, RNG), ("cpu", cpu, CPU),
                                  ("py", py, CPU)):
            if cols["name"]:
                self.frames[key].append(kv.frame(cols, schema, self.dropped))

    def _memory(self, e) -> None:
        """A ``[memory]`` event of a CUDA device (``Device Type`` 1) whose ``Total Reserved`` changed: the caching
        allocator took memory from the driver or gave it back (mem_usage: the change, in bytes)."""
        a = e.args
        if a is None or a.device_type != 1 or not isinstance(a.reserved, int) or not isinstance(a.device_id, int):
            return
        ts = kv.time_ns(e.ts, self.dropped, "events")
        last = self.reserved.get(a.device_id, 0)
        if ts is not None and a.reserved != last:
            self.reserved[a.device_id] = a.reserved
            self.mem.append((ts, a.device_id, a.reserved - last))

    def frame(self, key: str, schema: dict) -> pl.DataFrame:
        """One table over all pieces, in file order."""
        parts = self.frames.pop(key)
        return pl.concat(parts, rechunk=True) if parts else pl.DataFrame(schema=schema)


def read_kineto(path: str):
    """-> Part (kind ``kineto``). Raises InputError when the file is no readable trace."""
    from .profile import Part
    from .sqlite import size_summary, summary

    cols = [_Columns()]

    def restart() -> None:
        cols[0] = _Columns()
    doc, parser = kineto_decode.decode(path, lambda events: cols[0].add(events), restart)
    c = cols[0]
    base = os.path.basename(path)
    g, a = c.frame("gpu", GPU), c.frame("api", API)
    if c.no_corr:                    # 2021-era kernels: the correlation id is the flow's id
        corr = g["corr_id"].to_list()
        for row, key in c.no_corr:
            corr[row] = c.flows.get(key)
        g = g.with_columns(kv.frame({"corr_id": corr}, {"corr_id": pl.Int64}, c.dropped)["corr_id"])
    c.flows.clear()
    g, a = kv.dedupe(g, a, c.dropped)

    rocm = _is_rocm(doc, a["name"])
    part = Part(kind="kineto", path=path, version=_version(doc, rocm))
    part.meta.update(_meta(doc, rocm, g["name"]))
    part.warnings += kv.notes(base, c.dropped)
    main_pid = _main_pid(a["pid"])
    g = g.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
                       pl.lit(main_pid, pl.Int64).alias("pid")).sort("start_ns", maintain_order=True)
    a = a.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns")).sort("start_ns", maintain_order=True)
    part.tables["gpu_trace"] = g
    part.tables["kern_sum"] = summary(g.filter(~pl.col("name").str.starts_with("[CUDA ")), "dur_ns")
    mem = g.filter(pl.col("name").str.starts_with("[CUDA mem"))
    part.tables["mem_time_sum"] = summary(mem, "dur_ns")
    part.tables["mem_size_sum"] = size_summary(mem)
    if a.height or not g.height:
        part.tables["api_trace"] = a
        part.tables["api_sum"] = summary(a, "dur_ns")
    else:
        part.warnings.append(Note("load.kineto_no_runtime", {"file": base}))
    cpu = c.frame("cpu", CPU)
    if cpu.height:
        part.tables["cpu_trace"] = cpu.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns")).sort(
            "start_ns", maintain_order=True)
    py = c.frame("py", CPU)
    if py.height:
        part.tables["py_trace"] = py.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
                                                  pl.col("name").cast(pl.Categorical))
    _memory_tables(part, c.mem, doc)
    rng = c.frame("rng", RNG)
    if rng.height:
        n = _ranges(rng)
        part.tables["nvtx_trace"] = n
        part.tables["nvtx_sum"] = summary(n, "dur_ns", style=True)
    if g.height:
        joined = g.filter(pl.col("corr_id").is_not_null() & ~pl.col("name").str.starts_with("[CUDA "))
        launched = joined.join(a.select("corr_id").unique(), on="corr_id", how="semi").height
        part.meta["kineto"]["kernels_joined_to_launch"] = launched
    part.meta["kineto"].update(flows=c.n_flows, cpu_ops=c.n_cpu, ranges=rng.height, parser=parser)
    if part.meta["kineto"].get("rank") is not None:
        part.meta["processes"] = [{"pid": main_pid, "name": f"rank {part.meta['kineto']['rank']}"}]
    return part


def _memory_tables(part, mem: list, doc: dict) -> None:
    """``mem_usage`` and ``device_memory`` (load/sqlite/memory.py's tables) from a trace recorded with
    ``profile_memory=True``: the level is the caching allocator's reserve (what it holds of the driver's memory),
    each GPU's size ``deviceProperties[].totalGlobalMem``."""
    props = doc.get("deviceProperties")
    sizes = [(p.get("id", i), p.get("totalGlobalMem")) for i, p in enumerate(props if isinstance(props, list) else [])
             if isinstance(p, dict)]
    sizes = [(d, t) for d, t in sizes if isinstance(d, int) and isinstance(t, int) and t > 0]
    if not mem or not sizes:
        return
    usage = pl.DataFrame(mem, schema={"start_ns": pl.Int64, "device_id": pl.Int64, "delta": pl.Int64}, orient="row")
    part.tables["mem_usage"] = usage.sort("start_ns", maintain_order=True)
    part.tables["device_memory"] = pl.DataFrame(sizes, schema={"device_id": pl.Int64, "total_bytes": pl.Int64},
                                                orient="row").unique("device_id", keep="first", maintain_order=True)


def _int(v) -> int | None:
    return v if isinstance(v, int) else None


def _main_pid(pids: pl.Series) -> int | None:
    """The pid with the most runtime calls (on a tie, the one seen first)."""
    counts = (pl.DataFrame({"pid": pids}).with_row_index("first").drop_nulls("pid")
              .group_by("pid").agg(pl.len(), pl.col("first").min()))
    if not counts.height:
        return None
    return counts.sort(["len", "first"], descending=[True, False])["pid"][0]


def _ranges(n: pl.DataFrame) -> pl.DataFrame:
    """user_annotation ranges with their nesting depth on their thread (0 = top), as push/pop NVTX."""
    from .sanity import pair_key
    from .sqlite import NVTX_PUSHPOP, levels
    n = n.sort("start_ns", maintain_order=True).with_row_index("range_id", offset=1).with_columns(
        pl.col("range_id").cast(pl.Int64), (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        pl.lit(NVTX_PUSHPOP).alias("event"), pl.lit("PushPop").alias("style"),
        pair_key(pl.col("pid").fill_null(0), pl.col("tid").fill_null(0)).alias("gtid"))
    n = n.join(levels(n), on="range_id", how="left", maintain_order="left")
    return n.select("start_ns", "end_ns", "dur_ns", "name", "style", "pid", "tid", "level", "range_id")


def _is_rocm(doc: dict, api_names: pl.Series) -> bool:
    """ROCm: the header says so (``hip_runtime_version``, ``roctracer_version``), or, in traces whose header
    names no runtime (HTA's MI250 sample), the runtime calls are HIP's."""
    if doc.get("hip_runtime_version") or doc.get("roctracer_version"):
        return True
    if doc.get("cuda_runtime_version") or doc.get("cupti_version"):
        return False
    hip = sum(1 for n in api_names.head(5000) if n.startswith("hip"))
    return hip > 0 and hip * 2 >= min(len(api_names), 5000)


_ISA = re.compile(r"_ISA(\d{2,4}[a-z]?)_")


def _arch(kernel_names: pl.Series) -> str | None:
    """The gfx target hipBLASLt / Tensile names in its kernels (``Cijk_..._ISA90a_...`` -> ``gfx90a``)."""
    for n in kernel_names.head(200_000):
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


def _meta(doc: dict, rocm: bool = False, kernel_names: pl.Series | None = None) -> dict:
    meta: dict = {}
    props = doc.get("deviceProperties")
    arch = _arch(kernel_names) if rocm and kernel_names is not None else None
    if isinstance(props, list):
        gpus = []
        for i, p in enumerate(props):
            if not isinstance(p, dict):
                continue
            name = str(p.get("name") or "").strip()
            if rocm and arch and arch not in name:   # MI250 traces say only 'AMD Radeon Graphics'
                name = f"{name or 'AMD GPU'} ({arch})"
            gid = p.get("id", i)
            gid = gid if isinstance(gid, int) and not isinstance(gid, bool) and 0 <= gid < 1 << 31 else i
            gpu = {"id": gid, "name": name or "unknown"}
            major, minor = p.get("computeMajor"), p.get("computeMinor")
            if not rocm and isinstance(major, int) and not isinstance(major, bool) and 0 < major < 100:
                gpu["cc"] = f"{major}.{minor if isinstance(minor, int) and not isinstance(minor, bool) else 0}"
            gpus.append(gpu)
        if gpus:
            meta["gpus"] = gpus
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    meta["kineto"] = {"rank": info.get("rank"), "world_size": info.get("world_size"),
                      "backend": info.get("backend"), "rocm": rocm}
    meta["gpu_vendor"] = "amd" if rocm else "nvidia"
    if info.get("rank") is not None:
        meta["dist_rank"] = info.get("rank")
    return meta
