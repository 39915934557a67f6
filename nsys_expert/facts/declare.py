"""What a fact is, and how a fact group declares the facts it puts (issue 49, item 3).

A fact group module lists its facts beside its code, in a module-level ``FACTS`` list of
:func:`fact` entries (name, unit, doc, the inputs that can supply it, scope); ``registry.py`` collects
the lists of the modules in its ``DECLARING_GROUPS``. ``INPUTS`` names every input a fact can need and how a
user gets it. This module imports nothing of the package but the notes catalog (layer 0), so a group can declare its facts (and name
an input in an absent fact's reason) without an import circle through the registry.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..notes import Note

# input ids -> how a user gets them (each input's words: notes/codes.py, "input.<id>")
INPUTS = {i: str(Note("input." + i)) for i in (
    "gpu_trace", "api_trace", "nvtx_trace", "kern_sum", "api_sum", "mem_time_sum", "mem_size_sum", "nvtx_sum",
    "nvtx_pushpop_sum", "osrt_sum", "osrt_trace", "kern_exec_sum", "nvtx_gpu_proj_sum", "gpu_sum", "ranks",
    "gpu_metrics", "cpu_trace", "ncu")}


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
