"""The operator behind the blocking calls from nsys alone: where an export holds the CUDA calls' native call
chains (``--cudabacktrace=all``, read by load/sqlite/callchains.py into ``call_ops``) and no torch.profiler
CPU operators, each synchronisation and copy is named by the ATen operator its chain passes through
(``aten::item`` for ``.item()``, ``aten::nonzero`` / ``aten::index`` for a data-dependent size, ``aten::to``
for a copy). The same facts as facts/cpu_ops.py's from a Kineto trace (``sync_source_op`` and its
neighbours), weighed the same way: by the GPU idle time each call left."""
from __future__ import annotations

import polars as pl

from . import cpu_ops
from .base import Context
from .declare import group

SYNC_FACTS = [f for f in cpu_ops.FACTS if f.name.startswith("sync_source_")]


def applies(ctx: Context) -> bool:
    t, cpu = ctx.prof.tables.get("call_ops"), ctx.prof.tables.get("cpu_trace")
    return t is not None and t.height > 0 and (cpu is None or cpu.height == 0) and ctx.win.length_ns > 0


def compute(ctx: Context) -> None:
    ops = ctx.prof.tables["call_ops"].select(pl.col("corr_id").cast(pl.Int64), pl.col("pid").cast(pl.Int64),
                                             pl.col("op_outer").alias("outer"), pl.col("op_inner").alias("inner"))

    def held_of(calls: pl.DataFrame) -> pl.DataFrame:
        if "corr_id" not in calls.columns:
            return calls.with_columns(pl.lit(None, pl.String).alias("outer"), pl.lit(None, pl.String).alias("inner"))
        on = ["corr_id", "pid"] if "pid" in calls.columns else ["corr_id"]
        return calls.join(ops.unique(on, keep="first"), on=on, how="left", maintain_order="left")

    cpu_ops.sync_sources(ctx, ctx.prof.source_name("call_ops"), held_of)


FACTS: list = []    # it puts cpu_ops' sync_source_* facts (declared there, with call_ops among their inputs)

GROUPS = [
    group("call_ops", compute, applies,
          reads=("fact:iter_count", "input:api_trace", "input:call_ops", "work:sync_gaps"),
          puts=(SYNC_FACTS, "table:sync_sources")),
]
