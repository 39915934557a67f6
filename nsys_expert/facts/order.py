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


def _overlap(puts: frozenset[str], items: frozenset[str]) -> bool:
    return any(covers(x, y) for x in puts for y in items)


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


def waves(groups: list[Group]) -> list[list[Group]]:
    """The groups in waves (each group in the first wave after all the groups it runs after), in the list's
    order within a wave. Raises ValueError on a circle."""
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
