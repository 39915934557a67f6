"""The points of each cause that a finding may locate in the user's code (facts/where.py): which host
calls make a cause, and the weight of each (the time it accounts for).

- ``sync``: blocking calls (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, a synchronous
  ``cudaMemcpy``, ...), weighed by the time the host waited in them;
- ``readback``: the calls that copy device memory to the host, weighed by the call's time;
- ``pageable``: the calls whose copy runs to or from pageable host memory, weighed by the copy's time;
- ``alloc``: device allocations and frees (``cudaMalloc``, ``cudaFree``, ...), by their time;
- kernel classes (``elementwise``, ``softmax``, ``layout``, ``nchw``, ``simt_gemm``, ``kernels``):
  the launch calls of those kernels, weighed by the kernels' time.
"""
from __future__ import annotations

import polars as pl

from .names import (ALLOC_APIS, ELEMENTWISE_KERNEL, LAYOUT_KERNEL, NCHW_KERNEL, SIMT_GEMM, SOFTMAX_KERNEL,
                    SYNC_APIS, SYNC_MEM_APIS, api_base)

KERNEL_CLASSES = {"kernels": None, "elementwise": ELEMENTWISE_KERNEL, "softmax": SOFTMAX_KERNEL,
                  "layout": LAYOUT_KERNEL, "nchw": NCHW_KERNEL, "simt_gemm": SIMT_GEMM}
CALL_CLASSES = ("sync", "readback", "pageable", "alloc")
SELECTORS = CALL_CLASSES + tuple(KERNEL_CLASSES)
_COLS = ["pid", "tid", "ts", "weight", "operator", "corr_id"]


def _api(api: pl.DataFrame, lo: int, hi: int) -> pl.DataFrame:
    return (api.filter((pl.col("start_ns") >= lo) & (pl.col("start_ns") < hi))
            .with_columns(api_base(api).alias("base")))


def _points(df: pl.DataFrame, weight: pl.Expr) -> pl.DataFrame:
    cols = [pl.col("pid").cast(pl.Int64) if "pid" in df.columns else pl.lit(None, pl.Int64).alias("pid"),
            pl.col("tid").cast(pl.Int64) if "tid" in df.columns else pl.lit(None, pl.Int64).alias("tid"),
            pl.col("start_ns").alias("ts"), weight.cast(pl.Float64).alias("weight"),
            pl.col("base").cast(pl.String).alias("operator"),
            pl.col("corr_id").cast(pl.Int64) if "corr_id" in df.columns else pl.lit(None, pl.Int64).alias("corr_id")]
    return df.select(*cols)


def points(api: pl.DataFrame, gpu: pl.DataFrame | None, lo: int, hi: int) -> dict[str, pl.DataFrame]:
    """Selector -> its points in the window [lo, hi) (module docstring); a selector with none is left out."""
    a = _api(api, lo, hi)
    out = {}
    out["sync"] = _points(a.filter(pl.col("base").is_in(sorted(SYNC_APIS | SYNC_MEM_APIS))), pl.col("dur_ns"))
    out["alloc"] = _points(a.filter(pl.col("base").is_in(sorted(ALLOC_APIS))), pl.col("dur_ns"))
    if gpu is not None and gpu.height and {"corr_id", "kind", "copy_kind"} <= set(gpu.columns):
        g = gpu.filter(pl.col("corr_id").is_not_null()).with_columns(pl.col("name").cast(pl.String))
        copies = g.filter(pl.col("kind") == "memcpy")
        d2h = copies.filter(pl.col("copy_kind") == "DtoH").select("corr_id")
        out["readback"] = _points(a.join(d2h, on="corr_id", how="semi"), pl.col("dur_ns"))
        if "src_kind" in copies.columns:
            pg = copies.filter((pl.col("src_kind") == "Pageable") | (pl.col("dst_kind") == "Pageable"))
            out["pageable"] = _points(a.join(pg.select("corr_id", pl.col("dur_ns").alias("copy_ns")), on="corr_id"),
                                      pl.col("copy_ns"))
        kern = g.filter(pl.col("kind") == "kernel")
        for sel, rx in KERNEL_CLASSES.items():
            k = kern if rx is None else kern.filter(pl.col("name").str.contains(rx))
            if k.height:
                k = k.group_by("corr_id").agg(pl.col("dur_ns").sum().alias("kern_ns"))
                out[sel] = _points(a.join(k, on="corr_id"), pl.col("kern_ns"))
    return {k: v for k, v in out.items() if v.height}
