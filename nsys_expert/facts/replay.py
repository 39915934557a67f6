"""Replay the steady-state iteration on its dependency model (``depmodel``): the critical path, and
what each piece of advice would give back (issue 32; docs/gains.md).

``simulate`` runs the model event by event: host items one after the other, each operation when it
was submitted (plus the launch latency) and its stream is free, a blocking item until the work it
waits on is done. The same run, walked back from its end, is the critical path: how much of the
iteration the host's own time decides and how much the GPU's. Each transformation (one per kind of
advice, numbers in ``replay.yaml``) edits a copy of the model; its gain is ``1 - after / before`` over
the same iterations, so the host work that stays on the path is never promised away.

Facts (``_pct`` of the replayed iterations): ``critical_path_host_pct``, ``critical_path_gpu_pct``,
``replay_model_error_pct`` (the replay against the measured time), ``replay_gain_<advice>_pct``,
``replay_gain_all_pct`` (every transformation that gains, replayed together: never a sum).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, replace

import yaml

from . import depmodel
from .base import Context
from .depmodel import Item, Model

PARAMS = yaml.safe_load(pathlib.Path(__file__).with_name("replay.yaml").read_text(encoding="utf-8"))


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


# ------------------------------------------------------------------------------ transformations
def remove_syncs(m: Model) -> Model:
    """The host no longer waits: synchronize calls cost what a call costs, read-back copies (device to
    host) are submitted without waiting. Host-to-device copies from pageable memory still block (that
    is the pinned-copies advice)."""
    cost = PARAMS["remove_syncs"]["cost_us"] * 1e3
    items = []
    for it in m.items:
        if it.kind == "S":
            it = replace(it, kind="O", dur=min(it.dur, cost))
        elif it.block and any(m.ops[o].copy_kind == "DtoH" for o in it.ops):
            it = replace(it, block=False)
        items.append(it)
    return replace(m, items=items)


def _pinned_gbps(m: Model, gpu_name: str | None) -> float:
    p = PARAMS["pinned_copies"]
    big = [op.bytes / op.dur for op in m.ops if op.kind == "memcpy" and not op.pageable and op.dur > 0
           and op.copy_kind in ("HtoD", "DtoH") and op.bytes >= p["min_pinned_mb"] * 1e6]
    if big:
        big.sort()
        return big[len(big) // 2]
    return table_gbps(gpu_name)


def table_gbps(gpu_name: str | None) -> float:
    """Host <-> device bandwidth from pinned memory for this GPU (``replay.yaml``, first name that matches)."""
    p = PARAMS["pinned_copies"]
    for key, v in p["gbps"].items():
        if key != "default" and gpu_name and key.lower() in gpu_name.lower():
            return float(v)
    return float(p["gbps"]["default"])


def pinned_copies(m: Model, gpu_name: str | None = None) -> Model:
    """Copies between pageable host memory and the device run from pinned buffers at the pinned
    bandwidth (measured in the same profile, else ``replay.yaml``), submitted with ``non_blocking``."""
    bw = _pinned_gbps(m, gpu_name)   # GB/s = bytes per ns
    ops = list(m.ops)
    changed = set()
    for i, op in enumerate(ops):
        if op.kind == "memcpy" and op.pageable and op.copy_kind in ("HtoD", "DtoH") and op.bytes > 0:
            ops[i] = replace(op, dur=min(op.dur, op.bytes / bw), pageable=False)
            changed.add(i)
    items = [replace(it, block=False) if it.block and any(o in changed for o in it.ops) else it for it in m.items]
    return replace(m, items=items, ops=ops)


def copy_overlap(m: Model) -> Model:
    """Host-device copies on a side stream, double-buffered: the compute stream no longer waits for
    them, and the host submits them without waiting."""
    side = 1 + max((op.stream for op in m.ops), default=0)
    ops = [replace(op, stream=side + op.stream) if op.kind == "memcpy" and op.copy_kind in ("HtoD", "DtoH") else op
           for op in m.ops]
    items = [replace(it, block=False) if it.block and all(ops[o].kind == "memcpy" for o in it.ops) else it
             for it in m.items]
    return replace(m, items=items, ops=ops)


def comm_overlap(m: Model) -> Model:
    """NCCL / RCCL collectives on their own stream, overlapped with compute (DDP gradient buckets, FSDP
    prefetch, async tensor-parallel collectives): the compute stream no longer waits for them, and a
    collective still starts no earlier than its launch. The collectives' own time stays (what other
    ranks make them wait is in it)."""
    side = 1 + max((op.stream for op in m.ops), default=0)
    ops = [replace(op, stream=side + op.stream) if op.kind == "kernel" and op.cls == "nccl" else op for op in m.ops]
    return replace(m, ops=ops)


def cuda_graphs(m: Model) -> Model:
    """Each run of kernel launches between two blocking calls (or iteration starts) becomes one graph:
    one launch call of ``launch_us_per_node`` per kernel, the dispatch work between the launches (host work
    and non-blocking calls shorter than ``max_dispatch_gap_us``) gone,
    the kernels queued at the graph launch and ``node_gap_us`` apart on the GPU."""
    p = PARAMS["cuda_graphs"]
    per_node, max_gap = p["launch_us_per_node"] * 1e3, p["max_dispatch_gap_us"] * 1e3
    items: list[Item] = []
    head: Item | None = None
    pending: list[Item] = []      # dispatch work since the last launch of the current graph
    for it in m.items:
        is_launch = it.kind == "L" and it.ops and all(m.ops[o].kind == "kernel" for o in it.ops) and not it.block
        if head is not None and head.iteration != it.iteration:
            head = None
        if is_launch:
            if head is None:
                items.extend(pending)
                pending = []
                head = replace(it, ops=list(it.ops), dur=per_node * len(it.ops))
                items.append(head)
            else:
                pending = []          # the dispatch between two launches of one graph is gone
                head.ops.extend(it.ops)
                head.dur += per_node * len(it.ops)
            continue
        if head is not None and it.kind in ("W", "O") and it.dur < max_gap:   # dispatch, or a query call in it
            pending.append(it)
            continue
        items.extend(pending)
        pending = []
        if it.kind in ("S", "L") or it.block or it.kind == "W":
            head = None
        items.append(it)
    items.extend(pending)
    return replace(m, items=items, gap=p["node_gap_us"] * 1e3)


def host_offload(m: Model, data_only: bool = False) -> Model:
    """Host work segments of ``min_segment_us`` or more (inside data ranges only, with ``data_only``)
    move to ``workers`` worker processes: per iteration the thread waits only for what the workers
    cannot make while the rest of the iteration runs, max(0, D / N - rest)."""
    p = PARAMS["host_offload"]
    n, min_w = p["workers"], p["min_segment_us"] * 1e3
    moved: dict[int, float] = {}
    first: dict[int, int] = {}
    items = []
    for it in m.items:
        if it.kind == "W" and it.dur >= min_w and (it.data or not data_only):
            moved[it.iteration] = moved.get(it.iteration, 0.0) + it.dur
            first.setdefault(it.iteration, len(items))
            it = replace(it, dur=0.0)
        items.append(it)
    if not moved:
        return m
    rest = replace(m, items=items)
    r = simulate(rest)
    its = sorted({it.iteration for it in items})
    period = {j: (r.comp[i] - r.comp[i - 1]) if i else (r.comp[1] - r.comp[0] if len(r.comp) > 1 else r.total)
              for i, j in enumerate(its)}
    out = list(items)
    for k, d in moved.items():
        # the workers make this batch while the rest of the iteration runs (its period without the work)
        wait = max(0.0, d / n - period.get(k, 0.0))
        out[first[k]] = replace(out[first[k]], dur=wait)
    return replace(m, items=out)


def scale_ops(m: Model, which, saved: float) -> Model:
    ops = [replace(op, dur=op.dur * (1.0 - saved)) if which(op) else op for op in m.ops]
    return replace(m, ops=ops)


def fusion(m: Model) -> Model:
    """The unfused elementwise kernels' time shrinks by ``saved_share`` (the bytes moved once)."""
    return scale_ops(m, lambda op: op.kind == "kernel" and op.cls == "elementwise" and not op.fused,
                     PARAMS["fusion"]["saved_share"])


