"""Several GPUs in one job, two mistakes of the code that drives them (issue 54).

**One process driving several GPUs** (``torch.nn.DataParallel``): a process whose GPU work runs on two
or more devices, and PyTorch's DataParallel transfers every step: ``replicate`` broadcasts the
parameters from device 0 (``broadcast_coalesced``: NCCL Broadcast kernels), ``scatter`` / ``gather``
copy the inputs and outputs between device 0 and the others (peer copies), and the backward of the
broadcast reduces the gradients onto device 0 (``ReduceAddCoalesced``: NCCL Reduce kernels).
``DistributedDataParallel`` (one process per GPU) has none of them: the parameters stay on each device,
each process loads its own batch, and the gradients are all-reduced in buckets during the backward pass.

**Gradient accumulation without ``no_sync()``**: PyTorch runs the backward pass on the autograd engine's
own thread (one per device), so the kernels a backward pass launches come from a thread other than the
one that runs the steps; a *backward pass* here is a run of kernel launches by such a thread, ended by
the step thread launching again (the next forward, the optimizer). DDP all-reduces the gradients in
every backward pass unless it runs under ``model.no_sync()``: with k micro-batches per optimizer step,
k - 1 of those all-reduces are wasted.

Facts (from the GPU trace, and for the passes the CUDA API trace's launching threads and the steps):
- ``gpu_devices_per_process``: the most devices whose work one process launched; where it is 2 or more,
  ``dp_*``: the NCCL Broadcast / Reduce kernels and peer copies per iteration, and the time they take on
  the device that spends most in them, not overlapped by its compute kernels (``dp_transfer_exposed_pct``).
- where the window has NCCL all-reduce kernels (else ``allreduce_passes_per_opt_step`` is 0 and no more is
  put): ``backward_passes_per_opt_step``, ``allreduce_passes_per_opt_step``: per optimizer step (an optimizer
  range, ``Optimizer.step#...``; without one, an iteration), the backward passes and those that launch
  an NCCL all-reduce; ``allreduce_extra_exposed_pct``: the all-reduce time of all but the last such pass
  of each optimizer step that no compute kernel on the device overlaps, as a share of the window.
"""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, in_window, of_kinds, pct
from .names import matching
from .declare import fact, group, on_timeline

# DataParallel's collectives: broadcast (replicate) and reduce (the broadcast's backward), never AllReduce
# or ReduceScatter (``_Reduce`` followed by ``_`` or the end: ncclKernel_Reduce_RING_LL_Sum_float,
# ncclDevKernel_Reduce_Sum_f32_RING_LL; ncclKernel_Broadcast_RING_LL_Sum_int8_t)
DP_COLLECTIVE = r"(?i)nccl\w*?_(Broadcast|Reduce)(_|$)"
ALLREDUCE = r"(?i)nccl\w*AllReduce"
OPT_STEP_EXCLUDE = r"(?i)zero_?grad|clip_?grad|lr_?sched"
MIN_PASS_LAUNCHES = 4     # a backward pass launches many kernels; a stray launch of another thread is not one

_PW = ("gpu_trace", "api_trace", "nvtx_trace")
FACTS = [
    fact("gpu_devices_per_process", "", "the most GPUs whose work one process launched, put where it is 2 or more (one process drives several GPUs, as torch.nn.DataParallel does)"),
    fact("dp_broadcast_reduce_count", "", "NCCL Broadcast / Reduce kernels in the window launched by a process that drives several GPUs (DataParallel's replicate and its gradient reduce onto device 0); 0 where the window has none or every process drives one GPU"),
    fact("dp_broadcast_reduce_per_iter", "", "those NCCL Broadcast / Reduce kernels per iteration"),
    fact("dp_peer_copies_per_iter", "", "peer-to-peer copies per iteration of a process that drives several GPUs (DataParallel's scatter of the inputs and gather of the outputs)"),
    fact("dp_transfer_exposed_pct", "%", "time of those broadcasts, reduces and peer copies on the device that spends most in them, not overlapped by its compute kernels, as a share of the window"),
    fact("backward_passes_per_opt_step", "", "backward passes per optimizer step: runs of kernel launches by a thread other than the steps' (PyTorch's autograd engine), per optimizer range (per iteration without one)", _PW),
    fact("allreduce_passes_per_opt_step", "", "of those backward passes, the ones that launch an NCCL all-reduce, per optimizer step (more than 1: the gradients are all-reduced every micro-batch); 0 where the window has no all-reduce kernel", _PW),
    fact("allreduce_extra_exposed_pct", "%", "all-reduce kernel time of all but the last all-reducing backward pass of each optimizer step, not overlapped by compute kernels on its device, as a share of the window (what model.no_sync() on those micro-batches wins back)", _PW),
]


