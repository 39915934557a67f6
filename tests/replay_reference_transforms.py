"""The transformations as they were before issue 47 (nsys_expert/facts/transforms.py at 23736fc), on the
reference model of replay_reference.py. Test code only."""
from __future__ import annotations

import pathlib
from dataclasses import replace

import yaml

from replay_reference import Item, Model, simulate

PARAMS = yaml.safe_load(pathlib.Path(__file__).parent.parent.joinpath("nsys_expert", "facts", "replay.yaml").read_text(encoding="utf-8"))


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


def gain(m: Model, names, base_period: float, gpu_name: str | None) -> float:
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
