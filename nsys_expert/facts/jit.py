"""Kernel code loaded in the steady state: module loads (``cuModuleLoad*``, ``cuLibraryLoad*``) inside
the iterations after the warm-up ones. CUDA's lazy loading loads each library's kernels once, on first
use: loads that recur step after step are new code being made, a JIT compiler at work (torch.compile
recompiling for a new input shape: Dynamo, Inductor and Triton write and load a new module per graph;
nvrtc; CuPy / Numba kernels built on the fly)."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import timeline
from .base import Context, pct
from .names import MODULE_LOAD_APIS, api_base, matching
from .declare import fact, group, has


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    it = win.iterations
    if win.steady_iters < 2:   # no steady iterations to tell a one-time load from recurring ones
        for k in ("module_loads_steady", "module_loads_per_iter", "module_load_iters_pct", "module_load_ms_per_iter"):
            fs.absent[k] = Note("absent.needs_nvtx_steps")
        return
    api = prof.tables["api_trace"]
    src = prof.source_name("api_trace")
    steady = it.slice(win.skipped)
    s0, e0 = int(steady["s"].min()), int(steady["e"].max())
    loads = (timeline.starting_in(api, s0, e0).select("start_ns", "dur_ns", api_base(api).alias("api"))
             .filter(pl.col("api").is_in(sorted(MODULE_LOAD_APIS))))
    n_iter = steady.height
    if loads.height:
        starts = steady["s"].sort()
        idx = timeline.iteration_of(loads["start_ns"], starts)
        ends = steady.sort("s")["e"]
        inside = [(i >= 0 and t < ends[int(i)]) for i, t in zip(idx.to_list(), loads["start_ns"].to_list())]
        loads = loads.with_columns(pl.Series("i", idx)).filter(pl.Series(inside))
    iters_with = int(loads["i"].n_unique()) if loads.height else 0
    fs.put("module_loads_steady", int(loads.height), src)
    fs.put("module_loads_per_iter", loads.height / n_iter, src)
    fs.put("module_load_iters_pct", pct(iters_with, n_iter), src)
    fs.put("module_load_ms_per_iter", float(loads["dur_ns"].sum()) / 1e6 / n_iter if loads.height else 0.0, src)
    _compiled_share(ctx, s0, e0)


COMPILED_KERNEL = r"(?i)^triton_|^triton__|nvfuser|^kernel_cuda_fused|CudaCodeGen|^jit_|^cupy_|nvrtc"


def _compiled_share(ctx: Context, s0: int, e0: int) -> None:
    """Where kernel code is loaded in the steady state: the share of the steady iterations' kernels that a
    compiler made (Triton, nvFuser, nvrtc / CuPy). None: the loads are a library's kernels for new shapes."""
    gpu = ctx.prof.tables.get("gpu_trace")
    if gpu is None or "kind" not in gpu.columns:
        return
    # the name column alone filtered (a filter of the frame copied its every column first: ~16 at 1 M kernels)
    k = timeline.starting_in(gpu, s0, e0).select(pl.col("name").filter(pl.col("kind") == "kernel"))
    if k.height:
        n = matching(k, COMPILED_KERNEL).height
        ctx.fs.put("compiled_kernel_share_pct", pct(n, k.height), ctx.prof.source_name("gpu_trace"))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("compiled_kernel_share_pct", "%", "where kernel code is loaded in the steady iterations: the share of their kernels that a compiler made (Triton's triton_*, nvFuser, nvrtc / CuPy); 0: the loads are libraries loading kernels for new shapes, not a compiler", ("gpu_trace", "api_trace")),
    fact("module_loads_steady", "", "kernel-code loads (cuModuleLoad*, cuLibraryLoad*) inside the steady iterations, after the warm-up ones", ("api_trace",)),
    fact("module_loads_per_iter", "", "kernel-code loads per steady iteration", ("api_trace",)),
    fact("module_load_iters_pct", "%", "share of the steady iterations that load kernel code (recurring loads: a JIT compiler at work)", ("api_trace",)),
    fact("module_load_ms_per_iter", "ms", "time in kernel-code load calls per steady iteration", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("jit", compute, has("api_trace"), reads=("input:api_trace", "input:gpu_trace"), puts=(FACTS,)),
]
