"""What a fact is, and how a fact group declares the facts it puts (issue 49, item 3).

A fact group module lists its facts beside its code, in a module-level ``FACTS`` list of
:func:`fact` entries (name, unit, doc, the inputs that can supply it, scope); ``registry.py`` collects
the lists of the modules in its ``DECLARING_GROUPS``. This module imports nothing of the package, so
a group can declare its facts without an import circle through the registry.
"""
from __future__ import annotations

from dataclasses import dataclass


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
