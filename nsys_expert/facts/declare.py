"""What a fact is, and how a fact group declares the facts it puts (issue 49, item 3).

A fact group module lists its facts beside its code, in a module-level ``FACTS`` list of
:func:`fact` entries (name, unit, doc, the inputs that can supply it, scope); ``registry.py`` collects
the lists of the modules in its ``DECLARING_GROUPS``. ``INPUTS`` names every input a fact can need and how a
user gets it. This module imports nothing of the package but the notes catalog (layer 0), so a group can declare its facts (and name
an input in an absent fact's reason) without an import circle through the registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..notes import Note

# input ids -> how a user gets them (each input's words: notes/codes.py, "input.<id>")
INPUTS = {i: str(Note("input." + i)) for i in (
    "gpu_trace", "api_trace", "nvtx_trace", "kern_sum", "api_sum", "mem_time_sum", "mem_size_sum", "nvtx_sum",
    "nvtx_pushpop_sum", "osrt_sum", "osrt_trace", "kern_exec_sum", "nvtx_gpu_proj_sum", "gpu_sum", "ranks",
    "gpu_metrics", "cpu_trace", "call_ops", "mem_usage", "device_memory", "ncu")}


@dataclass(frozen=True)
class Fact:
    name: str
    unit: str
    scope: str
    doc: str
    needs: tuple[str, ...]       # alternatives: any one of these inputs can supply the fact


def fact(name: str, unit: str, doc: str, needs=("gpu_trace",), scope: str = "run") -> Fact:
    """One fact: ``needs`` lists alternatives (any one of these inputs can supply it)."""
    return Fact(name, unit, scope, doc, tuple(needs))


# --- what a fact group reads and puts (issue 59, item 4) ----------------------------------------------
# Items name what crosses between groups: ``input:<table>`` (a loaded frame), ``fact:<name>`` (a run fact
# or its tier), ``source:<name>`` (the file a fact came from; putting the fact puts it), ``absent:<name>``
# (why a fact is missing), ``kernel:<fact>`` (a fact of the hot kernels' rows), ``kernels`` (the rows
# themselves), ``table:<key>`` (a report table), ``work:<field>`` (``Work``, shared by the groups of one
# process), ``warnings``, ``where``, ``share``. ``<kind>:*`` is every item of that kind. ``facts/order.py``
# derives the order from them: a group runs after every group that
# puts what it reads; ``facts/tracked.py`` checks them against what the code touches.


@dataclass(frozen=True)
class Group:
    """One fact group: its entry point, when it applies, what it reads and what it puts."""
    name: str
    run: Callable
    applies: Callable
    reads: frozenset[str]
    puts: frozenset[str]


def _items(entries) -> frozenset[str]:
    out: set[str] = set()
    for e in entries:
        if isinstance(e, Fact):
            out.add(("kernel:" if e.scope == "kernel" else "fact:") + e.name)
        elif isinstance(e, str):
            if ":" not in e and e not in ("kernels", "warnings", "where", "share"):
                raise ValueError(f"{e!r}: an item is <kind>:<name> (input, fact, absent, kernel, table, work)")
            out.add(e)
        else:                           # a list of facts (a FACTS list, or part of it)
            out |= _items(e)
    return frozenset(out)


def group(name: str, run: Callable, applies: Callable | None = None, reads=(), puts=()) -> Group:
    """A fact group: ``reads`` and ``puts`` are items (above), ``Fact``s or lists of them (its FACTS)."""
    return Group(name, run, applies or always, _items(reads), _items(puts))


# when a group applies (the context's first decisions: facts/__init__.py)
def always(_c) -> bool:
    return True


def on_timeline(c) -> bool:
    """A GPU trace with work in a non-empty window, graphs visible."""
    return c.timeline_ok


def has(table: str) -> Callable:
    """The input ``table`` has rows and the window is not empty."""
    def applies(c) -> bool:
        t = c.prof.tables.get(table)
        return t is not None and t.height > 0 and c.win.length_ns > 0
    applies.__name__ = f"has_{table}"
    return applies
