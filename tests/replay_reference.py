"""The event-by-event replay as it was before issue 47 (nsys_expert/facts/depmodel.py at 23736fc): the
reference that tests/facts/test_replay_columns.py checks the column-wise model and run against. Test code only."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import polars as pl

from nsys_expert.facts import timeline
from nsys_expert.facts.kernels import with_kernel_classes
from nsys_expert.facts.names import ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, api_base

SYNC_TOL_NS = timeline.SYNC_TOLERANCE_NS
LONG_CALL_NS = 50_000        # a launch call longer than this (and 10 launches) waited for the GPU


@dataclass
class Op:
    dur: float              # ns
    stream: int
    kind: str               # kernel | memcpy | memset | graph
    copy_kind: str | None   # HtoD | DtoH | DtoD ...
    bytes: float
    pageable: bool
    cls: str                # kernel class: elementwise, matmul, ... ('' for copies)
    fused: bool
    simt: bool
    name: str = ""
    lat: float | None = None  # measured: call start -> start, when the stream was idle at the call (else the model's)


@dataclass
class Item:
    kind: str               # W | L | S | O
    dur: float              # ns: the host's own time (for a blocking item, what it took when it did not wait)
    ops: list[int] = field(default_factory=list)
    block: bool = False
    wait: int = -1          # the operation a long call waited for (a full launch queue, a blocking allocator call)
    ret: float | None = None  # measured: a blocking copy call's end after its copy's end
    data: bool = False
    api: str = ""
    iteration: int = 0
    t: int = 0              # when the call began (trace clock)


@dataclass
class Model:
    items: list[Item]
    ops: list[Op]
    carry: dict[int, float]   # stream -> ns after t0 until which work launched before the slice occupies it
    latency: float            # launch latency (call start -> operation start on an idle stream), ns
    gap: float                # gap between operations queued back to back on one stream, ns
    ret: float                # return latency of a blocking call after the work it waited on, ns
    real_comp: list[float]    # measured: when each iteration's work was complete (ns after t0; host or GPU)
    iterations: int
    tid: int | None
    other_thread_gpu_pct: float
    source: str = ""


def build(gpu: pl.DataFrame, api: pl.DataFrame, nvtx: pl.DataFrame | None, t0: int, t1: int, t_end: int,
          iter_starts: list[int]) -> Model | None:
    """The model of the host slice [t0, t1) (whole iterations), measured until ``t_end`` (the end of the
    last iteration's work). None when the slice has no launching thread."""
    if "launch_s" not in gpu.columns:
        gpu = timeline.with_launch_times(gpu, api)
        if gpu is None or "launch_s" not in gpu.columns:
            return None
    # the slice's calls: one slice of the trace in start order (a filter scanned every call)
    calls = (timeline.starting_in(api, t0, t1)
                .select("start_ns", "end_ns", "corr_id", "tid", api_base(api).alias("api")).sort("start_ns"))
    if calls.height == 0:
        return None
    # (queued work may run long after its launch) each set filtered from the trace at once: the operations
    # that end after t0 were a copy of the rest of the trace (half of ten million rows, every column)
    ends_after = pl.col("end_ns") > t0
    launched = gpu.filter(ends_after & pl.col("launch_s").is_not_null() & (pl.col("launch_s") >= t0)
                          & (pl.col("launch_s") < t1))
    if launched.height == 0:
        return None
    by_tid = (launched.join(calls.select("corr_id", "tid"), on="corr_id", how="inner")
                      .group_by("tid").agg(pl.col("dur_ns").sum().alias("t")).sort("t", descending=True))
    if by_tid.height == 0:
        return None
    tid = by_tid["tid"][0]
    tot = float(by_tid["t"].sum()) or 1.0
    other = 100.0 * (1.0 - float(by_tid["t"][0]) / tot)
    mine = calls.filter(pl.col("tid") == tid) if "tid" in calls.columns else calls
    ops_df = with_kernel_classes(launched.join(mine.select("corr_id"), on="corr_id", how="semi").sort("start_ns"))
    pageable = pl.lit(False)
    if "src_kind" in ops_df.columns:
        pageable = (pl.col("src_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False)
                    | pl.col("dst_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False))
    ops_df = ops_df.with_columns(pageable.alias("_pg"))
    streams: dict = {}
    ops: list[Op] = []
    op_of_corr: dict[int, list[int]] = {}
    real_op: list[tuple[int, int, int]] = []   # (start, end, launch_s) of each op, for the calibration
    cols = ("corr_id", "start_ns", "end_ns", "dur_ns", "stream", "kind", "copy_kind", "bytes", "_pg", "kernel_class",
            "fused", "simt", "name", "launch_s")
    have = [c for c in cols if c in ops_df.columns]
    for r in ops_df.select(have).iter_rows(named=True):
        sid = streams.setdefault((r.get("stream"), ), len(streams))
        i = len(ops)
        ops.append(Op(float(r["dur_ns"]), sid, str(r["kind"]), r.get("copy_kind"), float(r.get("bytes") or 0.0),
                      bool(r.get("_pg")), str(r.get("kernel_class") or ""), bool(r.get("fused")), bool(r.get("simt")),
                      str(r.get("name") or "")))
        op_of_corr.setdefault(r["corr_id"], []).append(i)
        real_op.append((r["start_ns"], r["end_ns"], r["launch_s"]))
    # work launched before the slice that still runs or waits in it: its streams are busy until it ends
    carry: dict[int, float] = {}
    before = gpu.filter(ends_after & pl.col("launch_s").is_not_null() & (pl.col("launch_s") < t0))
    for st, e in before.group_by("stream").agg(pl.col("end_ns").max()).iter_rows():
        carry[streams.setdefault((st, ), len(streams))] = float(e - t0)
    data = timeline.data_ranges(nvtx, t0, t1) if nvtx is not None else None
    items = _items(mine, op_of_corr, ops, real_op, data, t0, iter_starts)
    lat, gap, ret = _calibrate(items, ops, real_op, mine, {st: int(e) + t0 for st, e in carry.items()})
    return Model(items, ops, carry, lat, gap, ret, _completions(mine, op_of_corr, real_op, t0, iter_starts),
                 max(1, len(iter_starts)), tid, other)


def _completions(mine: pl.DataFrame, op_of_corr: dict, real_op: list, t0: int, iter_starts: list[int]) -> list[float]:
    """When each iteration's work was done, as measured: its last call's end or its operations' end."""
    comp = [0.0] * max(1, len(iter_starts))
    for s, e, corr, _tid, _name in mine.iter_rows():
        i = max(0, bisect.bisect_right(iter_starts, s) - 1)
        end = max([e] + [real_op[o][1] for o in op_of_corr.get(corr, [])])
        comp[i] = max(comp[i], float(end - t0))
    for i in range(1, len(comp)):
        comp[i] = max(comp[i], comp[i - 1])
    return comp


def _items(mine: pl.DataFrame, op_of_corr: dict, ops: list[Op], real_op: list, data, t0: int,
           iter_starts: list[int]) -> list[Item]:
    """The host items of the thread, in time order; calls nested in another call (driver calls under a
    runtime call) give their operations to the outer one."""
    launch_apis, sync_apis = KERNEL_LAUNCH_APIS | ASYNC_MEM_APIS | SYNC_MEM_APIS, SYNC_APIS
    dranges = list(data.select("s", "e").iter_rows()) if data is not None and data.height else []
    items: list[Item] = []
    cur_end = t0
    outer: Item | None = None
    it = 0
    di = 0
    for s, e, corr, _tid, name in mine.iter_rows():
        while it + 1 < len(iter_starts) and s >= iter_starts[it + 1]:
            it += 1
        mine_ops = op_of_corr.get(corr, [])
        if s < cur_end and outer is not None:      # nested: its operations are the outer call's
            if mine_ops:
                outer.ops.extend(mine_ops)
                if outer.kind == "O":
                    outer.kind = "L"
            if name in sync_apis and outer.kind != "S":
                outer.kind = "S"
            cur_end = max(cur_end, e)
            continue
        if s > cur_end:
            w = Item("W", float(s - cur_end), iteration=it)
            if dranges:   # the share of this host work inside data ranges
                while di < len(dranges) and dranges[di][1] <= cur_end:
                    di += 1
                inside = sum(max(0, min(e2, s) - max(s2, cur_end)) for s2, e2 in dranges[di:di + 4])
                w.data = inside >= 0.5 * (s - cur_end)
            items.append(w)
        kind = "S" if name in sync_apis else ("L" if mine_ops or name in launch_apis else "O")
        prev = items[-1] if items else None
        if (kind == "O" and prev is not None and prev.kind in ("L", "O") and s <= cur_end + 1_000
                and prev.iteration == it and e - s < 50_000):
            # a short query call right after a launch (cuKernelGetName, cudaStreamIsCapturing ...): the
            # launch's own host time (one item, not two: the replay walks fewer)
            prev.dur += float(e - cur_end)
            cur_end = e
            continue
        outer = Item(kind, float(e - s), list(mine_ops), api=str(name), iteration=it, t=s)
        items.append(outer)
        cur_end = e
    return _mark_blocking(items, ops, real_op)


def _mark_blocking(items: list[Item], ops: list[Op], real_op: list) -> list[Item]:
    """A call that ended with its copy waited for it (synchronous copies, pageable ``cudaMemcpyAsync``):
    ``block``, and its own host time is then what such a call costs without waiting (the median kernel
    launch call)."""
    launch_durs = sorted(i.dur for i in items if i.kind == "L" and i.ops and all(ops[o].kind == "kernel" for o in i.ops))
    base = launch_durs[len(launch_durs) // 2] if launch_durs else 5_000.0
    by_end = sorted(range(len(real_op)), key=lambda o: real_op[o][1])
    ends = [real_op[o][1] for o in by_end]
    for item in items:
        if item.kind == "S":          # the wait is the replay's to decide; the call's own cost stays
            item.dur = min(item.dur, base)
            continue
        if item.kind in ("L", "O") and item.dur > max(LONG_CALL_NS, 10 * base) and not _copy_waits(item, ops, real_op):
            # a launch (or other call) that took far longer than a launch: the host waited for the GPU (a
            # full launch queue, an allocator call that synchronizes): for the operation that ended
            # last before the call returned, among those submitted before it
            call_s = item.t
            call_e = call_s + item.dur
            k = bisect.bisect_right(ends, call_e + SYNC_TOL_NS) - 1
            while k >= 0 and ends[k] > call_s:
                o = by_end[k]
                if real_op[o][2] is not None and real_op[o][2] < call_s:
                    item.wait, item.block, item.dur = o, True, base
                    break
                k -= 1
            continue
        if item.kind != "L" or not item.ops:
            continue
        copies = [o for o in item.ops if ops[o].kind in ("memcpy", "memset")]
        if not copies:
            continue
        call_e = item.t + item.dur
        op_end = max(real_op[o][1] for o in copies)
        if _copy_waits(item, ops, real_op):
            item.block = True
            item.ret = float(max(0, call_e - op_end))
            item.dur = min(item.dur, base)
    return items


def _copy_waits(item: Item, ops: list[Op], real_op: list) -> bool:
    """The call submitted a copy and ended with it (the blocking-copy case, handled below)."""
    copies = [o for o in item.ops if ops[o].kind in ("memcpy", "memset")]
    if not copies:
        return False
    call_e = item.t + item.dur
    # the copy ran while the call was in progress and the call ended with it (a small pageable copy is
    # staged: the call returns before the copy starts, and did not wait)
    return (min(real_op[o][0] for o in copies) < call_e
            and call_e >= max(real_op[o][1] for o in copies) - SYNC_TOL_NS)


def _calibrate(items: list[Item], ops: list[Op], real_op: list, mine: pl.DataFrame,
               carried: dict[int, int]) -> tuple[float, float, float]:
    """Launch latency, stream gap and return latency as this trace shows them (medians; defaults when a
    kind of event is missing). ``carried``: stream -> end of the work queued on it before the slice."""
    lat, gap = [], []
    prev_end: dict[int, int] = dict(carried)
    for i, (s, e, ls) in enumerate(real_op):
        st = ops[i].stream
        pe = prev_end.get(st)
        if ls is not None:
            if pe is None or pe < ls:                 # the stream was idle at the call: the launch decided the start
                if s >= ls:
                    lat.append(s - ls)
                    ops[i].lat = float(s - ls)
            elif 0 <= s - pe <= 5_000 and ls + 2_000 < pe:   # queued behind the previous operation
                gap.append(s - pe)
        prev_end[st] = max(e, pe or e)
    # return latency: sync calls that ended after the work they waited on
    ends = sorted(e for _s, e, _l in real_op)
    ret = []
    for s, e, _corr, _tid, name in mine.iter_rows():
        if name in SYNC_APIS:
            k = bisect.bisect_right(ends, e) - 1
            if k >= 0 and ends[k] > s:
                ret.append(e - ends[k])

    def med(v, d):
        v = sorted(x for x in v if x >= 0)
        return float(v[len(v) // 2]) if v else d
    return med(lat, 5_000.0), med(gap, 1_000.0), med(ret, 5_000.0)


# ------------------------------------------------------------------------------ the run of a model
@dataclass
class Run:
    total: float            # ns from the slice start to the end of the last host item or operation
    host_ns: float          # on the critical path: the host's own time (work, CUDA calls)
    gpu_ns: float           # on the critical path: operations and the gaps between them
    latency_ns: float       # on the critical path: launch and return latencies
    iter_host: list[float]  # host time at each iteration's first item
    comp: list[float]       # when each iteration's work was done (host or GPU)

    @property
    def period(self) -> float:
        """Completion to completion over the replayed iterations (the work carried in cancels out)."""
        return self.comp[-1] - self.comp[0] if len(self.comp) >= 2 else self.total


def simulate(m: Model) -> Run:
    """The old event-by-event replay, kept unchanged as the test oracle (past ~60 lines: a copy, not refactored)."""
    items, ops = m.items, m.ops
    n = len(ops)
    op_end = [0.0] * n
    op_pred: list = [None] * n        # ('op', j) | ('item', k) | None (a carried-in stream)
    bind: list = [None] * len(items)  # the operation a blocking item waited for, when the wait decided its end
    last_on: dict[int, int] = {}
    free = dict(m.carry)
    host = 0.0
    done, done_op = max(free.values(), default=0.0), -1
    iter_host: list[float] = []
    comp: dict[int, float] = {}
    cur_it = None
    for k, it in enumerate(items):
        if it.iteration != cur_it:
            cur_it = it.iteration
            iter_host.append(host)
        c = comp.get(it.iteration, 0.0)
        start = host
        host += it.dur
        if it.kind == "L":
            for o in it.ops:
                op = ops[o]
                ready = start + (m.latency if op.lat is None else op.lat)
                prev = last_on.get(op.stream)
                sfree = op_end[prev] + m.gap if prev is not None else free.get(op.stream, 0.0)
                if sfree > ready:
                    s, op_pred[o] = sfree, (("op", prev) if prev is not None else None)
                else:
                    s, op_pred[o] = ready, ("item", k)
                op_end[o] = s + op.dur
                c = max(c, op_end[o])
                last_on[op.stream] = o
                if op_end[o] > done:
                    done, done_op = op_end[o], o
            if it.block and (it.ops or it.wait >= 0):
                w = it.wait if it.wait >= 0 else max(it.ops, key=lambda o: op_end[o])
                back = m.ret if it.ret is None else it.ret
                if op_end[w] + back > host:
                    host, bind[k] = op_end[w] + back, w
        elif it.kind == "O" and it.wait >= 0 and op_end[it.wait] + m.ret > host:
            host, bind[k] = op_end[it.wait] + m.ret, it.wait
        elif it.kind == "S" and done_op >= 0 and done + m.ret > host:
            host, bind[k] = done + m.ret, done_op
        comp[it.iteration] = max(c, host)
    total = max(host, done)
    comps = []
    for i in sorted(comp):
        comps.append(max(comp[i], comps[-1] if comps else 0.0))
    h = g = lat = 0.0
    cur = ("op", done_op) if done > host and done_op >= 0 else ("item", len(items) - 1)
    guard = 0
    while cur is not None and guard < 4 * (n + len(items)) + 10:
        guard += 1
        kind, i = cur
        if kind == "item":
            if i < 0:
                break
            if bind[i] is not None:
                lat += m.ret if items[i].ret is None else items[i].ret
                cur = ("op", bind[i])
            else:
                h += items[i].dur
                cur = ("item", i - 1)
        else:
            g += ops[i].dur
            p = op_pred[i]
            if p is None:
                cur = None
            elif p[0] == "op":
                g += m.gap
                cur = p
            else:
                lat += m.latency if ops[i].lat is None else ops[i].lat
                cur = ("item", p[1] - 1)
    return Run(total, h, g, lat, iter_host, comps)
