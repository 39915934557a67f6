"""The dependency model of the steady-state iteration (issue 32), built from the traces.

One host timeline, the thread that launched most of the window's GPU work, as items in time order; the
GPU operations it launched, each on its stream. The model holds them as two frames, one row per item and
per operation (``Model``; lists of ``Item`` and ``Op`` are made into them), built from the traces in
columns (issue 47: a decode request's 93 k kernels are 1.1 M items). ``simulate`` runs the model (and
transformed copies of it) and walks its critical path: ``depsim`` in columns, ``depevents`` event by
event for a small model.

Host items (``Item``):
- ``W`` host work: the time between two CUDA calls of the thread (Python, data work, anything outside
  CUDA). ``data`` marks work inside an NVTX data range (``names.DATA_RANGE``).
- ``L`` a call that submits GPU operations (kernel launch, copy, set): its ``ops``. ``block`` when the host
  waited for its copy (a synchronous copy, or a pageable ``cudaMemcpyAsync``: the call ended with the copy).
- ``S`` a blocking synchronisation (stream / device / event synchronize): the host waits until every
  operation submitted before it has finished.
- ``O`` any other CUDA call (allocation, queries): host time.

Edges: host items follow each other; an operation starts when it was submitted (its call's start plus
the launch latency measured in the same trace) and its stream is free (stream order, plus the gap
measured between queued operations); a blocking item ends when the work it waits on ends (plus the
return latency measured). Operations from other threads, and cross-stream event waits, are not in the
model: ``other_thread_gpu_pct`` says how much GPU time that leaves out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from .depbuild import ITEM_SCHEMA, KIND, LONG_CALL_NS, OP_SCHEMA, SYNC_TOL_NS, parts  # noqa: F401
from .depsim import Run, simulate  # noqa: F401 - the run of a model (columns, or event by event when small)



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
    """Host items and operations as two frames (``ITEM_SCHEMA``, ``OP_SCHEMA``): one row per ``Item`` and
    ``Op``, an item's operations the rows whose ``item`` is its row number. Lists of ``Item`` and ``Op`` (a
    model written by hand) are made into the frames."""
    items: pl.DataFrame
    ops: pl.DataFrame
    carry: dict[int, float]   # stream -> ns after t0 until which work launched before the slice occupies it
    latency: float            # launch latency (call start -> operation start on an idle stream), ns
    gap: float                # gap between operations queued back to back on one stream, ns
    ret: float                # return latency of a blocking call after the work it waited on, ns
    real_comp: list[float]    # measured: when each iteration's work was complete (ns after t0; host or GPU)
    iterations: int
    tid: int | None
    other_thread_gpu_pct: float
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.items, list):
            self.items, self.ops = frames(self.items, self.ops)


def frames(items: list[Item], ops: list[Op]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lists of items and operations as the model's two frames."""
    item_of: list = [None] * len(ops)
    seq: list = [None] * len(ops)
    n = 0
    for k, it in enumerate(items):
        for o in it.ops:
            item_of[o], seq[o] = k, n
            n += 1
    idf = pl.DataFrame([(i.kind, float(i.dur), i.block, i.wait, i.ret, i.data, i.api, i.iteration, i.t) for i in items],
                       schema=ITEM_SCHEMA, orient="row")
    odf = pl.DataFrame([(float(o.dur), o.stream, o.kind, o.copy_kind, float(o.bytes), o.pageable, o.cls, o.fused, o.simt,
                         o.name, o.lat, item_of[i], seq[i]) for i, o in enumerate(ops)], schema=OP_SCHEMA, orient="row")
    return idf, odf


def item_list(m: Model) -> tuple[list[Item], list[Op]]:
    """The model's frames as lists of ``Item`` and ``Op`` (the event-by-event reference of the tests)."""
    ops = [Op(r["dur"], r["stream"], r["kind"], r["copy_kind"], r["bytes"], r["pageable"], r["cls"], r["fused"],
              r["simt"], r["name"], r["lat"]) for r in m.ops.iter_rows(named=True)]
    of: dict[int, list[int]] = {}
    for o, k, _s in m.ops.with_row_index("o").select("o", "item", "seq").sort("seq").iter_rows():
        if k is not None:
            of.setdefault(k, []).append(o)
    items = [Item(r["kind"], r["dur"], of.get(k, []), r["block"], r["wait"], r["ret"], r["data"], r["api"], r["iteration"],
                  r["t"]) for k, r in enumerate(m.items.iter_rows(named=True))]
    return items, ops


def build(gpu: pl.DataFrame, api: pl.DataFrame, nvtx: pl.DataFrame | None, t0: int, t1: int, t_end: int,
          iter_starts: list[int]) -> Model | None:
    """The model of the host slice [t0, t1) (whole iterations), measured until ``t_end`` (the end of the
    last iteration's work). None when the slice has no launching thread. (``depbuild``: in columns.)"""
    p = parts(gpu, api, nvtx, t0, t1, t_end, iter_starts)
    return Model(*p) if p is not None else None
