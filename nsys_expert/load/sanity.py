"""What no real profile can hold, found after loading: said in a warning, and what it would falsify is
left out (never read as if it were true).

- One GPU operation longer than a day (a 292-year kernel is an int64 end time read as a duration):
  the row is left out (``normalize``).
- A time stamp past any clock (:func:`time_range`: before -1e18 ns or after 4e18 ns, the year 2096 as
  nanoseconds since 1970, the largest clock a real profile uses): the row is left out, or the file refused
  when most rows are; a column of times, sizes or counts whose total passes 4e18 (:func:`totals`) is
  refused. Within these bounds no sum, difference or cumulative sum of the int64 columns can overflow
  (Polars and NumPy wrap around without a word: a 292-year kernel once gave a replay error of -0.22 %).
- A kernel summary whose kernels are not the trace's (another run's file under this run's prefix):
  it is left out, and the kernel facts come from the trace.
- A GPU whose compute capability is below what its kernels were built for (:func:`gpu_claim`): its
  name and capability are left out.
- A name longer than 64 KiB (:func:`long_names`; the longest real kernel names are a few KiB): kept as
  its first 4,096 characters and a hash, so a 10 MB name does not fill every table of the report.

- An operation that lasts past the end of a later operation of its stream (:func:`stretched`): a stream
  runs its work in order, and a PDL kernel waits for its predecessor before it ends, so its end (or
  duration) is damaged: the operation is left out. No real profile has one (checked on every fixture
  and shared case, conv_pdl's 1,488 PDL overlaps included).

Operations that overlap on one CUDA stream are NOT damage: on Hopper and later GPUs kernels launched
with programmatic dependent launch (PDL: CUDA C++ Programming Guide, "Programmatic Dependent Launch
and Synchronization"; ``cudaLaunchAttributeProgrammaticStreamSerialization``; cuDNN's, cuBLAS's and
CUTLASS's sm90 kernels use it) start while their predecessor finishes its tail. The trace is kept;
:func:`stream_overlaps` measures the overlap for an info note, busy time is the union of intervals,
and a fact that needs a per-stream sequence reads :func:`sequenced` (an overlapped operation starts
when its predecessor ends). See ``docs/stream-overlap.md``.
"""
from __future__ import annotations

import os

import polars as pl

from ..errors import InputError
from ..notes import Note

MAX_OP_NS = 86_400 * 10**9          # one day
# time stamps a real profile can hold: nsys counts from its session's start (seconds to days), torch.profiler
# from 1970 (1.7e18 ns in 2024); 4e18 is the year 2096. Any two such stamps differ by at most 5e18 and add up to
# at most 8e18 < 2**63 - 1, and end = start + duration (at most a day) stays below 2**63 too.
MIN_TS_NS, MAX_TS_NS = -(10**18), 4 * 10**18
MAX_TOTAL = 4 * 10**18                # a column's total (times in ns, bytes, counts): its cumulative sums fit
TS_COLS = ("start_ns", "end_ns")
REDO = "export or record it again from the profiler (nsys stats / nsys export, torch.profiler), or leave it out"
# overlaps shorter than this are clock rounding, not counted
OVERLAP_SLACK_NS = 1_000


def too_long(frame: pl.DataFrame) -> pl.Expr:
    return pl.col("dur_ns") > MAX_OP_NS


