"""The fact group that says where in the user's code each cause sits (issue 55): for every selector of
facts/where_points.py, the located points grouped by user location (``FactSet.where``), from the richest
stacks the profile holds: torch.profiler's ``python_function`` frames (the nsys call-chain tables of
Python backtraces are not read yet). ``stacks_source`` names the stacks used; without any, the report says which
flag records them."""
from __future__ import annotations

import polars as pl

from . import where, where_points
from .cpu_ops import holders, thread_key
from .base import Context
from .declare import fact, group, has


def compute(ctx: Context) -> None:
    prof, fs = ctx.prof, ctx.fs
    api = prof.tables.get("api_trace")
    if api is None or not api.height or ctx.win.length_ns <= 0:
        return
    py = prof.tables.get("py_trace")      # nsys Python backtraces: not read yet (docs/where-in-the-code.md)
    if py is not None and py.height:
        frames, ops = where.user_frames_kineto(py), prof.tables.get("cpu_trace")
        locate, source = (lambda pts: where.locate_kineto(frames, _with_operator(pts, ops))), "torch.profiler:with_stack"
    else:
        return          # no stacks: the findings list no locations, and the report says how to record them
    fs.put("stacks_source", source, prof.source_name("api_trace"))
    lo, hi = ctx.win.start_ns, ctx.win.start_ns + ctx.win.length_ns
    for sel, pts in where_points.points(api, prof.tables.get("gpu_trace"), lo, hi).items():
        fs.where[sel] = where.summarize(locate(pts), source)


def _with_operator(pts: pl.DataFrame, ops: pl.DataFrame | None) -> pl.DataFrame:
    """The points with the outermost PyTorch operator that holds each call (``aten::item`` rather than the
    ``cudaStreamSynchronize`` it makes), where the trace has its CPU operators."""
    if ops is None or not ops.height or not pts.height:
        return pts
    calls = pts.with_row_index("cid").with_columns(thread_key(), pl.col("ts").alias("t0"), pl.col("ts").alias("t1"))
    held = holders(calls.select("cid", "thr", "t0", "t1"), ops.with_columns(thread_key()))
    return (pts.with_row_index("cid").join(held.select("cid", "outer"), on="cid", how="left")
            .with_columns(pl.coalesce("outer", "operator").alias("operator")).drop("cid", "outer"))


FACTS = [
    fact("stacks_source", "", "the stacks that locate causes in the user's code: nsys Python backtraces or torch.profiler's Python frames", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("locations", compute, has("api_trace"), reads=("input:api_trace", "input:cpu_trace", "input:py_trace"),
          puts=(FACTS, "where")),
]
