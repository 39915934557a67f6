"""Waiting is not working: what the launching thread was blocked in while the GPU idled.

When the GPU idles and the host issues no CUDA call, the host is either working (Python, host
code: host-bound), asleep (``time.sleep``: ``clock_nanosleep``; a polling loop, a rate limit), or
blocked (``poll`` / ``pthread_cond_wait`` / ``sem_wait`` / ``recv`` / ``read`` on a DataLoader queue, a
pipe, a socket or a file: waiting for data). The OS runtime trace (``OSRT_API``
in the SQLite export, ``--trace=osrt``) tells them apart, per thread. The launching threads are
those that issued the window's kernel launches (the main thread, and PyTorch's autograd thread during
backward); a gap is a wait only while all of them are blocked. Other threads (the CUDA event handler,
queue feeders, idle pool threads) block all the time and say nothing about the step. Without the per-thread trace, ``osrt_sum`` totals sum every thread and overstate the wait.
"""
from __future__ import annotations

import polars as pl

from ..load.sqlite import OSRT_SLEEPS
from . import intervals, timeline
from .base import Context, pct
from .names import KERNEL_LAUNCH_APIS, api_base
from .declare import fact, group, on_timeline


LAUNCH_SHARE = 0.05   # a thread that issues at least this share of the window's launches is a launching thread


def launching_threads(api: pl.DataFrame, start: int, end: int) -> list[int]:
    """The threads that launch the window's kernels, most launches first (PyTorch's backward pass
    launches from its autograd thread while the main thread waits for it in pthread_cond_wait)."""
    if "tid" not in api.columns:
        return []
    a = timeline.starting_in(api, start, end).select("tid", api_base(api).alias("_api"))   # two columns filtered
    a = a.filter(pl.col("_api").is_in(sorted(KERNEL_LAUNCH_APIS)))
    if a.height == 0:
        return []
    top = a.group_by("tid").len().sort(["len", "tid"], descending=[True, False])
    return [int(t) for t, n in top.iter_rows() if n >= LAUNCH_SHARE * a.height]


# CPython's GIL: a thread that wants it waits on a condition variable for the switch interval (5 ms,
# sys.getswitchinterval()), asks the holder to drop it, and waits again: pthread_cond_timedwait calls
# lasting the switch interval are its mark (Python's own locks and queues wait in sem_clockwait / poll)
GIL_CALL = "pthread_cond_timedwait"
SWITCH_NS = (4_500_000, 5_600_000)
GIL_SWITCH_SHARE = 0.5   # of a launching thread's time in GIL_CALL, in calls of the switch interval
GIL_MIN_CALLS = 20


def gil_waiters(calls: pl.DataFrame) -> dict[int, float]:
    """Launching threads whose ``pthread_cond_timedwait`` time is mostly calls of the switch interval:
    tid -> that share (%). ``calls``: the launching threads' OS runtime calls in the window."""
    c = calls.filter(pl.col("name") == GIL_CALL).with_columns(d=pl.col("end_ns") - pl.col("start_ns"))
    if c.height == 0:
        return {}
    per = c.group_by("tid").agg(pl.len().alias("n"), pl.col("d").sum().alias("t"),
                                pl.col("d").filter(pl.col("d").is_between(*SWITCH_NS)).sum().alias("sw"))
    return {int(t): 100.0 * sw / tot for t, n, tot, sw in per.iter_rows()
            if n >= GIL_MIN_CALLS and tot and sw >= GIL_SWITCH_SHARE * tot}


def wait_intervals(prof, start: int, end: int) -> tuple[dict[str, pl.DataFrame] | None, int | None]:
    """When every launching thread is blocked in an OS call, merged (``wait``), and of that: when one of
    them sleeps (``sleep``: ``time.sleep``, the program's own choice, not a wait for data) and when one
    of them waits for Python's GIL (``gil``: other Python threads hold the interpreter); and the main
    launching thread. (None, None) without the OS runtime trace. A thread that waits while another one
    launches is not waiting for data: only the times when all of them are blocked count."""
    osrt, api = prof.tables.get("osrt_trace"), prof.tables.get("api_trace")
    if osrt is None or api is None or api.height == 0:
        return None, None
    tids = launching_threads(api, start, end)
    if not tids:
        return None, None
    mine = osrt.filter(pl.col("tid").is_in(tids) & (pl.col("end_ns") > start) & (pl.col("start_ns") < end))
    # all of them blocked: inside every one's blocked calls
    blocked = intervals.common([_merged(mine.filter(pl.col("tid") == t), start, end) for t in tids], start, end)
    gil_tids = sorted(gil_waiters(mine))
    asleep = _merged(mine.filter(pl.col("name").is_in(sorted(OSRT_SLEEPS))), start, end)
    on_gil = _merged(mine.filter((pl.col("name") == GIL_CALL) & pl.col("tid").is_in(gil_tids)), start, end)
    out = {"wait": blocked, "sleep": intervals.common([blocked, asleep], start, end),
           "gil": intervals.common([blocked, on_gil], start, end)}
    return out, tids[0]


