"""Per-table clean-up after parsing: derived columns every loader (CSV, SQLite, console) shares.

- ``gpu_trace``: ``end_ns``, ``kind`` (kernel / memcpy / memset / graph), ``copy_kind`` (HtoD, DtoH, DtoD,
  PtoP, HtoH, ...; both the 2021-2023 and the 2024+ spellings), ``device_id`` (the GPU names are
  not repeated per row: load's meta ``gpus`` has them); rows with a missing
  or negative duration are dropped and counted.
- ``api_trace``: ``end_ns`` and ``base_name`` (``_vNNNN`` suffix removed).
- ``nvtx_trace``: ``name`` without the empty-domain prefix (2024+ writes ``:step``).
"""
from __future__ import annotations

import os
import re

import polars as pl

from ..notes import Note
from . import sanity, schema

_COPY_KINDS = {
    "host-to-device": "HtoD", "htod": "HtoD", "device-to-host": "DtoH", "dtoh": "DtoH",
    "device-to-device": "DtoD", "dtod": "DtoD", "peer-to-peer": "PtoP", "ptop": "PtoP",
    "host-to-host": "HtoH", "htoh": "HtoH", "unified host-to-device": "HtoD", "unified device-to-host": "DtoH",
    "unified device-to-device": "DtoD", "array-to-host": "DtoH", "host-to-array": "HtoD",
    "array-to-array": "DtoD", "array-to-device": "DtoD", "device-to-array": "DtoD",
}

_DTYPES = {"i64": pl.Int64, "f64": pl.Float64, "str": pl.String}


def empty_frame(table: str) -> pl.DataFrame:
    cols = schema.REQUIRED.get(table, {})
    return pl.DataFrame(schema={k: _DTYPES[v] for k, v in cols.items()})


def check_required(table: str, frame: pl.DataFrame, path: str) -> str | None:
    """Name of the first required column the frame lacks, or None."""
    for col in schema.REQUIRED.get(table, {}):
        if col not in frame.columns:
            return col
    return None


def copy_kind_expr(name_col: str = "name") -> pl.Expr:
    """``[CUDA memcpy Host-to-Device]`` / ``[CUDA memcpy HtoD]`` -> ``HtoD``."""
    inner = (pl.col(name_col).cast(pl.String).str.to_lowercase()
             .str.extract(r"memcpy\s+(.*?)\]?$", 1).str.strip_chars())
    return inner.replace_strict(_COPY_KINDS, default=None, return_dtype=pl.String)


# an Enum: every "kind == ..." test over a million operations compares small integers, not strings
OP_KINDS = pl.Enum(["kernel", "memcpy", "memset", "graph"])


def gpu_op_kind_expr(name_col: str = "name") -> pl.Expr:
    n = pl.col(name_col).cast(pl.String)
    return (pl.when(~n.str.starts_with("[")).then(pl.lit("kernel"))
            .when(n.str.starts_with("[CUDA memcpy") | n.str.starts_with("[CUDA Unified Memory memcpy"))
            .then(pl.lit("memcpy"))
            .when(n.str.starts_with("[CUDA memset"))
            .then(pl.lit("memset"))
            # a whole CUDA graph execution (SQLite CUPTI_ACTIVITY_KIND_GRAPH_TRACE, --cuda-graph-trace=graph)
            .when(n.str.starts_with("[CUDA graph"))
            .then(pl.lit("graph"))
            .otherwise(pl.lit("kernel")))


def device_ids(devices: list[str]) -> dict[str, int]:
    """``NVIDIA H200 (0)`` -> 0 (no ``(N)``: 0), for each distinct device of a CSV trace."""
    return {d: int(m.group(1)) if (m := re.search(r"\((\d+)\)\s*$", d)) else 0 for d in devices}


def device_names(devices: list[str]) -> dict[str, str]:
    """``NVIDIA H200 (0)`` -> ``NVIDIA H200``."""
    return {d: re.sub(r"\s*\(\d+\)\s*$", "", d) for d in devices}