def pair_key(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """One int64 per pair (device and stream, process and thread): ``a * 2**32 + b`` where ``a`` fits 31 bits and
    ``b`` 32 (every real id), else a 63-bit hash of the pair, negative so it never meets a packed key. The packing
    alone wraps around for an id past those bits (a pid of 2**40) and makes two threads one."""
    fits = a.is_between(0, (1 << 31) - 1) & b.is_between(0, (1 << 32) - 1)
    packed = a.cast(pl.Int64) * (1 << 32) + b.cast(pl.Int64)
    return pl.when(fits).then(packed).otherwise(-(pl.struct(a, b).hash(58) // 2).cast(pl.Int64) - 1)


def _stream_key() -> pl.Expr:
    return pair_key(pl.col("device_id").fill_null(0), pl.col("stream").fill_null(-1) + 1)


def time_range(frame: pl.DataFrame, path: str, warnings: list) -> pl.DataFrame:
    """``frame`` without the rows whose start or end lies past any clock (said in one warning); an
    InputError naming the file when most rows do (the table, not a few rows, is damaged). Runs before any
    ``end = start + duration``, sum or difference of the times (each would wrap around past 2**63 - 1)."""
    cols = [c for c in TS_COLS if c in frame.columns and frame.schema[c].is_integer()]
    if not cols or not frame.height:
        return frame
    out = pl.any_horizontal([pl.col(c).is_between(MIN_TS_NS, MAX_TS_NS).not_() for c in cols]).fill_null(False)
    n = int(frame.select(out.sum()).item())
    if not n:
        return frame
    ex = frame.filter(out).select(cols).row(0, named=True)
    worst = max((v for v in ex.values() if v is not None and not MIN_TS_NS <= v <= MAX_TS_NS), key=abs)
    base = os.path.basename(path)
    if 2 * n > frame.height:
        raise InputError(f"{n:,} of {frame.height:,} rows have a time stamp past any clock (e.g. {worst:,} ns, "
                         f"{worst / 3.15576e16:,.0f} years): damaged or edited; not read", path, REDO)
    warnings.append(Note("load.rows_out_of_range", {"file": base, "n": n, "rows": frame.height, "ns": worst,
                                                    "years": worst / 3.15576e16}))
    return frame.filter(~out)


def totals(frame: pl.DataFrame, path: str) -> None:
    """An InputError naming the file when a column of times (other than time stamps), sizes or counts adds up
    past MAX_TOTAL, or holds a value past it: no profile holds 126 years of work, and the sums and
    cumulative sums of such a column would wrap around. The totals are taken in floating point."""
    cols = [c for c, t in frame.schema.items() if t.is_integer() and c not in TS_COLS
            and (c.endswith(("_ns", "bytes")) or c in ("count", "instances"))]
    if not cols or not frame.height:
        return
    got = frame.select(pl.col(c).cast(pl.Float64).abs().sum() for c in cols).row(0, named=True)
    over = {c: v for c, v in got.items() if v is not None and v > MAX_TOTAL}
    if over:
        c, v = next(iter(over.items()))
        what = f" ({v / 3.15576e16:,.0f} years)" if c.endswith("_ns") else ""
        raise InputError(f"its '{c}' values add up to {v:.3g}{what}, past what any profile holds: damaged or "
                         f"edited (the sums would overflow 64-bit integers); not read", path, REDO)


def _prev_end(gpu: pl.DataFrame) -> tuple[pl.DataFrame, pl.Expr] | None:
    """The trace's stream columns with times, and the expression of the latest end of the earlier
    operations of the same stream; None when the trace names no streams."""
    if gpu.height < 2 or "stream" not in gpu.columns or gpu["stream"].null_count() == gpu.height:
        return None
    keys = [c for c in ("device_id", "stream") if c in gpu.columns]
    g = gpu.select(*keys, "start_ns", "end_ns", *(["name"] if "name" in gpu.columns else []))   # these columns only: a filter of the whole trace copies it all
    if "kind" in gpu.columns and (gpu["kind"] == "graph").any():
        # a whole CUDA graph execution spans the kernels it ran: not an overlap
        g = g.filter(gpu["kind"] != "graph")
    if not g["start_ns"].is_sorted():    # normalize sorts the trace by start; within a stream that order holds
        g = g.sort("start_ns")
    # the latest end of the earlier operations of the same stream (no sort by stream: `over` keeps
    # order); one device and one stream (the usual case) needs no grouping (10x faster on 1M ops)
    prev = pl.col("end_ns").cum_max().shift(1)
    one = all(g.select(pl.col(k).min() == pl.col(k).max()).item() for k in keys if g[k].null_count() < g.height)
    if not one:
        key = _stream_key() if "device_id" in keys else pl.col("stream")
        prev = prev.over(key)
    return g, prev


def stream_overlaps(gpu: pl.DataFrame) -> dict | None:
    """How many operations start before the previous one on their stream ended (PDL), by how much,
    and the kernels that do it most; None when none does."""
    found = _prev_end(gpu)
    if found is None:
        return None
    g, prev = found
    o = (g.with_columns(prev.alias("prev_end"))
          .filter(pl.col("start_ns") < pl.col("prev_end") - OVERLAP_SLACK_NS)
          .with_columns((pl.col("prev_end") - pl.col("start_ns")).alias("overlap_ns")))
    if o.height == 0:
        return None
    top = []
    if "name" in o.columns:
        top = (o.with_columns(pl.col("name").cast(pl.String)).group_by("name").agg(pl.len().alias("count")).sort(["count", "name"], descending=[True, False])
                .head(3).rows(named=True))
    ex = o.row(0, named=True)
    return {"count": o.height, "ops": g.height, "max_ns": int(o["overlap_ns"].max()),
            "median_ns": float(o["overlap_ns"].median()), "example": {k: ex[k] for k in ("stream", "start_ns", "overlap_ns")},
            "top": [{"name": r["name"], "count": int(r["count"])} for r in top]}


def stretched(tables: dict, warnings: list, source: str | None = None) -> None:
    """GPU operations that end after a later operation of the same stream has ended, left out of the trace
    with one warning. Chained PDL kernels start early but end after their predecessor (the dependent grid
    waits for it: ``cudaGridDependencySynchronize``), so they are kept; an operation that holds a later
    one entirely was stretched (a 900 ms kernel read as busy the whole window, busy 99.98 % for 13.7 %).
    Cost on a million operations: 0.3 ms when the ends are in order (one stream), else ~40 ms (four)."""
    gpu = tables.get("gpu_trace")
    if not isinstance(gpu, pl.DataFrame) or gpu.height < 2 or gpu["end_ns"].is_sorted():
        return   # sorted by start with the ends in order: no operation outlasts a later one
    found = _prev_end(gpu)
    if found is None:
        return
    g, prev = found
    if not g.select((prev > pl.col("end_ns") + OVERLAP_SLACK_NS).any()).item():
        return   # no operation ends before an earlier one of its stream
    # the containers: the earliest end among the later operations of their stream is before their own end
    nxt = pl.col("end_ns").reverse().cum_min().reverse().shift(-1)
    keys = [c for c in ("device_id", "stream") if c in g.columns]
    if len(keys) > 1 or g[keys[0]].n_unique() > 1:
        nxt = nxt.over(_stream_key() if "device_id" in keys else pl.col("stream"))
    bad = g.filter(pl.col("end_ns") > nxt + OVERLAP_SLACK_NS)
    ex = bad.row(0, named=True)
    drop = gpu.select(pl.struct("start_ns", "end_ns", *keys).is_in(bad.select(pl.struct("start_ns", "end_ns", *keys))
                                                                     .to_series().implode()))
    tables["gpu_trace"] = gpu.filter(~drop.to_series())
    warnings.append(Note("load.stretched_ops", {"file": os.path.basename(source or "gpu_trace"), "n": bad.height,
                                                "ops": gpu.height, "stream": ex.get("stream"), "start": ex["start_ns"],
                                                "ms": (ex["end_ns"] - ex["start_ns"]) / 1e6}))


def sequenced(gpu: pl.DataFrame) -> pl.Series:
    """Start times as a stream sequences its work: an operation that overlaps its predecessor on the
    same stream (PDL) starts when the predecessor ends. Same order and length as ``gpu``."""
    found = _prev_end(gpu)
    if found is None:
        return gpu["start_ns"]
    g, prev = found
    if g.height != gpu.height or not gpu["start_ns"].is_sorted():   # graph rows left out, or another order
        return gpu["start_ns"]
    return g.select(pl.max_horizontal("start_ns", prev.fill_null(pl.col("start_ns"))).alias("start_ns"))["start_ns"]


def summary_of_another_run(gpu: pl.DataFrame, kern_sum: pl.DataFrame) -> str | None:
    """Why a kernel summary cannot describe this trace, or None. Both come from one report, so their
    kernel names agree and (unless the trace was cut) their counts too; a summary whose names are
    mostly not in the trace, with another count, is another run's."""
    kernel = pl.col("kind") == "kernel" if "kind" in gpu.columns else pl.lit(True)
    n_k = int(gpu.select(kernel.sum()).item())   # counted and named without a copy of the trace's other columns
    if n_k == 0:
        return None
    names = gpu.select(pl.col("name").filter(kernel).unique())["name"]
    tn = set(names.cast(pl.String).to_list())   # unique first: 1 M casts cost 0.17 s
    sn = set(kern_sum["name"].cast(pl.String).to_list())
    common = len(tn & sn) / len(tn | sn)
    n_sum = int(kern_sum["count"].sum() or 0)
    if common < 0.5 and n_sum != n_k:
        return Note("phrase.other_run_why", {"common": common * 100, "summary": n_sum, "trace": n_k})
    return None


# the architecture a kernel was built for, in its name: 'sm80_xmma_gemm_...', 'sm90_xmma', 'cutlass_80_tensorop_...'
_ARCH_TAG = r"(?:^|[^A-Za-z0-9])(?:sm_?|cutlass_)([1-9]\d)[a-z]?_"


def gpu_claim(gpus: list[dict], g: pl.DataFrame, warnings: list[str]) -> None:
    """A GPU whose claimed compute capability is below what its kernels were built for (a trace saying K80,
    cc 3.7, whose cuBLAS kernels are sm80_*): the claim is false (edited, or another machine's header).
    Its name and capability are dropped, with a warning, so no advice rests on them."""
    if not any(x.get("cc") for x in gpus) or "name" not in g.columns:
        return
    names = g["name"].head(1_000_000).unique().head(100_000)
    tags = names.cast(pl.String).str.extract(_ARCH_TAG, 1).cast(pl.Int32, strict=False).drop_nulls()
    if not tags.len():
        return
    built = int(tags.max())
    for x in gpus:
        try:
            cc = round(float(x.get("cc")) * 10)
        except (TypeError, ValueError):
            continue
        if cc < built:
            warnings.append(Note("load.gpu_claim", {"id": x["id"], "name": x.get("name"), "cc": x["cc"],
                                                    "built": built}))
            x["name"] = "unknown"
            x.pop("cc", None)


NAME_MAX = 64 << 10
NAME_KEPT = 4096


def long_names(tables: dict, warnings: list[str]) -> None:
    """Names past NAME_MAX bytes in any table, cut to NAME_KEPT characters and a hash of the whole (the same
    name gives the same text in every table, two names stay two), with one warning per table."""
    for key, df in list(tables.items()):
        if not isinstance(df, pl.DataFrame) or "name" not in df.columns:
            continue
        col = df["name"]
        if col.dtype == pl.Categorical:
            lengths = col.unique().cast(pl.String).str.len_bytes()
        elif col.dtype == pl.String:
            lengths = col.str.len_bytes()
        else:
            continue
        longest = lengths.max()
        if not longest or longest <= NAME_MAX:
            continue
        text = pl.col("name").cast(pl.String)
        cut = (text.str.slice(0, NAME_KEPT) + pl.lit(" …[") + text.str.len_bytes().cast(pl.String)
               + pl.lit(" bytes, #") + text.hash(7).cast(pl.String).str.slice(0, 12) + pl.lit("]"))
        n = int((lengths > NAME_MAX).sum())
        tables[key] = df.with_columns(pl.when(text.str.len_bytes() > NAME_MAX).then(cut).otherwise(text)
                                      .cast(col.dtype).alias("name"))
        warnings.append(Note("load.long_names", {"table": key, "n": n, "kib": NAME_MAX >> 10, "longest": longest,
                                                 "kept": NAME_KEPT}))
