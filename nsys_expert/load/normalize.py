"""Per-table clean-up after parsing: derived columns every loader (CSV, SQLite, console) shares.

- ``gpu_trace``: ``end_ns``, ``kind`` (kernel / memcpy / memset), ``copy_kind`` (HtoD, DtoH, DtoD,
  PtoP, HtoH, ...; both the 2021-2023 and the 2024+ spellings), ``device_id``; rows with a missing
  or negative duration are dropped and counted.
- ``api_trace``: ``end_ns`` and ``base_name`` (``_vNNNN`` suffix removed).
- ``nvtx_trace``: ``name`` without the empty-domain prefix (2024+ writes ``:step``).
"""
from __future__ import annotations

import os

import polars as pl

from . import schema

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
    inner = (pl.col(name_col).str.to_lowercase()
             .str.extract(r"memcpy\s+(.*?)\]?$", 1).str.strip_chars())
    return inner.replace_strict(_COPY_KINDS, default=None, return_dtype=pl.String)


def gpu_op_kind_expr(name_col: str = "name") -> pl.Expr:
    lower = pl.col(name_col).str.to_lowercase()
    return (pl.when(lower.str.starts_with("[cuda memcpy") | lower.str.starts_with("[cuda unified memory memcpy"))
            .then(pl.lit("memcpy"))
            .when(lower.str.starts_with("[cuda memset"))
            .then(pl.lit("memset"))
            .otherwise(pl.lit("kernel")))


def normalize(table: str, frame: pl.DataFrame, path: str) -> tuple[pl.DataFrame, list[str]]:
    warnings: list[str] = []
    base = os.path.basename(path)
    if table in ("gpu_trace", "api_trace"):
        bad = frame.filter(pl.col("start_ns").is_null() | pl.col("dur_ns").is_null() | (pl.col("dur_ns") < 0))
        if bad.height:
            warnings.append(f"{base}: {bad.height} of {frame.height} rows have a missing or negative start or "
                            f"duration and were left out")
            frame = frame.filter(pl.col("start_ns").is_not_null() & pl.col("dur_ns").is_not_null()
                                 & (pl.col("dur_ns") >= 0))
        frame = frame.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"))
        frame = frame.with_columns(pl.col("name").fill_null(""))
    if table == "gpu_trace":
        frame = frame.with_columns(gpu_op_kind_expr().alias("kind"))
        frame = frame.with_columns(
            pl.when(pl.col("kind") == "memcpy").then(copy_kind_expr()).otherwise(None).alias("copy_kind"))
        if "device" in frame.columns:
            frame = frame.with_columns(
                pl.col("device").str.extract(r"\((\d+)\)\s*$", 1).cast(pl.Int64, strict=False).fill_null(0)
                .alias("device_id"),
                pl.col("device").str.replace(r"\s*\(\d+\)\s*$", "").alias("device_name"))
        else:
            frame = frame.with_columns(pl.lit(0, pl.Int64).alias("device_id"), pl.lit(None, pl.String).alias("device_name"))
        for col in ("corr_id", "stream", "bytes"):
            if col not in frame.columns:
                frame = frame.with_columns(pl.lit(None, pl.Int64 if col != "bytes" else pl.Float64).alias(col))
        for col in ("src_kind", "dst_kind"):
            if col not in frame.columns:
                frame = frame.with_columns(pl.lit(None, pl.String).alias(col))
    if table == "api_trace":
        frame = frame.with_columns(pl.col("name").str.replace(r"_v\d+$", "").alias("base_name"))
        for col in ("corr_id", "tid", "pid"):
            if col not in frame.columns:
                frame = frame.with_columns(pl.lit(None, pl.Int64).alias(col))
    if table == "nvtx_trace":
        bad = frame.filter(pl.col("start_ns").is_null() | pl.col("end_ns").is_null()
                           | (pl.col("end_ns") < pl.col("start_ns")))
        if bad.height:
            warnings.append(f"{base}: {bad.height} NVTX ranges without a valid start/end were left out")
            frame = frame.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
                                 & (pl.col("end_ns") >= pl.col("start_ns")))
        frame = frame.with_columns(pl.col("name").fill_null("").str.replace(r"^:", "").alias("name"))
        for col in ("tid", "level"):
            if col not in frame.columns:
                frame = frame.with_columns(pl.lit(None, pl.Int64).alias(col))
    if table in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum"):
        frame = frame.with_columns(pl.col("name").fill_null("").str.replace(r"^:", "").alias("name"))
    if table in ("api_sum",):
        frame = frame.with_columns(pl.col("name").str.replace(r"_v\d+$", "").alias("base_name"))
    if table in ("kern_sum", "api_sum", "osrt_sum", "gpu_sum", "mem_time_sum", "nvtx_sum", "nvtx_pushpop_sum"):
        bad = frame.filter(pl.col("total_ns").is_null() | (pl.col("total_ns") < 0))
        if bad.height:
            warnings.append(f"{base}: {bad.height} rows without a valid total time were left out")
            frame = frame.filter(pl.col("total_ns").is_not_null() & (pl.col("total_ns") >= 0))
    return frame, warnings


def looks_like_api_names(frame: pl.DataFrame) -> bool:
    """cuda_api_sum and osrt_sum share one header; CUDA API names start with cu / cuda."""
    if frame.height == 0:
        return False
    share = frame.select(pl.col("name").str.starts_with("cu").mean()).item()
    return bool(share and share >= 0.5)
