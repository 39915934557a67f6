"""Same-stream overlap (programmatic dependent launch) over the window: how many operations start
before their predecessor on the stream ends, by how much, and which kernels.

Not damage: on Hopper and later GPUs cuDNN's, cuBLAS's and CUTLASS's sm90 kernels launch with PDL
(CUDA C++ Programming Guide, "Programmatic Dependent Launch and Synchronization"), so the next kernel
of a stream starts while the previous one drains. Busy time is the union of intervals, so nothing is
counted twice; the facts let the report say once, as info, what the overlap is.
"""
from __future__ import annotations

from ..load import sanity
from .base import Context, in_window, pct
from .declare import fact, group, on_timeline


def compute(ctx: Context) -> None:
    fs, prof = ctx.fs, ctx.prof
    src = prof.source_name("gpu_trace")
    over = sanity.stream_overlaps(in_window(prof.tables["gpu_trace"], ctx.win))
    if over is None:
        fs.put("stream_overlap_count", 0, src)
        return
    fs.put("stream_overlap_count", over["count"], src)
    fs.put("stream_overlap_share_pct", pct(over["count"], over["ops"]), src)
    fs.put("stream_overlap_median_us", over["median_ns"] / 1e3, src)
    fs.put("stream_overlap_max_us", over["max_ns"] / 1e3, src)
    fs.tables["stream_overlap_kernels"] = over["top"]
    if over["top"]:
        name = over["top"][0]["name"] or ""
        fs.put("stream_overlap_top_kernel", name if len(name) <= 160 else name[:157] + "...", src)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("stream_overlap_count", "", "GPU operations in the window that start before the previous one on their stream ended (programmatic dependent launch; not damage)"),
    fact("stream_overlap_share_pct", "%", "stream_overlap_count as a share of the GPU operations in the window"),
    fact("stream_overlap_median_us", "us", "median time an overlapping operation starts before its predecessor on the stream ended"),
    fact("stream_overlap_max_us", "us", "the largest same-stream overlap in the window"),
    fact("stream_overlap_top_kernel", "", "the kernel that most often starts before its predecessor ended (name cut to 160 characters)"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("overlap", compute, on_timeline, reads=("input:gpu_trace",), puts=(FACTS, "table:stream_overlap_kernels")),
]
