"""Every fact nsys-expert computes: name, unit, scope, meaning and the inputs it needs.

Rule validation uses this table (unknown fact names are errors, with the closest name suggested),
the report uses the units, and "not evaluated" uses ``needs`` to say what to export.
Names follow ``subject_measure_unit``; ``_pct`` is 0-100 and, unless said otherwise, a share of the
analysis window's wall time.

Each fact group declares the facts it puts beside its code, in a module-level ``FACTS`` list of
``declare.fact`` entries (name, unit, doc, the inputs that can supply it, scope); this module collects
the lists of the modules in ``DECLARING_GROUPS`` (``groups.MODULES``, ``_collect``), so a new fact is one line in its group.
A fact two groups put (the trace's value and the summaries' estimate of it) is declared by one of them.
``tests/facts/test_fact_declarations.py`` fails on a fact a group puts that no group declared.
"""
from __future__ import annotations

from .declare import INPUTS, Fact  # noqa: F401 - INPUTS: the registry's readers take it from here
from .groups import MODULES

# the fact group modules, each declaring the facts it puts beside its code (a module-level FACTS list):
# the one list of groups (facts/groups.py), in the order of the table (``nsys-expert facts``, docs/rules.md)
DECLARING_GROUPS = MODULES


# inputs a profile has only when the user opted in at collection time (a costly option): a rule that
# requires one of them is left out of "not evaluated" when it is missing (engine.evaluate)
OPT_IN_INPUTS = {"gpu_metrics", "mem_usage"}
# inputs only NVIDIA's tools record (Nsight Compute, nsys's GPU metrics and OS runtime trace): on an AMD
# run (gpu_vendor amd, a ROCm torch.profiler trace) a rule that lacks only these cannot be helped by
# collecting more, so it is left out of "not evaluated" and no command asks for them
NVIDIA_ONLY_INPUTS = {"ncu", "gpu_metrics", "osrt_trace", "osrt_sum", "mem_usage"}

# what a user exports for each input: the nsys stats report name (others: how it is collected)
_OTHER_NAMES = {"osrt_trace": "SQLite export with --trace=osrt", "ranks": "several ranks",
                "ncu": "ncu --csv --page details", "gpu_metrics": "SQLite export with --gpu-metrics-devices=all",
                "mem_usage": "SQLite export with --cuda-memory-usage=true", "device_memory": "SQLite export"}


def user_name(input_id: str, lang: str = "en") -> str:
    """The name a user knows an input by: ``gpu_trace`` -> ``cuda_gpu_trace`` (the nsys stats report)."""
    import re

    m = re.search(r"nsys stats -r (\w+)", INPUTS.get(input_id, ""))
    if m:
        return m.group(1)
    other = _OTHER_NAMES.get(input_id)
    return text_in(lang, "input:" + input_id, other) if other else input_id


def _declared(module, scope: str = "run") -> list[Fact]:
    """The facts of ``scope`` a group module declares beside its code (its ``FACTS`` list), checked:
    each a :class:`Fact` needing known inputs, named once."""
    facts = list(module.FACTS)
    for f in facts:
        if not isinstance(f, Fact) or not f.needs or set(f.needs) - set(INPUTS):
            raise ValueError(f"{module.__name__}.FACTS: bad declaration {f!r} (declare.fact with inputs from INPUTS)")
    names = [(f.name, f.scope) for f in facts]    # a run fact and a kernel fact may share a name (gm_sm_active_pct)
    if len(set(names)) != len(names):
        raise ValueError(f"{module.__name__}.FACTS declares a name twice")
    return [f for f in facts if f.scope == scope]


def _collect(scope: str) -> dict[str, Fact]:
    """Every group's facts of ``scope``, in ``DECLARING_GROUPS`` order; a name two groups declare is an error
    (one group declares a fact, whichever others also put it from another input)."""
    out: dict[str, Fact] = {}
    for module in DECLARING_GROUPS:
        for f in _declared(module, scope):
            if f.name in out:
                raise ValueError(f"{module.__name__}.FACTS: {f.name} is declared by another group too")
            out[f.name] = f
    return out


_RUN = list(_collect("run").values())
RUN_FACTS: dict[str, Fact] = {f.name: f for f in _RUN}
_KERNEL = list(_collect("kernel").values())
KERNEL_FACTS: dict[str, Fact] = {f.name: f for f in _KERNEL}

SCOPES = {"run": RUN_FACTS, "kernel": KERNEL_FACTS}


SPAN_NOTE = "whole profile, start-up included"   # what a ``_span`` fact adds to its window fact's doc


def span_name(name: str) -> str:
    return f"{name}_span"


def lookup(scope: str, name: str) -> Fact | None:
    table = SCOPES.get(scope, {})
    if name in table:
        return table[name]
    if name.endswith("_span") and name[:-5] in table:
        f = table[name[:-5]]
        return Fact(name, f.unit, f.scope, f.doc + f" ({SPAN_NOTE})", f.needs)
    return None


def all_names(scope: str) -> list[str]:
    table = SCOPES.get(scope, {})
    return sorted(list(table) + [span_name(n) for n in table])


def register(scope: str, fact: Fact) -> None:
    """Add a fact (used by later layers, e.g. ncu kernel metrics)."""
    SCOPES.setdefault(scope, {})[fact.name] = fact


# --- the descriptions in other languages -------------------------------------------------------------
# A fact's doc in Chinese (or another language) lives in the gettext catalog
# ``nsys_expert/locale/<lang>/LC_MESSAGES/facts.po``: one entry per fact, its msgctxt the fact's name
# and its msgid the English doc above, so an English doc that changes loses its stale translation (and
# falls back to English) until the catalog is updated; ``tests/report/test_i18n.py`` lists the facts without
# one. Edit the .po, then ``python -m nsys_expert.report.i18n`` compiles the shipped .mo.
FACTS_DOMAIN = "facts"


def _catalog(lang: str) -> dict[str, str]:
    from ..notes import catalogs     # the folders searched: the package's, NSX_LOCALE_PATH's

    return catalogs.catalog(FACTS_DOMAIN, lang)


def text_in(lang: str | None, context: str, english: str) -> str | None:
    """``english`` (the text of ``context``: a fact's name, ``input:<id>``) in ``lang``; ``english``
    itself for English or where the catalog has no entry for exactly this text."""
    if not lang or lang == "en":
        return english
    return _catalog(lang).get(f"{context}\x04{english}", english)


def doc(fact: Fact, lang: str | None = "en") -> str:
    """A fact's description in ``lang`` (English where the catalog lacks it); a ``_span`` fact is its
    window fact's description plus the whole-profile note."""
    if not lang or lang == "en":
        return fact.doc
    base = fact.name.removesuffix("_span")
    note = f" ({SPAN_NOTE})"
    if base != fact.name and fact.doc.endswith(note):
        own = text_in(lang, base, fact.doc[:-len(note)])
        return text_in(lang, "_span", "{doc}" + note).format(doc=own)
    return text_in(lang, fact.name, fact.doc)


def untranslated(lang: str) -> list[str]:
    """``scope:name`` of every registered fact whose description has no ``lang`` text."""
    return [f"{scope}:{f.name}" for scope, table in SCOPES.items() for f in table.values()
            if f"{f.name}\x04{f.doc}" not in _catalog(lang)]
