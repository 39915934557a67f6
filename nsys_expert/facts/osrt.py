"""OS runtime calls (osrt_sum): time in file I/O."""
from __future__ import annotations

import polars as pl

from .base import Context

OSRT_IO = {"read", "pread", "pread64", "readv", "preadv", "fread", "open", "open64", "openat", "openat64",
           "fopen", "fopen64", "write", "pwrite", "pwrite64", "fwrite", "stat", "fstat", "lstat", "mmap", "mmap64"}
def compute(ctx: Context) -> None:
    fs, prof = ctx.fs, ctx.prof
    o = prof.tables.get("osrt_sum")
    if o is None:
        return
    io = o.filter(pl.col("name").is_in(sorted(OSRT_IO)))
    fs.put("osrt_io_ms", float(io["total_ns"].sum()) / 1e6, prof.source_name("osrt_sum"))
