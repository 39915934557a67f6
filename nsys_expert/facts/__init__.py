"""facts: turn the loaded frames into named numbers over the analysis window.

Public entry point: :func:`compute`. One module per fact group (busy, gaps, kernels, memcpy, NCCL,
API, iterations, NVTX, OS runtime, summaries, ...), each with one entry point of the same shape,
``compute(ctx: base.Context) -> None``: frames and window in, named facts with their source out
(``ctx.fs.put``), and a ``GROUPS`` declaration of what each reads and puts. ``facts/groups.py`` is the one
list of them; the order they run in (and which run side by side) is derived from the declarations
(``facts/order.py``). A new group is one new module plus one entry in that list.

A fact whose inputs are missing is absent (never zero); the reason lands in ``FactSet.absent`` so
the engine can list the rules it could not evaluate. Facts come from the richest source: a trace
(``cuda_gpu_trace``, ``cuda_api_trace``, ``nvtx_pushpop_trace``) over the window when present, the
summary reports otherwise (marked tier ``summary``). Whole-profile numbers are also kept with a
``_span`` suffix.
"""
from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

from ..notes import Note
from ..load import Profile
from . import graph, intervals, order, registry, timeline, waits
from . import groups as groups_mod
from . import window as window_mod
from .base import KERNEL_FACT_LIMIT, SMALL_KERNEL_NS, Context, FactSet, Options, RankShare, Work
from .kernels import with_kernel_classes

__all__ = ["compute", "FactSet", "Options", "Context", "GROUPS", "Work", "RankShare", "KERNEL_FACT_LIMIT",
           "SMALL_KERNEL_NS", "with_kernel_classes"]


# the groups, in the one list of groups (facts/groups.py); the order they run in is derived from what each
# declares it reads and puts (facts/order.py): waves, each after the one before, its groups side by side
GROUPS = groups_mod.GROUPS


# the groups of a wave run side by side, one per core (at most 4): each makes temporary frames as long
# as the trace, so more groups at once than cores only adds memory (at 5 M kernels: 300-600 MB)
FACT_WORKERS = max(1, min(4, os.cpu_count() or 1))


def compute(prof: Profile, opts: Options | None = None, runner=None) -> FactSet:
    """The facts of one run. ``runner(ctx, groups)`` runs the groups that apply (default :func:`run_groups`;
    ``tests/facts/test_group_order.py`` passes one that records what each reads and puts)."""
    opts = opts or Options()
    fs = FactSet()
    # the traces in start order (the usual case) say so once: the ~80 ``is_sorted`` tests of the groups
    # (each a slice of the trace by ``starting_in``) then read a flag instead of a pass over a million rows
    flagged = {k: intervals.flag_sorted(t, "start_ns") for k in ("gpu_trace", "api_trace")
               if (t := prof.tables.get(k)) is not None and t.height and "start_ns" in t.columns
               and not t["start_ns"].flags["SORTED_ASC"] and t["start_ns"].is_sorted()}
    if flagged:
        prof = dataclasses.replace(prof, tables={**prof.tables, **flagged})
    gpu = prof.tables.get("gpu_trace")
    api_t = prof.tables.get("api_trace")
    nvtx_t = prof.tables.get("nvtx_trace")
    passed_over: list = []
    found = (window_mod.find_iterations(nvtx_t, opts.iteration_range, passed_over) if nvtx_t is not None
             else (None, None))
    if opts.iteration_range and found[1] is None:
        if nvtx_t is not None and nvtx_t.height and "name" in nvtx_t.columns:   # a mistyped name: say which exist
            from ..errors import InputError

            counts = nvtx_t["name"].cast(str).value_counts(sort=True)
            names = [n for n, c in counts.iter_rows() if n and c >= 2][:8]
            raise InputError(f"--iteration-range {opts.iteration_range}: no NVTX range of that name repeats in the "
                             f"trace; the repeated ranges are {', '.join(names) if names else 'none'}",
                             hint="give one of them, or leave --iteration-range out")
        fs.warnings.append(Note("facts.iteration_range_unknown", {"range": opts.iteration_range}))
        found = window_mod.find_iterations(nvtx_t, None, passed_over) if nvtx_t is not None else (None, None)
    # what the host did (sync, copy and launch calls, merged over the whole trace; clipped to the window
    # below: the same intervals) is worked out beside the launch lookup, which leaves a core idle
    with ThreadPoolExecutor(max_workers=1) as pool:
        host_all = pool.submit(timeline.api_class_frames, api_t, gpu, None, None) \
            if api_t is not None and api_t.height else None
        prof, win, gpu = _window(fs, prof, opts, gpu, api_t, nvtx_t, found, passed_over)
        host_all = host_all.result() if host_all is not None else None
    return _rest(fs, prof, win, gpu, api_t, host_all, opts, runner or run_groups)


