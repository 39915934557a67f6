"""One transformation of the dependency model per kind of advice (issue 32; docs/gains.md), each a small
function with its assumptions in its docstring and its numbers in ``replay.yaml``; how they are applied
together (``apply``, ``distinct``) and which have something to change in a model (``APPLIES``)."""
from __future__ import annotations

import pathlib
from dataclasses import replace

import polars as pl
import yaml

from .depbuild import per_item
from .depmodel import Model, simulate

PARAMS = yaml.safe_load(pathlib.Path(__file__).with_name("replay.yaml").read_text(encoding="utf-8"))


COPY = pl.col("kind").eq("memcpy") & pl.col("copy_kind").is_in(["HtoD", "DtoH"]).fill_null(False)


def _any_op(m: Model, pred: pl.Expr) -> pl.Expr:
    """Per item: whether any of its operations matches ``pred`` (an item without operations: no)."""
    hit = m.ops.filter(pred & pl.col("item").is_not_null())["item"].unique()
    return pl.int_range(pl.len(), dtype=pl.Int64).is_in(hit.implode())


def remove_syncs(m: Model) -> Model:
    """The host no longer waits: synchronize calls cost what a call costs, read-back copies (device to
    host) are submitted without waiting. Host-to-device copies from pageable memory still block (that
    is the pinned-copies advice)."""
    cost = PARAMS["remove_syncs"]["cost_us"] * 1e3
    s = pl.col("kind") == "S"
    dtoh = _any_op(m, pl.col("copy_kind").eq("DtoH").fill_null(False))
    items = m.items.with_columns(pl.when(s).then(pl.lit("O")).otherwise("kind").cast(m.items["kind"].dtype).alias("kind"),
                                 pl.when(s).then(pl.min_horizontal("dur", pl.lit(cost))).otherwise("dur").alias("dur"),
                                 (pl.col("block") & (s | ~dtoh)).alias("block"))
    return replace(m, items=items)


