"""The PyTorch operator under each blocking CUDA call, from the call's native call chain (issue 55).

``nsys profile --cudabacktrace=all`` (the playbook's template B) records a native stack on CUDA API calls:
``CUPTI_ACTIVITY_KIND_RUNTIME.callchainId`` -> ``CUDA_CALLCHAINS (id, symbol, module, unresolved,
originalIP, stackDepth)``, one row per frame, depth 0 innermost, ``symbol`` a ``StringIds`` id. Read on a
real export (nsys 2025.3.2, schema 3.20.3, torch 2.11): a ``loss.item()`` chain runs
``cudaStreamSynchronize`` < ``at::native::copy_kernel_cuda`` < ... < ``at::_ops::_local_scalar_dense::call``
< ``at::_ops::item::call`` < ``THPVariable_item`` < the interpreter. Each ``at::_ops::<op>[_<overload>]::call``
frame is an ATen operator, the ones torch.profiler names ``aten::<op>``: the outermost is what the user's
code called (``aten::item``, ``aten::nonzero``, ``aten::index``, ``aten::to``), the innermost what made the call.

The Python frames of ``--python-backtrace=cuda`` and ``--python-sampling=true`` are not in the export: their
file and function names are left in ``StringIds`` with no table that points at them (checked on the same
export: no column of any table holds their ids). The user's file and line come from torch.profiler
(``with_stack=True``) only; from nsys the operator is what a stack can name.

Only the blocking calls are read (synchronisations and copies, by name): a template-B export of a real
model holds millions of frames, and the frames of these few thousand calls are what the facts use.
"""
from __future__ import annotations

import sqlite3

import polars as pl

from .reading import read_frame
from .tables import RUNTIME

CALLCHAINS = "CUDA_CALLCHAINS"
OP_FRAME = r"^at::_ops::([A-Za-z0-9_]+)::call\("
# overload names of the common operators that are not capitalised (``to_dtype_layout`` is aten::to)
LOWER_OVERLOADS = ("dtype_layout", "prim_dtype", "prim_device", "dtype", "device", "other", "out", "self", "int",
                   "dim", "Tensor", "Scalar", "List")


def read_call_ops(con: sqlite3.Connection, cols: dict) -> pl.DataFrame | None:
    """``corr_id``, ``pid``, ``op_outer``, ``op_inner`` (``aten::<name>``) of each blocking CUDA call whose
    chain holds an ATen operator; None where the export has no call chains."""
    if CALLCHAINS not in cols or RUNTIME not in cols or "callchainId" not in cols[RUNTIME] or "StringIds" not in cols:
        return None
    sql = f"""
        WITH names AS (SELECT id FROM StringIds WHERE value LIKE 'cuda%Synchronize%' OR value LIKE 'cu%Synchronize%'
                                                   OR value LIKE 'cuda%Memcpy%' OR value LIKE 'cuMemcpy%'),
             calls AS (SELECT correlationId AS corr, globalTid AS gtid, callchainId AS cc FROM {RUNTIME}
                       WHERE callchainId > 0 AND nameId IN (SELECT id FROM names))
        SELECT calls.corr, calls.gtid, c.stackDepth, s.value
        FROM calls JOIN {CALLCHAINS} c ON c.id = calls.cc JOIN StringIds s ON s.id = c.symbol
        WHERE s.value LIKE 'at::_ops::%::call(%'"""
    f = read_frame(con, sql, {"corr": pl.Int64, "gtid": pl.Int64, "depth": pl.Int64, "symbol": pl.String})
    if f.height == 0:
        return None
    f = f.with_columns(pl.col("symbol").str.extract(OP_FRAME, 1).alias("op")).filter(pl.col("op").is_not_null())
    f = f.with_columns(aten_name(pl.col("op")).alias("op"), ((pl.col("gtid") // (1 << 24)) % (1 << 24)).cast(pl.Int32).alias("pid"))
    out = f.sort("depth").group_by("corr", "pid", maintain_order=True).agg(
        pl.col("op").last().alias("op_outer"), pl.col("op").first().alias("op_inner"))
    return out.rename({"corr": "corr_id"})


def aten_name(op: pl.Expr) -> pl.Expr:
    """``at::_ops`` struct name -> torch.profiler's operator name: ``index_Tensor`` -> ``aten::index``,
    ``to_dtype_layout`` -> ``aten::to``, ``_local_scalar_dense`` -> ``aten::_local_scalar_dense``."""
    alts = "|".join(sorted(LOWER_OVERLOADS, key=len, reverse=True))
    base = op.str.replace(rf"_(?:{alts}|[A-Z][A-Za-z0-9_]*)$", "")
    # an operator whose name ends in ``_`` (in place: ``copy_``) keeps it; an overload's ``_`` does not
    return pl.concat_str(pl.lit("aten::"), pl.when(base.str.len_chars() > 0).then(base).otherwise(op))