VERSION_SUFFIX = r"_v\d+$"   # what an API name's base name drops (facts.names.base_expr: the same)


def _base_name(frame: pl.DataFrame) -> pl.Expr:
    """The API name without its ``_vNNNN`` suffix, as a category: worked out once per distinct name
    (a few hundred), not per call (millions)."""
    distinct = frame["name"].unique().drop_nulls()
    names = distinct.cast(pl.String).to_list()
    base = {n: re.sub(VERSION_SUFFIX, "", n) for n in names}
    if frame.schema["name"] == pl.Categorical and all(k == v for k, v in base.items()):
        return pl.col("name")   # no suffix to drop (the SQLite loader drops _vNNNN): the same codes, no copy
    if frame.schema["name"] == pl.Categorical and frame.height >= 100_000:
        # each call's base name gathered by its name's code from a table of the distinct names (a hash
        # lookup per call cost three times more: 20 M calls, 0.2 -> 0.07 s)
        codes = distinct.to_physical()
        table = pl.repeat(None, int(codes.max()) + 1, dtype=pl.Categorical, eager=True).scatter(
            codes, pl.Series([base[n] for n in names], dtype=pl.Categorical))
        return pl.lit(table.gather(frame["name"].to_physical()))
    return pl.col("name").replace_strict(base, default=None, return_dtype=pl.Categorical)


# id columns of the big traces held as 32-bit integers when every value fits (process and thread ids,
# devices, streams, CUPTI's correlation ids: at ten million API calls, 4 bytes fewer per id per row is 40 MB a column)
NARROW = {"gpu_trace": ("device_id", "stream", "pid", "corr_id"), "api_trace": ("pid", "tid", "corr_id"),
          "nvtx_trace": ("pid", "tid"),
          "osrt_trace": ("pid", "tid")}
_I32 = (-(1 << 31), (1 << 31) - 1)


def _narrow(frame: pl.DataFrame, cols: tuple[str, ...]) -> pl.DataFrame:
    wide = [c for c in cols if c in frame.columns and frame.schema[c] in (pl.Int64, pl.UInt64, pl.UInt32)]
    if not wide:
        return frame
    bounds = frame.select(*(pl.col(c).min().alias(f"{c}_lo") for c in wide),     # one pass, the columns
                          *(pl.col(c).max().alias(f"{c}_hi") for c in wide)).row(0, named=True)   # side by side
    casts = [pl.col(c).cast(pl.Int32) for c in wide if bounds[f"{c}_lo"] is None
             or (_I32[0] <= bounds[f"{c}_lo"] and bounds[f"{c}_hi"] <= _I32[1])]
    return frame.with_columns(casts) if casts else frame


def normalize(table: str, frame: pl.DataFrame, path: str) -> tuple[pl.DataFrame, list[Note]]:
    """``frame`` as every later step reads it (rows no time can be true of left out, codes for the
    repeated texts, the derived columns), and the warnings that say what was left out."""
    warnings: list[Note] = []
    base = os.path.basename(path)
    distinct = None   # the distinct names, when a step below has found them
    frame = sanity.time_range(frame, path, warnings)   # before any end = start + duration, sum or difference
    if table in ("gpu_trace", "api_trace"):
        frame = _timed_rows(frame, base, warnings)
    if table == "gpu_trace":
        frame, distinct = _gpu_trace(frame)
    if table == "api_trace":
        frame = _api_trace(frame)
    if table == "nvtx_trace":
        frame = _nvtx_trace(frame, base, warnings)
    if table in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum"):
        frame = frame.with_columns(pl.col("name").fill_null("").str.replace(r"^:", "").alias("name"))
    if table in ("api_sum",):
        frame = frame.with_columns(_base_name(frame).alias("base_name"))
    if table in ("kern_sum", "api_sum", "osrt_sum", "gpu_sum", "mem_time_sum", "nvtx_sum", "nvtx_pushpop_sum"):
        frame = _summary_rows(frame, base, warnings)
    if table in NARROW:
        frame = _narrow(frame, NARROW[table])
    if "name" in frame.columns and frame.height:
        _lost_characters(frame, distinct, base, warnings)
    sanity.totals(frame, path)   # no column whose sums would wrap around past 2**63 - 1
    return frame, warnings


