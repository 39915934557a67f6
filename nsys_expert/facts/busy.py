"""GPU busy: the union of kernel, copy and memset intervals per device, over the window and the whole span."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct
from .declare import fact, group, on_timeline


def compute(ctx: Context) -> None:
    """GPU busy union per device over the window, and the utilization facts."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    gpu = prof.tables["gpu_trace"]
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    src = prof.source_name("gpu_trace")
    ops = timeline.ops_intervals(gpu)
    if win.span_start_ns is not None and win.span_end_ns is not None and win.span_start_ns <= s and win.span_end_ns >= e:
        # one union over the whole profile serves both the window (clipped) and the _span facts
        whole = timeline.busy_by_device(ops, win.span_start_ns, win.span_end_ns)
        fs.work.busy_span = whole
        busy = {d: intervals.clip(m, s, e) for d, m in whole.items()}
    else:
        busy = timeline.busy_by_device(ops, s, e)
    # copies and memsets are few: find them once, then every test below runs on those few rows
    other = ops.filter(~pl.col("kind").is_in(timeline.KERNEL_WORK) & (pl.col("e") > s) & (pl.col("s") < e))
    only_kernels = other.height == 0
    if only_kernels:   # only kernel work (kernels, graph executions) in the window: its union is the busy union
        kern = busy
    else:
        kern = timeline.busy_by_device(ops.filter((pl.col("e") > s) & (pl.col("s") < e)), s, e, timeline.KERNEL_WORK)
    copy = timeline.busy_by_device(other, s, e, ("memcpy",))
    empty = intervals.merge(ops.head(0), keep_first=timeline.carried(ops))
    for d in timeline.device_ids(ops):  # a device with no work in the window is idle, not absent
        busy.setdefault(d, empty)
    devs = sorted(busy)
    fs.put("gpu_count", len(devs), src)
    act = [intervals.total(busy[d]) for d in devs]
    fs.work.busy_total = sum(act)
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    fs.put("gpu_active_pct", pct(mean(act), wlen), src)
    fs.put("gpu_idle_pct", 100.0 - pct(mean(act), wlen), src)
    kact = act if only_kernels else [intervals.total(kern[d]) if d in kern else 0 for d in devs]
    fs.put("kernel_active_pct", pct(mean(kact), wlen), src)
    fs.put("memcpy_active_pct", pct(mean([intervals.total(copy[d]) if d in copy else 0 for d in devs]), wlen), src)
    fs.work.busy = busy  # used by later steps in this module, never reported
    fs.work.kern_busy = kern   # kernel-only unions: what hides a copy (memcpy.py)
    if len(busy) == 1:         # the one GPU's busy set, ready for the coverage of sync calls and iterations
        fs.work.busy_cover = intervals.prepare(busy[devs[0]])

def spans(c: Context) -> bool:
    """Whether the whole-span facts apply: a GPU trace with work, graphs visible, the span known."""
    gpu = c.prof.tables.get("gpu_trace")
    return gpu is not None and gpu.height > 0 and not c.graph_hidden and c.win.span_start_ns is not None


def compute_span(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    gpu = prof.tables["gpu_trace"]
    s, e = win.span_start_ns, win.span_end_ns
    if s is None or e is None or e <= s:
        return
    busy = fs.work.busy_span
    if busy is None:
        busy = timeline.busy_by_device(timeline.ops_intervals(gpu), s, e)
    act = [intervals.total(b) for b in busy.values()]
    if act:
        fs.put("gpu_active_pct_span", pct(sum(act) / len(act), e - s), prof.source_name("gpu_trace"))
        fs.put("kernel_count_span", int((gpu["kind"] == "kernel").sum()), prof.source_name("gpu_trace"))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gpu_count", "", "GPUs seen in the trace"),
    fact("gpu_active_pct", "%", "union of kernel, memcpy and memset intervals per device, as a share of the window (mean over devices)"),
    fact("gpu_idle_pct", "%", "100 - gpu_active_pct"),
    fact("kernel_active_pct", "%", "union of kernel intervals as a share of the window"),
    fact("memcpy_active_pct", "%", "union of memcpy intervals as a share of the window"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("busy", compute, on_timeline, reads=("input:gpu_trace",),
          puts=(FACTS, "work:busy", "work:busy_cover", "work:busy_span", "work:busy_total", "work:kern_busy")),
    group("busy_span", compute_span, spans, reads=("input:gpu_trace", "work:busy_span"),
          puts=("fact:gpu_active_pct_span", "fact:kernel_count_span")),
]
