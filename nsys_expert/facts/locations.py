"""The fact group that says where in the user's code each cause sits (issue 55): for every selector of
facts/where_points.py, the located points grouped by user location (``FactSet.where``), from the richest
stacks the profile holds: nsys Python backtraces (the call-chain tables), else torch.profiler's
``python_function`` frames. ``stacks_source`` names the stacks used; without any, the report says which
flag records them."""
from __future__ import annotations

import polars as pl

from . import where, where_points
from .base import Context
from .declare import fact


def compute(ctx: Context) -> None:
    prof, fs = ctx.prof, ctx.fs
    api = prof.tables.get("api_trace")
    if api is None or not api.height or ctx.win.length_ns <= 0:
        return
    chains = prof.tables.get("callchains")
    py = prof.tables.get("py_trace")
    if chains is not None and chains.height and "callchain_id" in api.columns:
        from . import where_nsys
        locate, source = (lambda pts: where_nsys.locate(chains, pts)), "nsys:python-backtrace"
    elif py is not None and py.height:
        frames = where.user_frames_kineto(py)
        locate, source = (lambda pts: where.locate_kineto(frames, pts)), "torch.profiler:with_stack"
    else:
        return          # no stacks: the findings list no locations, and the report says how to record them
    fs.put("stacks_source", source, prof.source_name("api_trace"))
    lo, hi = ctx.win.start_ns, ctx.win.start_ns + ctx.win.length_ns
    for sel, pts in where_points.points(api, prof.tables.get("gpu_trace"), lo, hi).items():
        fs.where[sel] = where.summarize(locate(pts), source)


FACTS = [
    fact("stacks_source", "", "the stacks that locate causes in the user's code: nsys Python backtraces or torch.profiler's Python frames", ("api_trace",)),
]