def tensor_cores(m: Model) -> Model:
    """SIMT (FFMA) GEMMs on the tensor cores (TF32 / bf16): their time shrinks by ``saved_share``."""
    return scale_ops(m, lambda op: op.kind == "kernel" and op.simt, PARAMS["tensor_cores"]["saved_share"])


def copies(m: Model, gpu_name: str | None = None) -> Model:
    """The copy advice: pinned + non_blocking copies where copies are pageable, else a side stream."""
    a, b = pinned_copies(m, gpu_name), copy_overlap(m)
    return a if simulate(a).period <= simulate(b).period else b


def data_workers(m: Model) -> Model:
    """DataLoader workers for the host work inside NVTX data ranges; without data ranges, for all the host
    work segments of ``min_segment_us`` or more (host_offload)."""
    return host_offload(m, data_only=any(it.data for it in m.items))


TRANSFORMS = {
    "remove_syncs": remove_syncs,
    "pinned_copies": pinned_copies,
    "copy_overlap": copy_overlap,
    "copies": copies,
    "cuda_graphs": cuda_graphs,
    "comm_overlap": comm_overlap,
    "host_offload": host_offload,
    "data_workers": data_workers,
    "fusion": fusion,
    "tensor_cores": tensor_cores,
}
# what each transformation changes: where the model has none of it, the gain is 0 without a replay
def _has_ops(pred):
    return lambda m: any(pred(op) for op in m.ops)


