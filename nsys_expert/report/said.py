"""What a report says of the notes (``notes.Note``): the warnings split by kind (those that change what
to believe, and the notes about the inputs), and the rules not evaluated grouped by their reasons."""
from __future__ import annotations

from ..notes import kind


def single_stepped(d) -> tuple[bool, set]:
    """(a single-GPU run, the rules the Next steps name) of ``d`` (a ``Diagnosis``, or None): the kernel
    rules that only lack Nsight Compute data are said once, in the Next steps that name them with the ncu
    command (issue 48, item 14: the same ten rules in every report)."""
    single = d is not None and not d.ranks
    return single, {r for st in (d.next_steps if d is not None else []) for r in st.rules}


def group_not_evaluated(items: list, d=None) -> list[tuple[list[str], str]]:
    """Rules that miss the same inputs are listed together (one line per distinct reason, each need
    said once). On a single-GPU run (``d``, a ``Diagnosis`` without ranks) the cross-rank rules are left
    out: they cannot apply, and listing them on every report is noise (the JSON keeps them)."""
    single, stepped = single_stepped(d)
    return [(rules, "; ".join(str(m) for m in missing)) for rules, missing in note_groups(items, single, stepped)]


def note_groups(items: list, single: bool, stepped: set) -> list[tuple[list[str], list]]:
    """(rules, their distinct reasons: notes.Note or text) per distinct set of reasons; ``items``: the
    engine's ``NotEvaluated`` entries."""
    groups: dict[tuple, tuple[list, list[str]]] = {}
    for n in items:
        if single and any(_needs(m) == ("ranks",) for m in n.missing):
            continue
        if n.rule in stepped and n.missing and all(_code(m) in _NCU_REASONS or "ncu" in _needs(m)
                                                   for m in n.missing):
            continue
        missing = list({str(m): m for m in n.missing}.values())
        groups.setdefault(tuple(str(m) for m in missing), (missing, []))[1].append(n.rule)
    return [(rules, missing) for missing, rules in groups.values()]


# the reasons that ask for Nsight Compute data (the Next steps name the ncu command)
_NCU_REASONS = ("absent.ncu_command", "absent.ncu_raw_page", "absent.ncu_set_full", "absent.ncu_unit")


def _code(x) -> str | None:
    return getattr(x, "code", None)


def _needs(x) -> tuple:
    """The inputs a "needs ..." reason names (none for another reason)."""
    return tuple(x.fields.get("inputs", ())) if _code(x) == "absent.needs" else ()


def split_warnings(warnings: list) -> tuple[list, list]:
    """(warnings that change what the reader should believe, notes about the inputs: which source won,
    files not read, tables nsys writes only when it recorded some; folded into one collapsed line), by
    each note's kind (notes/codes.py); a plain text is a warning."""
    return [w for w in warnings if kind(w) != "input"], [w for w in warnings if kind(w) == "input"]