def _timed_rows(frame: pl.DataFrame, base: str, warnings: list) -> pl.DataFrame:
    """A trace without the rows whose start or duration cannot be true (all of it when most are), and
    with its end column."""
    bad = frame.filter(pl.col("start_ns").is_null() | pl.col("dur_ns").is_null() | (pl.col("dur_ns") < 0))
    if bad.height:
        ex = bad.row(0, named=True)
        example = {"file": base, "bad": bad.height, "rows": frame.height, "start": ex["start_ns"], "dur": ex["dur_ns"]}
        if bad.height * 2 > frame.height:   # most rows impossible: the table, not a few rows, is broken
            warnings.append(Note("load.most_rows_bad", example))
            frame = frame.head(0)
        else:
            warnings.append(Note("load.rows_bad", example))
        frame = frame.filter(pl.col("start_ns").is_not_null() & pl.col("dur_ns").is_not_null()
                             & (pl.col("dur_ns") >= 0))
    long = frame.filter(sanity.too_long(frame))
    if long.height:   # before end = start + duration, which would overflow
        warnings.append(Note("load.rows_too_long", {"file": base, "n": long.height,
                                                    "years": int(long["dur_ns"].max()) / 3.15576e16}))
        frame = frame.filter(~sanity.too_long(frame))
    if "end_ns" not in frame.columns or bad.height:   # the SQLite export gives the end itself
        frame = frame.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"))
    if frame["name"].null_count():
        frame = frame.with_columns(pl.col("name").fill_null(""))
    return frame


def _gpu_trace(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series | None]:
    """The GPU trace with its kind, copy kind and device id columns; and its distinct names, when
    classifying them found them."""
    distinct = None
    # kernel names are long and few: keep them categorical, classify each distinct one once
    if frame.schema["name"] != pl.Categorical:
        frame = frame.with_columns(pl.col("name").cast(pl.Categorical))
    if frame.schema.get("kind") != OP_KINDS:   # (the SQLite loader knows it from the table each row came from)
        kinds = frame.select(pl.col("name").unique()).with_columns(gpu_op_kind_expr().cast(OP_KINDS).alias("kind"))
        distinct = kinds["name"]
        # every name is a kernel's but a few ([CUDA memcpy ...], [CUDA memset], [CUDA graph]): those few are
        # looked for, and the rest is a constant (a per-row mapping of ten million names cost 0.15 s)
        kind = pl.lit("kernel", OP_KINDS)
        for k in ("memcpy", "memset", "graph"):
            names = [n for n, v in kinds.iter_rows() if v == k]
            if names:
                kind = pl.when(pl.col("name").is_in(names)).then(pl.lit(k, OP_KINDS)).otherwise(kind)
        frame = frame.with_columns(kind.alias("kind"))
    # derived columns are computed on the few copy rows / distinct devices and scattered back:
    # joining or concatenating a million rows of long kernel names costs more than the trace read
    idx = frame.select(pl.arg_where(pl.col("kind") == "memcpy")).to_series()
    # (codes, not texts: a text column costs 16 bytes a row even where it is empty, as on every kernel's row)
    ck = pl.repeat(None, frame.height, dtype=pl.Categorical, eager=True).alias("copy_kind")
    if idx.len():
        ck = ck.scatter(idx, frame[idx].select(copy_kind_expr().cast(pl.Categorical)).to_series())
    frame = _device_ids(frame.with_columns(ck))
    if not frame["start_ns"].is_sorted():
        frame = frame.sort("start_ns", maintain_order=True)
    for col in ("corr_id", "stream", "bytes"):
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Int64 if col != "bytes" else pl.Float64).alias(col))
    for col in ("src_kind", "dst_kind"):   # codes, as copy_kind (every loader's frame alike)
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Categorical).alias(col))
        elif frame.schema[col] != pl.Categorical:
            frame = frame.with_columns(pl.col(col).cast(pl.Categorical))
    return frame, distinct


