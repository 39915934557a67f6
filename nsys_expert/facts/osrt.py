"""OS runtime calls (osrt_sum): time in file I/O, and in blocking calls over all threads."""
from __future__ import annotations

import polars as pl

from ..load.sqlite import OSRT_SLEEPS, OSRT_WAITS
from .base import Context
from .declare import fact, group

OSRT_IO = {"read", "pread", "pread64", "readv", "preadv", "fread", "open", "open64", "openat", "openat64",
           "fopen", "fopen64", "write", "pwrite", "pwrite64", "fwrite", "stat", "fstat", "lstat", "mmap", "mmap64"}


def compute(ctx: Context) -> None:
    fs, prof = ctx.fs, ctx.prof
    o = prof.tables.get("osrt_sum")
    if o is None:
        return
    io = o.filter(pl.col("name").is_in(sorted(OSRT_IO)))
    fs.put("osrt_io_ms", float(io["total_ns"].sum()) / 1e6, prof.source_name("osrt_sum"))
    if "osrt_trace" not in prof.tables:   # totals of every thread: a hint, not a measure of the step's wait
        w = o.filter(pl.col("name").is_in(sorted(OSRT_WAITS)))
        fs.put("osrt_blocking_ms_span", float(w["total_ns"].sum()) / 1e6, prof.source_name("osrt_sum"))
        z = o.filter(pl.col("name").is_in(sorted(OSRT_SLEEPS)))
        fs.put("osrt_sleep_ms_span", float(z["total_ns"].sum()) / 1e6, prof.source_name("osrt_sum"))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("osrt_sleep_ms", "ms", "OS runtime time in sleep calls (clock_nanosleep, nanosleep, usleep, sleep), all threads added up", ("osrt_sum",)),
    fact("osrt_blocking_ms", "ms", "OS runtime time in blocking calls (poll, futex, pthread_cond_wait, sem_wait, recv, read, ...), all threads added up", ("osrt_sum",)),
    fact("osrt_io_ms", "ms", "OS runtime time in file I/O calls (read, pread, fread, open, ...) over the whole profile", ("osrt_sum",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("osrt", compute, reads=("input:osrt_sum", "input:osrt_trace"), puts=(FACTS,)),
]
