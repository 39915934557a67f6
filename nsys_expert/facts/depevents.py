"""The run of a small dependency model event by event (issue 47): below ``depsim.EVENTS_BELOW`` items and
operations, Python's loop over the items costs less than the column-wise run's fixed cost (about 10 ms
of Polars calls per run, a dozen runs per diagnosis). The same run as ``depsim`` (docs/gains.md):
host items one after the other, each operation when its call began plus the launch latency and its
stream is free (plus the stream gap), a blocking item until the work it waits on is done; the critical
path walked back from the end. tests/facts/test_replay_columns.py checks both against the reference."""
from __future__ import annotations

import polars as pl


def lists(m):
    """The model's frames as plain lists: items (kind, dur, block, wait, ret, iteration), each item's
    operations in submission order, and each operation's (dur, stream, lat)."""
    it = m.items.select(pl.col("kind").cast(pl.String), "dur", "block", "wait", "ret", "iteration").rows()
    ops = m.ops.select("dur", "stream", "lat").rows()
    of: list[list[int]] = [[] for _ in it]
    for o, k, _s in m.ops.with_row_index("o").select("o", "item", "seq").sort("item", "seq", nulls_last=True).rows():
        if k is not None:
            of[k].append(o)
    return it, of, ops


def run(m, run_cls):
    items, of, ops = lists(m)
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
    for k, (kind, dur, block, wait, ret, iteration) in enumerate(items):
        if iteration != cur_it:
            cur_it = iteration
            iter_host.append(host)
        c = comp.get(iteration, 0.0)
        start = host
        host += dur
        if kind == "L":
            for o in of[k]:
                d, stream, lat = ops[o]
                ready = start + (m.latency if lat is None else lat)
                prev = last_on.get(stream)
                sfree = op_end[prev] + m.gap if prev is not None else free.get(stream, 0.0)
                if sfree > ready:
                    s, op_pred[o] = sfree, (("op", prev) if prev is not None else None)
                else:
                    s, op_pred[o] = ready, ("item", k)
                op_end[o] = s + d
                c = max(c, op_end[o])
                last_on[stream] = o
                if op_end[o] > done:
                    done, done_op = op_end[o], o
            if block and (of[k] or wait >= 0):
                w = wait if wait >= 0 else max(of[k], key=lambda o: op_end[o])
                back = m.ret if ret is None else ret
                if op_end[w] + back > host:
                    host, bind[k] = op_end[w] + back, w
        elif kind == "O" and wait >= 0 and op_end[wait] + m.ret > host:
            host, bind[k] = op_end[wait] + m.ret, wait
        elif kind == "S" and done_op >= 0 and done + m.ret > host:
            host, bind[k] = done + m.ret, done_op
        comp[iteration] = max(c, host)
    comps = []
    for i in sorted(comp):
        comps.append(max(comp[i], comps[-1] if comps else 0.0))
    h, g, lat = _path(m, items, ops, op_pred, bind, host, done, done_op)
    return run_cls(max(host, done), h, g, lat, iter_host, comps)


def _path(m, items, ops, op_pred, bind, host, done, done_op):
    """The critical path walked back from the end: -> (host, GPU, latency) ns on it."""
    h = g = lat = 0.0
    cur = ("op", done_op) if done > host and done_op >= 0 else ("item", len(items) - 1)
    guard = 0
    while cur is not None and guard < 4 * (len(ops) + len(items)) + 10:
        guard += 1
        kind, i = cur
        if kind == "item":
            if i < 0:
                break
            if bind[i] is not None:
                ret = items[i][4]
                lat += m.ret if ret is None else ret
                cur = ("op", bind[i])
            else:
                h += items[i][1]
                cur = ("item", i - 1)
        else:
            d, _stream, op_lat = ops[i]
            g += d
            p = op_pred[i]
            if p is None:
                cur = None
            elif p[0] == "op":
                g += m.gap
                cur = p
            else:
                lat += m.latency if op_lat is None else op_lat
                cur = ("item", p[1] - 1)
    return h, g, lat
