"""The condition language, one concept in one package (issue 59, item 5): a rule's ``when`` (and its
escalations', advice items' and relations' ``when``, the pack's named conditions) parsed once into frozen
nodes with the walks the engine needs (``nodes.py``), and their evaluation in Python with the rule
engine's semantics (``evaluate.py``: ``holds``, and ``compiled`` for the many-kernel case). What each
operator means is ``engine/operators.py``'s table. Other modules import from here, never a module inside.
"""
from __future__ import annotations

from .evaluate import compiled, holds
from .nodes import (NODES, All, Any, Cond, ConditionError, FactRef, Input, Items, Leaf, Lit, Named, Not, Param, branches,
                    fact_leaves, facts_read, leaves, missing, parse, parse_value, positive_facts, raw, rhs_facts)

__all__ = ["NODES", "All", "Any", "Cond", "ConditionError", "FactRef", "Input", "Items", "Leaf", "Lit", "Named", "Not",
           "Param", "branches", "compiled", "fact_leaves", "facts_read", "holds", "leaves", "missing", "parse",
           "parse_value", "positive_facts", "raw", "rhs_facts"]