def _window(fs: FactSet, prof: Profile, opts: Options, gpu, api_t, nvtx_t, found, passed_over):
    """The launch times joined to the GPU trace, and the analysis window. -> (profile, window, GPU trace)"""
    # one correlation join serves every step below (window end, iteration ends, gap causes)
    launched = timeline.with_launch_times(gpu, api_t, found[1]["s"] if found[1] is not None else None)
    if launched is not gpu:
        prof = dataclasses.replace(prof, tables={**prof.tables, "gpu_trace": launched})
        gpu = launched
        fs.work.gpu = gpu   # the chart series (facts.series) read the launch times too
    src = prof.source_name
    win = window_mod.choose(gpu if gpu is not None and gpu.height else None, api_t, nvtx_t,
                            opts.user_window, opts.skip_iterations, found)
    if passed_over and win.source.startswith("nvtx:"):
        win.candidates = passed_over
        over = (Note("window.passed_over_asked", {"items": tuple(passed_over[:5]), "range": opts.iteration_range})
                if opts.iteration_range else Note("window.passed_over", {"items": tuple(passed_over[:5])}))
        win.reason = win.reason.with_fields(then=(*win.reason.fields.get("then", ()), over))
    fs.window = win
    fs.warnings += win.notes
    if win.start_ns is not None and win.end_ns is not None and win.end_ns <= win.start_ns:
        fs.warnings.append(Note("facts.window_empty", {"start": win.start_ns, "end": win.end_ns}))
    wlen = win.length_ns
    if wlen:
        fs.put("window_ms", wlen / 1e6, src("gpu_trace") or src("nvtx_trace"))
    steps = window_mod.profiler_step_count(nvtx_t)
    if steps:   # a torch.profiler trace: one step cannot be told from a stub (engine/gains.py's guard)
        fs.put("profiler_step_count", steps, src("nvtx_trace"))
    if win.span_start_ns is not None and win.start_ns is not None and win.source != "whole":
        fs.put("startup_s", (win.start_ns - win.span_start_ns) / 1e9, src("gpu_trace") or src("nvtx_trace"))
    return prof, win, gpu


def _rest(fs: FactSet, prof: Profile, win, gpu, api_t, host_all, opts: Options | None = None, runner=None) -> FactSet:
    """The fact groups, over the window."""
    wlen = win.length_ns
    ctx = Context(prof, win, fs, phases=tuple(getattr(opts, "phases", ()) or ()), declared=registry.RUN_FACTS)
    ctx.graph_hidden = graph.check(ctx)
    ctx.timeline_ok = gpu is not None and gpu.height > 0 and wlen > 0 and not ctx.graph_hidden
    if api_t is not None and api_t.height and wlen > 0:
        # what the host did in the window (sync, copy and launch calls, merged): the gap causes, the
        # launch share and the chart series all read it
        fs.work.host = {k: intervals.clip(v, win.start_ns, win.end_ns) for k, v in host_all.items()}
        blocked, tid = waits.wait_intervals(prof, win.start_ns, win.end_ns)
        if blocked is not None:
            fs.work.host.update(blocked)
            fs.work.wait_tid = tid
    (runner or run_groups)(ctx, [g for g in GROUPS if g.applies(ctx)])
    return fs


def run_groups(ctx: Context, todo: list) -> None:
    """The groups that apply, in the waves their declarations give (``order.waves``): one wave after the
    other, the groups of a wave side by side (none reads what another of the wave puts)."""
    for wave in order.waves(todo):
        if len(wave) == 1 or FACT_WORKERS == 1:
            for g in wave:
                g.run(ctx)
            continue
        with ThreadPoolExecutor(max_workers=FACT_WORKERS) as pool:
            for fut in [pool.submit(g.run, ctx) for g in wave]:
                fut.result()