APPLIES = {
    "remove_syncs": lambda m: any(it.kind == "S" or it.block for it in m.items),
    "pinned_copies": _has_ops(lambda op: op.kind == "memcpy" and op.pageable and op.copy_kind in ("HtoD", "DtoH")),
    "copy_overlap": _has_ops(lambda op: op.kind == "memcpy" and op.copy_kind in ("HtoD", "DtoH")),
    "copies": _has_ops(lambda op: op.kind == "memcpy" and op.copy_kind in ("HtoD", "DtoH")),
    "cuda_graphs": lambda m: sum(1 for it in m.items if it.kind == "L") > 2 * max(1, m.iterations),
    "comm_overlap": _has_ops(lambda op: op.kind == "kernel" and op.cls == "nccl"),
    "host_offload": lambda m: any(it.kind == "W" and it.dur >= PARAMS["host_offload"]["min_segment_us"] * 1e3 for it in m.items),
    "data_workers": lambda m: any(it.kind == "W" and it.dur >= PARAMS["host_offload"]["min_segment_us"] * 1e3 for it in m.items),
    "fusion": _has_ops(lambda op: op.kind == "kernel" and op.cls == "elementwise" and not op.fused),
    "tensor_cores": _has_ops(lambda op: op.kind == "kernel" and op.simt),
}

# the order in which transformations are applied together (kernels first, then copies, syncs, the host)
ORDER = ("tensor_cores", "fusion", "comm_overlap", "pinned_copies", "copy_overlap", "copies", "remove_syncs",
         "host_offload", "data_workers", "cuda_graphs")


def apply(m: Model, names, gpu_name: str | None = None) -> Model:
    for t in sorted(names, key=ORDER.index):
        f = TRANSFORMS[t]
        m = f(m, gpu_name) if t in ("pinned_copies", "copies") else f(m)
    return m


def _gain(m: Model, names, base_period: float, gpu_name: str | None) -> float:
    after = simulate(apply(m, names, gpu_name)).period
    return max(0.0, 100.0 * (1.0 - after / base_period)) if base_period > 0 else 0.0


def distinct(names) -> tuple[str, ...]:
    """One transformation per advice: variants of one advice (``VARIANTS``) become the broadest of them."""
    out = set(names)
    if out & {"pinned_copies", "copy_overlap", "copies"} and len(out & {"pinned_copies", "copy_overlap", "copies"}) > 1:
        out -= {"pinned_copies", "copy_overlap"}
        out.add("copies")
    if {"host_offload", "data_workers"} <= out:
        out.discard("data_workers")
    return tuple(sorted(out, key=ORDER.index))