def _merged(calls: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    return intervals.clip(intervals.merge(calls.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))),
                          start, end)


def compute(ctx: Context) -> None:
    """Evidence for the wait cause: the calls, their time during GPU idle gaps."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    tid = fs.work.wait_tid
    busy = fs.work.busy
    if tid is None or not busy:
        return
    src = prof.source_name("osrt_trace")
    osrt = prof.tables["osrt_trace"]
    w = osrt.filter((pl.col("tid") == tid) & (pl.col("end_ns") > win.start_ns) & (pl.col("start_ns") < win.end_ns))
    b = busy[min(busy)] if len(busy) == 1 else intervals.merge(pl.concat(list(busy.values())).select("s", "e"))
    idle = intervals.gaps(b, win.start_ns, win.end_ns)
    rows = []
    for name, part in w.partition_by("name", as_dict=True).items():
        iv = _merged(part, win.start_ns, win.end_ns)
        in_idle = int(intervals.coverage(iv, idle).sum()) if idle.height and iv.height else 0
        rows.append({"name": name[0], "calls": part.height, "ms": intervals.total(iv) / 1e6, "idle_ms": in_idle / 1e6})
    rows.sort(key=lambda r: -r["idle_ms"])
    fs.tables["waits"] = rows[:8]
    idle_ns = intervals.total(idle)
    gil = gil_waiters(w).get(tid)   # (w: the main launching thread's calls)
    if gil is not None:
        fs.put("osrt_gil_calls", int(w.filter(pl.col("name") == GIL_CALL).height), src)
        fs.put("osrt_gil_switch_share_pct", gil, src)
    waits_ = [r for r in rows if r["name"] not in OSRT_SLEEPS and not (gil is not None and r["name"] == GIL_CALL)]
    if waits_ and idle_ns:
        top = waits_[0]
        fs.put("osrt_wait_top_call", top["name"], src)
        fs.put("osrt_wait_top_calls", top["calls"], src)
        fs.put("osrt_wait_top_share_of_idle_pct", pct(top["idle_ms"] * 1e6, idle_ns), src)
    sleeps = w.filter(pl.col("name").is_in(sorted(OSRT_SLEEPS)))
    if sleeps.height and idle_ns:
        top = next(r for r in rows if r["name"] in OSRT_SLEEPS)
        fs.put("osrt_sleep_top_call", top["name"], src)
        fs.put("osrt_sleep_calls", sleeps.height, src)
        fs.put("osrt_sleep_median_ms", float(sleeps["dur_ns"].median()) / 1e6, src)
        fs.put("osrt_sleep_share_of_idle_pct", pct(sum(r["idle_ms"] for r in rows if r["name"] in OSRT_SLEEPS) * 1e6, idle_ns), src)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("osrt_wait_top_call", "", "the blocking OS call the launching thread spent most GPU idle time in", ("osrt_trace",)),
    fact("osrt_wait_top_calls", "", "calls of it in the window", ("osrt_trace",)),
    fact("osrt_wait_top_share_of_idle_pct", "%", "share of the GPU idle time spent in it by the launching thread", ("osrt_trace",)),
    fact("osrt_sleep_top_call", "", "the sleep call the launching thread spent most GPU idle time in", ("osrt_trace",)),
    fact("osrt_sleep_calls", "", "sleep calls of the launching thread in the window", ("osrt_trace",)),
    fact("osrt_sleep_median_ms", "ms", "median length of those sleep calls", ("osrt_trace",)),
    fact("osrt_sleep_share_of_idle_pct", "%", "share of the GPU idle time the launching thread spent asleep", ("osrt_trace",)),
    fact("osrt_gil_calls", "", "pthread_cond_timedwait calls of the launching thread in the window, when they are GIL waits", ("osrt_trace",)),
    fact("osrt_gil_switch_share_pct", "%", "share of the launching thread's pthread_cond_timedwait time in calls of the GIL switch interval (4.5-5.6 ms)", ("osrt_trace",)),
    fact("osrt_wait_share_pct", "%", "OS runtime blocking time (poll, waits, sleeps) over the whole profile as a share of the profile span, summed over threads", ("osrt_sum",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("waits", compute, on_timeline, reads=("input:osrt_trace", "work:busy", "work:wait_tid"), puts=(FACTS, "table:waits")),
]
