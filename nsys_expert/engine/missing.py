"""Why a rule was not evaluated: the absent facts' reasons (``notes.Note``), without commands.

The commands that collect what is missing are the report's "Next steps" (scenarios.next_steps, the
one command builder); the reason here only names what is missing: each reason is said in its ``plain``
words (the catalog's template without the command, notes/codes.py), and in its ``torch`` words for a
torch.profiler trace (ProfilerStep ranges, not NVTX ranges; no OS runtime trace). A reason that asks to
export a trace the input already holds is replaced by the true one (CUDA graphs traced as a whole, or a
window with none of that work).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..facts import FactSet, registry
from ..notes import Note, Said


@dataclass(frozen=True, slots=True)
class NotEvaluated:
    """A rule the run could not evaluate: its id, category, scope and the highest severity it can reach,
    why (``missing``: one ``Note`` per distinct reason, in the words of the run's profiler), the facts it
    lacks and the rule it refines (its missing inputs then leave no verdict open). The JSON contract's
    ``not_evaluated[]`` (``report.diagnosis``); it also reads as a mapping (``n["rule"]``) for the rule
    cases and tests."""
    rule: str
    category: str
    scope: str
    max_severity: str
    missing: list = field(default_factory=list)     # of Said
    facts: list = field(default_factory=list)
    refines: str | None = None

    __getitem__ = object.__getattribute__

    def get(self, key: str, default=None):
        v = getattr(self, key, None)
        return default if v is None else v

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, None) is not None


def input_text(name: str) -> str:
    """``the cuda_api_trace report`` (the input's words without the command)."""
    return str(Note("input." + name, words="plain")) if name in registry.INPUTS else name


def needs(name: str, fs: FactSet) -> Note:
    """"needs <input>", in the words of the run's profiler (a rule that requires an input the run lacks)."""
    return Note("absent.needs", {"inputs": (name,)}, words=_words(fs))


def _words(fs: FactSet) -> str:
    """A torch.profiler trace (the only input that says its GPUs' maker, facts/platform.py) has its own words."""
    return "torch" if "gpu_vendor" in fs.run else "plain"


def plain(why: Said, fact: str, scope: str, fs: FactSet, held: set[str]) -> Said:
    """One reason without commands, true for what the input holds."""
    if not isinstance(why, Note):        # a text made outside the fact groups: said as it was made
        return why
    d = registry.lookup(scope, fact)
    traces = [n for n in (d.needs if d else ()) if n.endswith("trace")]
    if why.code == "absent.span_only" and any(t in held for t in traces):
        if fs.run.get("graph_launch_count") or fs.run.get("graph_launch_count_span"):
            return Note("absent.graph_hidden", words="plain")    # the facts' own words for the graph case
        return Note("absent.span_only", {**{k: v for k, v in why.fields.items() if k != "then"},
                                         "then": (Note("absent.span_none_in_window"),)}, words="plain")
    return why.said("plain")


def for_trace(why: Said, fs: FactSet) -> Said:
    """A reason in the words of the run's profiler: a torch.profiler trace needs ProfilerStep ranges, not
    NVTX ranges, and records no OS runtime trace (the catalog's ``torch`` words)."""
    if isinstance(why, Note) and _words(fs) == "torch" and why.words != "full":
        return why.said("torch")
    return why          # a plain text is said as it was made


def reasons(facts: set[str], fs: FactSet, scope: str, held: set[str]) -> list[Said]:
    """One reason per distinct wording, for the facts a rule needs and the run lacks."""
    by_reason: dict[str, Said] = {}
    for f in sorted(facts):
        why = fs.absent.get(f) or fs.absent.get(f.removesuffix("_span"))
        if not why:
            d = registry.lookup(scope, f)
            why = Note("absent.needs", {"inputs": tuple(d.needs)}) if d else Note("absent.unknown")
        said = for_trace(plain(why, f, scope, fs, held), fs)
        by_reason.setdefault(str(said), said)
    return list(by_reason.values())
