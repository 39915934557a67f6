"""Why each registered run fact is missing (for "not evaluated").

The registry's table reaches it through the context (``Context.declared``): the registry collects every
group's declarations, this one's included, so this module does not import it."""
from __future__ import annotations

from ..notes import Note
from .base import Context
from .declare import group


def compute(ctx: Context) -> None:
    """Say why each registered run fact is missing (for 'not evaluated')."""
    fs, prof = ctx.fs, ctx.prof
    have_tables = set(prof.tables)
    for name, f in ctx.declared.items():
        if name in fs.run or name in fs.absent:
            continue
        if not any(n in have_tables for n in f.needs):
            fs.absent[name] = Note("absent.needs", {"inputs": tuple(f.needs)})
        elif f"{name}_span" in fs.run:
            traces = tuple(n for n in f.needs if n.endswith("trace"))
            fs.absent[name] = Note("absent.span_only", {"fact": f"{name}_span", "value": fs.run[name + "_span"],
                                                        **({"then": (Note("absent.span_export",
                                                                          {"all_inputs": traces}),)} if traces else {})})
        elif f.needs == ("nvtx_trace",) and "nvtx_trace" in have_tables and (
                fs.window is None or fs.window.iterations is None or fs.window.iterations.height < 2):
            fs.absent[name] = Note("absent.no_iterations")
        else:
            lacking = tuple(n for n in f.needs if n not in have_tables)
            fs.absent[name] = Note("absent.needs", {"inputs": lacking}) if lacking else Note("absent.not_computable")


FACTS: list = []   # it puts no fact, only why the others are missing

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    # why each declared fact no group put is missing: it reads every fact, so it runs last
    group("absent", compute, reads=("absent:*", "fact:*", "input:*"), puts=("absent:*",)),
]