def compute(ctx: Context) -> None:
    gpu = ctx.prof.tables.get("gpu_trace")
    if gpu is None or "device_id" not in gpu.columns:
        return
    ops = in_window(gpu, ctx.win)
    if ops.height == 0:
        return
    _data_parallel(ctx, ops)
    _passes(ctx, ops)


def _n_iter(win) -> int | None:
    if win.iterations is None:
        return None
    n = win.iterations.height - win.skipped
    return n if n > 0 else None


def _process_of(ctx: Context, ops: pl.DataFrame) -> pl.DataFrame | None:
    """``ops`` with a ``proc`` column: the process that launched each (None where it cannot be told)."""
    if "pid" in ops.columns and ops["pid"].null_count() < ops.height:
        return ops.with_columns(pl.col("pid").alias("proc"))
    api = ctx.prof.tables.get("api_trace")
    if api is not None and "pid" in api.columns:
        pids = api["pid"].drop_nulls().unique()
        if pids.len() == 1:   # one process made every CUDA call: it launched every operation
            return ops.with_columns(pl.lit(pids[0]).alias("proc"))
    return None


def _data_parallel(ctx: Context, ops: pl.DataFrame) -> None:
    fs, win = ctx.fs, ctx.win
    src = ctx.prof.source_name("gpu_trace")
    names = pl.col("name").cast(pl.String)
    if matching(ops.select(pl.col("name").filter(pl.col("kind") == "kernel")), DP_COLLECTIVE).height == 0:   # one column
        fs.put("dp_broadcast_reduce_count", 0, src)   # no broadcast or reduce to tell apart: nothing to count
    work = _process_of(ctx, ops)
    if work is None:
        return
    per = work.filter(pl.col("proc").is_not_null()).group_by("proc").agg(pl.col("device_id").n_unique().alias("n"))
    most = int(per["n"].max()) if per.height else 0
    if most < 2:
        fs.put("dp_broadcast_reduce_count", 0, src)
        return
    fs.put("gpu_devices_per_process", most, src)
    procs = per.filter(pl.col("n") >= 2)["proc"].implode()
    mine = work.filter(pl.col("proc").is_in(procs))
    coll = matching(mine.filter(pl.col("kind") == "kernel"), DP_COLLECTIVE)
    peer = mine.filter((pl.col("kind") == "memcpy") & (pl.col("copy_kind") == "PtoP")) \
        if "copy_kind" in mine.columns else mine.clear()
    fs.put("dp_broadcast_reduce_count", coll.height, src)
    n_it = _n_iter(win)
    if n_it:
        fs.put("dp_broadcast_reduce_per_iter", coll.height / n_it, src)
        fs.put("dp_peer_copies_per_iter", peer.height / n_it, src)
    transfers = pl.concat([coll.select("start_ns", "end_ns", "device_id"), peer.select("start_ns", "end_ns", "device_id")])
    kern = of_kinds(mine, timeline.KERNEL_WORK)
    compute = kern.join(matching(kern, r"(?i)nccl").select("name").unique(), on="name", how="anti")
    worst = max(_exposed_by_device(transfers, compute, win).values(), default=0)
    fs.put("dp_transfer_exposed_pct", pct(worst, win.length_ns) or 0.0, src)


def _exposed_by_device(work: pl.DataFrame, compute: pl.DataFrame, win) -> dict:
    """Per device: the time of ``work`` (start_ns, end_ns, device_id) in the window with no ``compute`` beside it."""
    def union(df):
        return intervals.clip(intervals.merge(df.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))),
                              win.start_ns, win.end_ns)
    out = {}
    for (dev,), part in work.partition_by("device_id", as_dict=True).items():
        w_iv, c_iv = union(part), union(compute.filter(pl.col("device_id") == dev))
        cov = int(intervals.coverage(w_iv, c_iv).sum()) if w_iv.height and c_iv.height else 0
        out[dev] = intervals.total(w_iv) - cov
    return out


def _step_thread(ctx: Context, launches: pl.DataFrame) -> int | None:
    """The thread that runs the steps: the one that opened the iteration ranges, else that launched first."""
    win = ctx.win
    nv = ctx.prof.tables.get("nvtx_trace")
    if win.iterations is not None and nv is not None and "tid" in nv.columns and "host_s" in win.iterations.columns:
        starts = win.iterations["host_s"].implode()
        t = nv.filter(pl.col("start_ns").is_in(starts))["tid"].drop_nulls()
        if t.len():
            return int(t.mode().sort()[0])
    return int(launches["tid"][0]) if launches.height else None