def _pinned_gbps(m: Model, gpu_name: str | None) -> float:
    p = PARAMS["pinned_copies"]
    big = (m.ops.filter(COPY & ~pl.col("pageable") & (pl.col("dur") > 0) & (pl.col("bytes") >= p["min_pinned_mb"] * 1e6))
                .select(pl.col("bytes") / pl.col("dur")).to_series().sort())
    if big.len():
        return float(big[big.len() // 2])
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
    ch = COPY & pl.col("pageable") & (pl.col("bytes") > 0)
    items = m.items.with_columns((pl.col("block") & ~_any_op(m, ch)).alias("block"))
    ops = m.ops.with_columns(pl.when(ch).then(pl.min_horizontal("dur", pl.col("bytes") / bw)).otherwise("dur").alias("dur"),
                             (pl.col("pageable") & ~ch).alias("pageable"))
    return replace(m, items=items, ops=ops)


def _side(m: Model, which: pl.Expr) -> pl.DataFrame:
    side = 1 + (m.ops["stream"].max() or 0) if m.ops.height else 1
    return m.ops.with_columns(pl.when(which).then(pl.col("stream") + side).otherwise("stream").alias("stream"))


def copy_overlap(m: Model) -> Model:
    """Host-device copies on a side stream, double-buffered: the compute stream no longer waits for
    them, and the host submits them without waiting."""
    not_copy = _any_op(m, pl.col("kind") != "memcpy")
    items = m.items.with_columns((pl.col("block") & not_copy).alias("block"))
    return replace(m, items=items, ops=_side(m, COPY))


def comm_overlap(m: Model) -> Model:
    """NCCL / RCCL collectives on their own stream, overlapped with compute (DDP gradient buckets, FSDP
    prefetch, async tensor-parallel collectives): the compute stream no longer waits for them, and a
    collective still starts no earlier than its launch. The collectives' own time stays (what other
    ranks make them wait is in it)."""
    return replace(m, ops=_side(m, (pl.col("kind") == "kernel") & (pl.col("cls") == "nccl")))


def cuda_graphs(m: Model) -> Model:
    """Each run of kernel launches between two blocking calls (or iteration starts) becomes one graph:
    one launch call of ``launch_us_per_node`` per kernel, the dispatch work between the launches (host work
    and non-blocking calls shorter than ``max_dispatch_gap_us``) gone,
    the kernels queued at the graph launch and ``node_gap_us`` apart on the GPU.

    In columns: a segment ends at an iteration start or an item that ends a graph (a synchronisation, a
    launch that is not only kernels or blocks, host work that is not dispatch); its kernel launches are one
    graph launch where its first launch was; dispatch items between two launches of a graph are gone."""
    p = PARAMS["cuda_graphs"]
    per_node, max_gap = p["launch_us_per_node"] * 1e3, p["max_dispatch_gap_us"] * 1e3
    n = m.items.height
    nops, allk = per_item(n, m.ops)
    k = pl.int_range(pl.len(), dtype=pl.Int64)
    it = m.items.with_columns(nops.alias("n"), ((pl.col("kind") == "L") & (nops > 0) & allk & ~pl.col("block")).alias("la"),
                              (pl.col("kind").is_in(["W", "O"]) & (pl.col("dur") < max_gap)).alias("disp"))
    brk = (~pl.col("la") & ~pl.col("disp") & (pl.col("kind").is_in(["S", "L", "W"]) | pl.col("block"))) \
        | (pl.col("iteration") != pl.col("iteration").shift(1)).fill_null(True)
    it = it.with_columns(brk.cast(pl.Int64).cum_sum().alias("seg"))
    # the last launch before each item (its segment), the graph's head (its segment's first launch) and the
    # next item that is not dispatch
    last_seg = pl.when(pl.col("la")).then(pl.col("seg")).forward_fill().shift(1)
    first_la = pl.col("la") & (last_seg != pl.col("seg")).fill_null(True)
    it = it.with_columns(first_la.alias("fl"), (last_seg == pl.col("seg")).fill_null(False).alias("alive"),
                         pl.when(~pl.col("disp")).then(k).backward_fill().shift(-1).alias("nxt"))
    it = it.with_columns(pl.when(pl.col("fl")).then(k).forward_fill().alias("head"))
    nx = it["nxt"].fill_null(0)
    nxt_ok = it["nxt"].is_not_null() & it["la"].gather(nx) & (it["seg"].gather(nx) == it["seg"])
    it = it.with_columns((pl.col("disp") & pl.col("alive") & nxt_ok).alias("drop"))
    it = it.with_columns((~pl.col("drop") & ~(pl.col("la") & ~pl.col("fl"))).alias("keep"))
    it = it.with_columns((pl.col("keep").cast(pl.Int64).cum_sum() - 1).alias("new"))
    new = it["new"]
    # each old item's operations go to: the graph's launch (a kernel launch), itself, or nowhere (dropped)
    to = it.select(pl.when(pl.col("la")).then(new.gather(it["head"].fill_null(0)))
                     .when(pl.col("keep")).then(pl.col("new"))).to_series()
    ops = m.ops.with_columns(to.gather(m.ops["item"]).alias("item"))
    # a graph's launch costs per_node for each of its kernels (those of every launch it took in)
    tot = it.filter(pl.col("la")).group_by("head").agg(pl.col("n").sum())
    nseg = pl.repeat(0, n, dtype=pl.Int64, eager=True).scatter(tot["head"], tot["n"].cast(pl.Int64))
    items = (it.with_columns(nseg.alias("nseg")).filter(pl.col("keep"))
               .with_columns(pl.when(pl.col("la")).then(per_node * pl.col("nseg").cast(pl.Float64)).otherwise("dur")
                             .alias("dur"))
               .select(m.items.columns))
    return replace(m, items=items, ops=ops, gap=p["node_gap_us"] * 1e3)


def host_offload(m: Model, data_only: bool = False) -> Model:
    """Host work segments of ``min_segment_us`` or more (inside data ranges only, with ``data_only``)
    move to ``workers`` worker processes: per iteration the thread waits only for what the workers
    cannot make while the rest of the iteration runs, max(0, D / N - rest)."""
    p = PARAMS["host_offload"]
    n, min_w = p["workers"], p["min_segment_us"] * 1e3
    mv = (pl.col("kind") == "W") & (pl.col("dur") >= min_w) & (pl.col("data") | (not data_only))
    it = m.items.with_row_index("k").with_columns(mv.alias("mv"))
    moved = it.filter(pl.col("mv")).group_by("iteration").agg(pl.col("dur").sum().alias("d"), pl.col("k").min())
    if not moved.height:
        return m
    rest = replace(m, items=it.select(pl.when(pl.col("mv")).then(0.0).otherwise("dur").alias("dur")).hstack(
        m.items.drop("dur")).select(m.items.columns))
    r = simulate(rest)
    its = sorted(set(m.items["iteration"].to_list()))
    period = {j: (r.comp[i] - r.comp[i - 1]) if i else (r.comp[1] - r.comp[0] if len(r.comp) > 1 else r.total)
              for i, j in enumerate(its)}
    # the workers make this batch while the rest of the iteration runs (its period without the work)
    waits = {int(k): max(0.0, d / n - period.get(i, 0.0)) for i, d, k in moved.iter_rows()}
    first = pl.int_range(pl.len(), dtype=pl.Int64)
    dur = pl.when(first.is_in(list(waits))).then(first.replace_strict(waits, default=0.0, return_dtype=pl.Float64)) \
        .otherwise("dur")
    return replace(rest, items=rest.items.with_columns(dur.alias("dur")))


def scale_ops(m: Model, which: pl.Expr, saved: float) -> Model:
    return replace(m, ops=m.ops.with_columns(pl.when(which).then(pl.col("dur") * (1.0 - saved)).otherwise("dur")
                                             .alias("dur")))


def fusion(m: Model) -> Model:
    """The unfused elementwise kernels' time shrinks by ``saved_share`` (the bytes moved once)."""
    return scale_ops(m, (pl.col("kind") == "kernel") & (pl.col("cls") == "elementwise") & ~pl.col("fused"),
                     PARAMS["fusion"]["saved_share"])


def tensor_cores(m: Model) -> Model:
    """SIMT (FFMA) GEMMs on the tensor cores (TF32 / bf16): their time shrinks by ``saved_share``."""
    return scale_ops(m, (pl.col("kind") == "kernel") & pl.col("simt"), PARAMS["tensor_cores"]["saved_share"])


def copies(m: Model, gpu_name: str | None = None) -> Model:
    """The copy advice: pinned + non_blocking copies where copies are pageable, else a side stream."""
    a, b = pinned_copies(m, gpu_name), copy_overlap(m)
    return a if simulate(a).period <= simulate(b).period else b


def data_workers(m: Model) -> Model:
    """DataLoader workers for the host work inside NVTX data ranges; without data ranges, for all the host
    work segments of ``min_segment_us`` or more (host_offload)."""
    return host_offload(m, data_only=bool(m.items["data"].any()))


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
def _has_ops(pred: pl.Expr):
    return lambda m: bool(m.ops.select(pred.any()).item())


def _has_items(pred: pl.Expr):
    return lambda m: bool(m.items.select(pred.any()).item())


_LONG_W = (pl.col("kind") == "W") & (pl.col("dur") >= PARAMS["host_offload"]["min_segment_us"] * 1e3)
APPLIES = {
    "remove_syncs": _has_items((pl.col("kind") == "S") | pl.col("block")),
    "pinned_copies": _has_ops(COPY & pl.col("pageable")),
    "copy_overlap": _has_ops(COPY),
    "copies": _has_ops(COPY),
    "cuda_graphs": lambda m: int((m.items["kind"] == "L").sum()) > 2 * max(1, m.iterations),
    "comm_overlap": _has_ops((pl.col("kind") == "kernel") & (pl.col("cls") == "nccl")),
    "host_offload": _has_items(_LONG_W),
    "data_workers": _has_items(_LONG_W),
    "fusion": _has_ops((pl.col("kind") == "kernel") & (pl.col("cls") == "elementwise") & ~pl.col("fused")),
    "tensor_cores": _has_ops((pl.col("kind") == "kernel") & pl.col("simt")),
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
