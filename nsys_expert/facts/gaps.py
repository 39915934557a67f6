"""Idle gaps inside the window and, with the API trace, what the host did during each (their cause)."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import intervals, timeline
from .base import Context, pct, srcs
from .declare import fact, group, on_timeline


def compute(ctx: Context) -> None:
    """Idle gaps inside the window and, with the API trace, what the host did during each."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    api, nvtx = prof.tables.get("api_trace"), prof.tables.get("nvtx_trace")
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    src = prof.source_name("gpu_trace")
    busy = fs.work.busy
    devs = sorted(busy)
    host = fs.work.host
    data = timeline.data_ranges(nvtx, s, e)
    # per device, added up: a million gaps are reduced where they are made, never concatenated
    count, longest, short, long_ = 0, None, 0, 0
    by = {c: 0 for c in timeline.CAUSES}
    after_sync = 0
    sync_gaps = []          # the gaps a sync left (facts/cpu_ops.py names the operator behind each)
    cnt = {c: 0 for c in timeline.CAUSES}
    ln = pl.col("e") - pl.col("s")
    for d in devs:
        g = intervals.gaps(busy[d], s, e, carry=timeline.carried(busy[d]))
        if g.height == 0:
            continue
        n_, max_, short_, lng = g.select(
            (ln >= timeline.GAP_COUNT_MIN_NS).sum().alias("n"), ln.max().alias("max"),
            ln.filter(ln < timeline.SHORT_GAP_NS).sum().alias("short"),
            ln.filter(ln >= timeline.LONG_GAP_NS).sum().alias("long")).row(0)
        count, short, long_ = count + int(n_), short + int(short_ or 0), long_ + int(lng or 0)
        longest = max_ if longest is None else max(longest, max_)
        if host is not None:
            att = timeline.attribute_gaps(g, api, host, data)
            agg = att.group_by("cause").agg(pl.col("len").sum().alias("t"), pl.len().alias("n"))
            after_sync += timeline.after_sync_ns(att, host["sync"])
            if "cpu_trace" in prof.tables:
                sync_gaps.append(att.filter(pl.col("cause") == "sync").select("s", "e"))
            for c, t, k in agg.iter_rows():
                by[c] += t
                cnt[c] += k
    n = max(1, len(devs))
    if longest is not None:
        fs.put("gpu_idle_gap_count", count, src)
        fs.put("gpu_longest_gap_ms", float(longest) / 1e6, src)
        fs.put("gpu_idle_short_gaps_pct", pct(float(short) / n, wlen), src)
        fs.put("gpu_idle_long_gaps_pct", pct(float(long_) / n, wlen), src)
    else:
        for k in ("gpu_idle_gap_count", "gpu_longest_gap_ms", "gpu_idle_short_gaps_pct", "gpu_idle_long_gaps_pct"):
            fs.put(k, 0, src)
    if host is not None and devs:
        both = srcs(src, prof.source_name("api_trace"))
        for c in timeline.CAUSES:
            if c in ("wait", "sleep", "gil") and c not in host:   # no per-thread OS runtime trace: unknown, not zero
                fs.absent[f"gpu_idle_{c}_pct"] = Note("absent.needs", {"inputs": ("osrt_trace",)})
                continue
            fs.put(f"gpu_idle_{c}_pct", pct(by[c] / n, wlen),
                   srcs(both, prof.source_name("osrt_trace")) if c in ("wait", "sleep", "gil") else both)
        if by["sync"]:
            fs.put("gpu_idle_sync_host_after_pct", pct(after_sync / n, wlen), both)
        if sync_gaps:
            fs.work.sync_gaps = pl.concat(sync_gaps)
        fs.tables["idle_breakdown"] = [
            {"cause": c, "ms": by[c] / n / 1e6, "pct": pct(by[c] / n, wlen), "gaps": cnt[c]}
            for c in sorted(timeline.CAUSES, key=lambda c: -by[c]) if by[c] > 0]


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gpu_idle_gap_count", "", "idle gaps of 10 us or more inside the window"),
    fact("gpu_longest_gap_ms", "ms", "the longest idle gap inside the window"),
    fact("gpu_idle_short_gaps_pct", "%", "idle time in gaps shorter than 100 us, as a share of the window"),
    fact("gpu_idle_long_gaps_pct", "%", "idle time in gaps of 1 ms or more, as a share of the window"),
    fact("gpu_idle_launch_pct", "%", "idle time while the host was submitting work (short gaps, launch overhead)", ("api_trace",)),
    fact("gpu_idle_sync_pct", "%", "idle time after a blocking synchronisation call drained the GPU queue", ("api_trace",)),
    fact("gpu_idle_sync_host_after_pct", "%", "of the idle time after syncs, the part after the sync call had returned, before the host queued more work, as a share of the window", ("api_trace",)),
    fact("gpu_idle_memcpy_pct", "%", "idle time while the host was inside a blocking or pageable copy call", ("api_trace",)),
    fact("gpu_idle_data_pct", "%", "idle time inside NVTX ranges named like input work (data, load, batch, ...)", ("api_trace",)),
    fact("gpu_idle_alloc_pct", "%", "idle time while the host was inside an allocator call (cudaMalloc / cudaFree: cudaFree waits for the device)", ("api_trace",)),
    fact("gpu_idle_wait_pct", "%", "idle time while the launching thread was blocked in an OS call (poll, futex, pthread_cond_wait, recv, read, ...: waiting for data)", ("osrt_trace",)),
    fact("gpu_idle_sleep_pct", "%", "idle time while the launching threads were blocked and the host slept (clock_nanosleep, nanosleep: time.sleep)", ("osrt_trace",)),
    fact("gpu_idle_gil_pct", "%", "idle time while the launching threads were blocked and one waited for Python's GIL (pthread_cond_timedwait calls of the 5 ms switch interval)", ("osrt_trace",)),
    fact("gpu_idle_load_pct", "%", "idle time while the host loaded kernel code (cuLibraryLoadData, cuModuleLoad: CUDA lazy loading on first use)", ("api_trace",)),
    fact("gpu_idle_host_pct", "%", "idle time while the host was busy outside CUDA (Python, host work)", ("api_trace",)),
    fact("gpu_idle_other_pct", "%", "idle time although the next operation was already submitted (dependencies)", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("gaps", compute, on_timeline,
          reads=("input:api_trace", "input:cpu_trace", "input:nvtx_trace", "work:busy", "work:host"),
          puts=(FACTS, "table:idle_breakdown", "work:sync_gaps")),
]