def _device_ids(frame: pl.DataFrame) -> pl.DataFrame:
    """The device id per row; the GPU names stay with the few distinct devices (load's meta "gpus"):
    a name column per row cost 0.12 s and 40-160 MB per million operations."""
    if "device_id" in frame.columns:  # a loader that knows the device ids (SQLite) gives them directly
        return frame
    if "device" in frame.columns:
        ids = device_ids(frame["device"].unique().drop_nulls().to_list())
        if len(ids) == 1 and not frame["device"].null_count():   # one GPU: a constant
            return frame.with_columns(pl.lit(next(iter(ids.values())), pl.Int64).alias("device_id"))
        return frame.with_columns(pl.col("device").replace_strict(ids, default=0, return_dtype=pl.Int64)
                                  .alias("device_id"))
    return frame.with_columns(pl.lit(0, pl.Int64).alias("device_id"))


def _api_trace(frame: pl.DataFrame) -> pl.DataFrame:
    if frame.schema["name"] != pl.Categorical:   # millions of calls, a few hundred names: a code per row
        frame = frame.with_columns(pl.col("name").cast(pl.Categorical))
    if "base_name" not in frame.columns:   # (the SQLite loader gives it)
        frame = frame.with_columns(_base_name(frame).alias("base_name"))
    for col in ("corr_id", "tid", "pid"):
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Int64).alias(col))
    return frame


def _nvtx_trace(frame: pl.DataFrame, base: str, warnings: list) -> pl.DataFrame:
    bad = frame.filter(pl.col("start_ns").is_null() | pl.col("end_ns").is_null()
                       | (pl.col("end_ns") < pl.col("start_ns")))
    if bad.height:
        warnings.append(Note("load.nvtx_bad", {"file": base, "n": bad.height}))
        frame = frame.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
                             & (pl.col("end_ns") >= pl.col("start_ns")))
    frame = frame.with_columns(pl.col("name").fill_null("").str.replace(r"^:", "").alias("name"))
    for col in ("tid", "level"):
        if col not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.Int64).alias(col))
    return frame


def _summary_rows(frame: pl.DataFrame, base: str, warnings: list) -> pl.DataFrame:
    good = pl.col("total_ns").is_not_null() & (pl.col("total_ns") >= 0)
    if "count" in frame.columns:    # a row cut inside its numbers has a time but no count
        good = good & pl.col("count").is_not_null() & (pl.col("count") >= 0)
    bad = frame.filter(~good)
    if bad.height:
        warnings.append(Note("load.summary_bad", {"file": base, "n": bad.height}))
        frame = frame.filter(good)
    return frame


def _lost_characters(frame: pl.DataFrame, distinct, base: str, warnings: list) -> None:
    names = (frame["name"].unique() if distinct is None else distinct).drop_nulls().cast(pl.String)
    lost = names.filter(names.str.contains("\ufffd", literal=True))
    if lost.len():   # bytes that were not UTF-8 (or a re-encoded file): the names are not what nsys wrote
        warnings.append(Note("load.replacement_chars", {"file": base, "n": lost.len(), "example": lost[0][:60]}))


def looks_like_api_names(frame: pl.DataFrame) -> bool:
    """cuda_api_sum and osrt_sum share one header; CUDA API names start with cu / cuda."""
    if frame.height == 0:
        return False
    share = frame.select(pl.col("name").str.starts_with("cu").mean()).item()
    return bool(share and share >= 0.5)