# ------------------------------------------------------------------------------ the fact group
def _slice(win) -> tuple[int, int, int, list[int]] | None:
    """A contiguous run of steady iterations in the middle of the window: (t0, t1, t_end, starts)."""
    it = win.iterations
    if it is None or it.height - win.skipped < 3:
        return None
    rows = it.slice(win.skipped).sort("s")
    k = min(PARAMS["slice"]["max_iterations"], rows.height - 1)
    a = (rows.height - 1 - k) // 2
    starts = rows["s"].to_list()[a:a + k + 1]
    # measured: first start to the next start after the run (completion to completion in steady state)
    return starts[0], starts[-1], starts[-1], starts[:-1]


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    gpu, api = prof.tables.get("gpu_trace"), prof.tables.get("api_trace")
    why = None
    if api is None or not api.height:
        why = "the replay needs the CUDA API trace (cuda_api_trace)"
    elif not ctx.timeline_ok:
        why = "the replay needs the GPU trace"
    sl = _slice(win) if why is None else None
    if why is None and sl is None:
        why = "the replay needs three iterations or more (NVTX step ranges)"
    m = None
    if why is None:
        t0, t1, t_end, starts = sl
        m = depmodel.build(gpu, api, prof.tables.get("nvtx_trace"), t0, t1, t_end, starts)
        if m is None:
            why = "no thread launched the window's GPU work"
    if m is not None and len(m.items) > PARAMS["slice"]["max_items"]:
        k = min(len(starts) - 1, max(3, int(len(starts) * PARAMS["slice"]["max_items"] / len(m.items))))
        starts2 = starts[:k]
        m = depmodel.build(gpu, api, prof.tables.get("nvtx_trace"), starts2[0], starts[k], starts[k], starts2)
    if m is not None and m.other_thread_gpu_pct > PARAMS["slice"]["max_other_thread_gpu_pct"]:
        why = f"{m.other_thread_gpu_pct:.0f} % of the GPU time is launched by other threads"
        m = None
    for name in ("critical_path_host_pct", "critical_path_gpu_pct", "replay_model_error_pct"):
        if why:
            fs.absent[name] = why
    if m is None:
        for t in TRANSFORMS:
            fs.absent[f"replay_gain_{t}_pct"] = why
        fs.absent["replay_gain_all_pct"] = why
        return
    src = " + ".join(dict.fromkeys(s for s in (prof.source_name("gpu_trace"), prof.source_name("api_trace")) if s))
    base = simulate(m)
    real = m.real_comp[-1] - m.real_comp[0] if len(m.real_comp) >= 2 else 0.0
    periods = max(1, len(m.real_comp) - 1)
    err = 100.0 * (base.period - real) / real if real > 0 else None
    fs.put("replay_iterations", m.iterations, src)
    fs.put("replay_model_error_pct", err, src)
    path = base.host_ns + base.gpu_ns + base.latency_ns
    if path > 0:
        fs.put("critical_path_host_pct", 100.0 * base.host_ns / path, src)
        fs.put("critical_path_gpu_pct", 100.0 * base.gpu_ns / path, src)
        fs.put("critical_path_iter_ms", base.period / periods / 1e6, src)
    if err is None or abs(err) > PARAMS["slice"]["max_error_pct"]:
        why = f"the replay is {err:+.0f} % off the measured iterations" if err is not None else "nothing measured"
        for t in TRANSFORMS:
            fs.absent[f"replay_gain_{t}_pct"] = why
        fs.absent["replay_gain_all_pct"] = why
        return
    gpu_name = (prof.meta.get("gpus") or [{}])[0].get("name") if getattr(prof, "meta", None) else None
    gains = {t: _gain(m, (t,), base.period, gpu_name) if APPLIES[t](m) else 0.0 for t in TRANSFORMS if t != "copies"}
    gains["copies"] = max(gains["pinned_copies"], gains["copy_overlap"])   # (the better of the two: replayed above)
    for t, g in gains.items():
        fs.put(f"replay_gain_{t}_pct", g, src)
    everything = distinct(t for t, g in gains.items() if g >= 0.5)
    fs.put("replay_gain_all_pct", _gain(m, everything, base.period, gpu_name) if everything else 0.0, src)
    memo: dict[tuple, float] = {}

    def together(names) -> float:
        """The gain of these transformations replayed together (the engine's total of the findings)."""
        key = distinct(names)
        if key not in memo:
            memo[key] = round(_gain(m, key, base.period, gpu_name), 1)
        return memo[key]
    fs.tables["_replay"] = together
    fs.tables["critical_path"] = {"host_pct": 100.0 * base.host_ns / path, "gpu_pct": 100.0 * base.gpu_ns / path,
                                  "latency_pct": 100.0 * base.latency_ns / path, "iter_ms": base.period / periods / 1e6,
                                  "measured_iter_ms": real / periods / 1e6, "iterations": periods,
                                  "gains": {t: round(g, 1) for t, g in gains.items()}, "source": src}