def _passes(ctx: Context, ops: pl.DataFrame) -> None:
    fs, win = ctx.fs, ctx.win
    if matching(of_kinds(ops, timeline.KERNEL_WORK), ALLREDUCE).height == 0:
        # no all-reduce kernel in the window: none per micro-batch either
        fs.put("allreduce_passes_per_opt_step", 0.0, ctx.prof.source_name("gpu_trace"))
        return
    api = ctx.prof.tables.get("api_trace")
    n_it = _n_iter(win)
    if api is None or not n_it or not win.source.startswith("nvtx:") or not {"corr_id", "tid"} <= set(api.columns) \
            or "corr_id" not in ops.columns:
        return
    kern = of_kinds(ops, timeline.KERNEL_WORK).filter(pl.col("corr_id").is_not_null())
    keys = ["corr_id"] + (["pid"] if "pid" in kern.columns and "pid" in api.columns
                          and api["pid"].drop_nulls().n_unique() > 1 else [])
    calls = api.filter((pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns)) \
        .select(*keys, pl.col("start_ns").alias("launch"), "tid").unique(keys, keep="first")
    k = kern.select(*keys, "start_ns", "end_ns", "device_id",
                    pl.col("name").cast(pl.String).str.contains(ALLREDUCE).alias("ar")) \
        .join(calls, on=keys, how="inner").sort("launch")
    if k.height == 0:
        return
    main = _step_thread(ctx, k)
    if main is None:
        return
    # runs of launches by other threads, each ended by the step thread's next launch
    k = k.with_columns((pl.col("tid") != main).alias("other"))
    k = k.with_columns((pl.col("other") != pl.col("other").shift(1)).fill_null(True).cum_sum().alias("run"))
    runs = k.filter(pl.col("other")).group_by("run").agg(pl.len().alias("n"), pl.col("launch").min().alias("t0"),
                                                          pl.col("ar").any().alias("ar")) \
        .filter(pl.col("n") >= MIN_PASS_LAUNCHES).sort("t0")
    ends, n_opt = _opt_steps(ctx, n_it)
    src = ctx.prof.source_name("api_trace") or ctx.prof.source_name("gpu_trace")
    fs.put("backward_passes_per_opt_step", runs.height / n_opt, src)
    fs.put("allreduce_passes_per_opt_step", int(runs["ar"].sum()) / n_opt if runs.height else 0.0, src)
    # each pass belongs to the optimizer step that follows it; all but its last all-reducing pass are extra
    ar_runs = runs.filter(pl.col("ar")).with_columns(
        pl.Series("opt", ends.search_sorted(runs.filter(pl.col("ar"))["t0"], side="left")))
    extra = ar_runs.filter(pl.col("run") != pl.col("run").max().over("opt"))["run"].implode()
    ark = k.filter(pl.col("ar") & pl.col("run").is_in(extra))
    comp = of_kinds(ops, timeline.KERNEL_WORK).filter(~pl.col("name").cast(pl.String).str.contains(r"(?i)nccl"))
    exposed = sum(_exposed_by_device(ark, comp, win).values())
    fs.put("allreduce_extra_exposed_pct", pct(exposed, win.length_ns) or 0.0, src)


def _opt_steps(ctx: Context, n_it: int) -> tuple[pl.Series, int]:
    """The optimizer steps in the window: (the end of each, sorted; their count). The optimizer ranges
    (``Optimizer.step#...``, ``optimizer``; not zero_grad, gradient clipping or the LR scheduler), nested
    ones merged; without any, the window's iterations."""
    from .phases import classify_all, merged_table

    win = ctx.win
    nv = ctx.prof.tables.get("nvtx_trace")
    if nv is not None and {"name", "start_ns", "end_ns"} <= set(nv.columns):
        r = nv.filter(pl.col("end_ns").is_not_null() & (pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns))
        names = [n for n in r["name"].drop_nulls().unique().to_list()]
        table = merged_table(ctx.phases)
        opt = [n for n, p in zip(names, classify_all(names, table))
               if p and p["phase"] == "optimizer" and not pl.Series([n]).str.contains(OPT_STEP_EXCLUDE)[0]]
        if opt:
            iv = intervals.merge(r.filter(pl.col("name").is_in(opt)).select(pl.col("start_ns").alias("s"),
                                                                            pl.col("end_ns").alias("e")))
            if iv.height:
                return iv["e"].sort(), iv.height
    it = win.iterations.slice(win.skipped)
    return it["host_e"].sort(), n_it

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("multigpu", compute, on_timeline, reads=("input:api_trace", "input:gpu_trace", "input:nvtx_trace"), puts=(FACTS,)),
]
