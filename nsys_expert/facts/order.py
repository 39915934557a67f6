"""The order of the fact groups, derived from what each declares it reads and puts (issue 59, item 4).

A group runs after every group that puts an item it reads (``declare.Group``: ``fact:iter_count`` read by
``copy_bursts`` puts it after ``iterations``, ``kernel:bound_class`` read by ``gpu_metrics`` after ``ncu``:
ncu's class wins for the kernels it measured). Two groups that put the same item, neither reading it
from the other, keep the order of the one list (``facts/groups.py``): the earlier one first (the later
one's value, or its warning after the earlier one's). :func:`waves` gives the groups in waves: the groups
of a wave depend on none of the same wave and share no item they put, so they may run side by side; each
wave runs after the one before. A circle is an error that names its groups.
"""
from __future__ import annotations

from .declare import Group


def covers(put: str, read: str, twins: bool = True) -> bool:
    """Whether the item ``put`` is (or includes) the item ``read``: ``fact:*`` covers every fact; a fact covers
    its source (``source:x``), why it is missing (``absent:x``) and, with ``twins``, its whole-profile twin
    (a group that declares ``fact:x`` may put ``fact:x_span``); ``kernels`` (the rows) covers their facts."""
    if put == read:
        return True
    pk, _, pn = put.partition(":")
    rk, _, rn = read.partition(":")
    if pk != rk:
        if rk in ("source", "absent") and pk in ("fact", "kernel"):
            return pn == rn or pn == "*" or (twins and rn == pn + "_span")
        return pk == "kernels" and rk == "kernel"
    return pn == "*" or rn == "*" or (twins and rn == pn + "_span")


def _overlap_pairs(puts: frozenset[str], items: frozenset[str]) -> bool:
    """:func:`_overlap` pair by pair (the definition; ``tests/facts/test_group_order.py`` checks the index against it)."""
    return any(covers(x, y) for x in puts for y in items)


class _Puts:
    """The items a group puts, indexed for :func:`covers` (a test per read item instead of one per pair:
    the pairs of ~30 groups' hundreds of items cost ~0.1 s a diagnosis, every rank of a job)."""

    def __init__(self, puts: frozenset[str]):
        self.items = puts
        self.kinds = {x.partition(":")[0] for x in puts}

    def covers_any(self, read: str) -> bool:
        items, kinds = self.items, self.kinds
        if read in items:
            return True
        rk, _, rn = read.partition(":")
        span = rn[:-5] if rn.endswith("_span") else None
        if rk in kinds:                        # the same kind: a wildcard on either side, or the twin
            if rn == "*" or f"{rk}:*" in items or (span is not None and f"{rk}:{span}" in items):
                return True
        if rk in ("source", "absent"):         # a fact (or a kernel's fact) covers its source and why it is missing
            for pk in ("fact", "kernel"):
                if pk in kinds and (f"{pk}:{rn}" in items or f"{pk}:*" in items
                                    or (span is not None and f"{pk}:{span}" in items)):
                    return True
        return rk == "kernel" and "kernels" in kinds


_INDEX: dict[frozenset, _Puts] = {}


def _overlap(puts: frozenset[str], items: frozenset[str]) -> bool:
    """Whether an item of ``puts`` covers an item of ``items`` (:func:`covers`)."""
    ix = _INDEX.get(puts)
    if ix is None:
        ix = _INDEX[puts] = _Puts(puts)
    return any(ix.covers_any(y) for y in items)


def after(groups: list[Group]) -> dict[str, list[str]]:
    """Group name -> the names of the groups it must run after (those that put what it reads; and, of
    two that put the same item without reading it from each other, the later one after the earlier)."""
    deps: dict[str, list[str]] = {g.name: [] for g in groups}
    for i, g in enumerate(groups):
        for j, h in enumerate(groups):
            if h is g:
                continue
            both = _overlap(h.puts, g.puts) or _overlap(g.puts, h.puts)
            if _overlap(h.puts, g.reads) or (j < i and both and not _overlap(g.puts, h.reads)):
                deps[g.name].append(h.name)
    return deps


_WAVES: dict[tuple, list[list[Group]]] = {}


def waves(groups: list[Group]) -> list[list[Group]]:
    """The groups in waves (each group in the first wave after all the groups it runs after), in the list's
    order within a wave. Raises ValueError on a circle. Worked out once per list of groups in a process
    (the groups that apply to one run: the same for most runs, and for every rank of a job)."""
    key = tuple(groups)
    done = _WAVES.get(key)
    if done is None:
        done = _WAVES[key] = _waves(groups)
    return [list(w) for w in done]


def _waves(groups: list[Group]) -> list[list[Group]]:
    deps = after(groups)
    wave: dict[str, int] = {}
    busy: set[str] = set()

    def depth(name: str) -> int:
        if name in wave:
            return wave[name]
        if name in busy:
            raise ValueError(f"fact groups in a circle: {' -> '.join(list(busy) + [name])} (what they read and put)")
        busy.add(name)
        wave[name] = 1 + max((depth(d) for d in deps[name]), default=-1)
        busy.discard(name)
        return wave[name]

    for g in groups:
        depth(g.name)
    out: list[list[Group]] = [[] for _ in range(1 + max(wave.values(), default=-1))]
    for g in groups:
        out[wave[g.name]].append(g)
    return out


def order(groups: list[Group]) -> list[Group]:
    """One valid order: the waves one after the other."""
    return [g for w in waves(groups) for g in w]


def valid(sequence: list[Group], groups: list[Group] | None = None) -> list[str]:
    """What is wrong with running ``sequence`` in that order: each group that runs before one it must run
    after (an empty list: a valid order)."""
    deps = after(groups or sequence)
    at = {g.name: i for i, g in enumerate(sequence)}
    return [f"{g.name} runs before {d}" for g in sequence for d in deps[g.name] if d in at and at[d] > at[g.name]]
