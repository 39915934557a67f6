"""The rule pack's data model: severities, categories, operators and subjects, ``Rule`` and ``Pack``, and the
walk over a rule's conditions. Below every engine module that reads rules (loading, validation, relations,
the pack cache): none of them imports another to get these (no circle). And what the engine hands the
report: ``Finding`` with its parts (``Evidence``, ``Support``, ``IdlePhase``), declared types, not dicts."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..facts.where import Location  # noqa: F401 - findings[].locations (issue 55): made by the facts
from ..reads import Reads
from . import condition
from .operators import ALL_OPS, NUMERIC_OPS, STRING_OPS  # noqa: F401 - the operators a pack may write, by kind

SEVERITIES = ["info", "low", "medium", "high", "critical"]
# a category's level (pack.yaml ``categories:``): a whole-run bottleneck, one kernel's, or a note
LEVELS = ("system", "kernel", "note")
# the side of the critical path a category's fix shortens (without one, the finding's subject decides)
SIDES = ("host", "overlap")


@dataclass(frozen=True)
class Category:
    """A category a rule may name, declared in a pack's ``pack.yaml`` (``categories:``): its title by language
    (``en`` at least), its level (``LEVELS``) and the side of the critical path its fix shortens (``SIDES``,
    or None)."""
    name: str
    title: dict
    level: str
    side: str | None = None

    def title_in(self, lang: str) -> str | None:
        """Its title in ``lang`` (the pack's, else the ``rules`` catalog's), or None where neither gives one."""
        from ..notes import catalogs

        en = self.title.get("en")
        return self.title.get(lang) or (catalogs.catalog(catalogs.RULES, lang).get(en) if en else None)


@dataclass
class Rule:
    id: str
    title: dict
    category: str
    severity: str
    scope: str
    when: condition.Cond               # parsed (condition.parse) from the file's YAML when the rule is made
    message: dict
    advice: dict
    params: dict = field(default_factory=dict)
    requires: list = field(default_factory=list)
    escalate: list = field(default_factory=list)     # [{severity, when}], ``when`` parsed
    evidence: list = field(default_factory=list)
    estimate: dict | None = None
    references: list = field(default_factory=list)
    why: dict | None = None
    pack: str = "builtin"
    path: str = ""
    cases_path: str | None = None
    # how findings relate (engine/resolve.py): what the finding is about, its cause, the rules whose
    # findings it folds in (supersedes) or drops (refutes), and whether it names something to fix
    subject: str = "run"
    cause: str = ""
    supersedes: list = field(default_factory=list)   # [{rule, when, because}], ``when`` parsed (or None)
    refutes: list = field(default_factory=list)
    refines: str | None = None                        # the rule whose cause this one splits (its missing inputs then hide nothing)
    actionable: bool = True
    lends_severity: bool = True                       # False: folded into a cause, its severity does not raise the cause's
    combine: str | None = None                        # "kernels": one finding for all the kernels it fires on
    advice_when: list = field(default_factory=list)  # one condition (parsed, or None) per advice item
    pack_params: dict = field(default_factory=dict)  # the pack's params (severity by gain, minimum work)
    pack_conditions: dict = field(default_factory=dict)   # name -> parsed condition
    locate: str | None = None                         # the points whose places in the user's code the finding lists (facts/where_points.py)

    def __post_init__(self):
        """Every condition parsed into condition.py's nodes, once (a rule made from its YAML, from the
        pack cache's JSON or in a test; nodes already parsed are kept)."""
        parse = condition.parse
        self.when = parse(self.when)
        self.escalate = [{**e, "when": parse(e["when"])} for e in self.escalate]
        self.supersedes = [{**x, "when": parse(x.get("when"))} for x in self.supersedes]
        self.refutes = [{**x, "when": parse(x.get("when"))} for x in self.refutes]
        self.advice_when = [parse(c) for c in self.advice_when]
        self.pack_conditions = {k: parse(c) for k, c in self.pack_conditions.items()}

    def param_values(self, overrides: dict | None = None) -> dict:
        vals = {k: v["default"] for k, v in self.params.items()}
        vals.update(overrides or {})
        return vals

    def facts_used(self) -> list[str]:
        return list(dict.fromkeys(c.fact for c in walk_conditions(self.when)))

    def conditions_raw(self) -> dict:
        """The rule's conditions in their YAML form, by field (what the pack cache keeps as JSON)."""
        raw = condition.raw
        return {"when": raw(self.when), "escalate": [{**e, "when": raw(e["when"])} for e in self.escalate],
                **{k: [{**x, "when": raw(x["when"])} for x in getattr(self, k)] for k in ("supersedes", "refutes")},
                "advice_when": [raw(c) for c in self.advice_when],
                "pack_conditions": {k: raw(c) for k, c in self.pack_conditions.items()}}


@dataclass
class Pack:
    name: str
    version: str
    description: str
    path: str
    rules: list[Rule]
    params: dict = field(default_factory=dict)
    conditions: dict = field(default_factory=dict)
    phases: list = field(default_factory=list)   # pack.yaml ``phases:``: NVTX phase-name entries tried before facts/phases.yaml's (a list: the pack cache is JSON)
    categories: dict = field(default_factory=dict)   # pack.yaml ``categories:``: name -> {title, level, side} (JSON: the pack cache)

    def __post_init__(self):
        self.conditions = {k: condition.parse(c) for k, c in self.conditions.items()}   # name -> parsed condition


PACK_PARAMS = {
    "gain_for_low_pct": "a finding whose estimated gain (% of the window) is below this is at most info",
    "gain_for_medium_pct": "below this gain a finding is at most low",
    "gain_for_high_pct": "below this gain a finding is at most medium",
    "gain_for_critical_pct": "below this gain a finding is at most high",
    "min_gpu_busy_ms": "less GPU work than this in the window (ms) is too little to judge: no finding above low",
    "min_gpu_ops": "fewer kernels than this in a window without copies is too little to judge: no finding above low",
}
SUBJECTS = ("run", "idle", "busy", "kernels", "kernel", "copies", "nccl", "ranks", "iterations", "startup")


def walk_conditions(cond):
    """Every leaf ``{fact, op, value}`` (condition.Leaf) of a parsed condition."""
    return condition.fact_leaves(cond)


_Reads = Reads   # the finding parts' mapping view (nsys_expert/reads.py)


@dataclass(slots=True)
class Evidence(_Reads):
    """A fact a finding rests on: its value in the run (or the kernel), the threshold and operator of the
    condition that tested it (``None`` for a fact the rule names as evidence but does not test), its unit
    and the source it came from. The JSON contract's ``findings[].evidence[]`` (``report.finding_json``)."""
    fact: str
    value: object
    threshold: object                  # a number, a string, or "<fact> x <factor>" for a fact-to-fact test
    op: str | None
    unit: str
    source: str | None


@dataclass(slots=True)
class Support(_Reads):
    """A finding that resolution took into another (``resolve``): ``relation`` says how (``refuted``: it was
    wrong about the subject; ``folded``: the same time under a deeper cause; ``also``: the same rule on
    another kernel), ``because`` why (the relation's text, or None). Its own words, scope, gain and evidence
    as they were when it was taken in. The JSON contract's ``findings[].supporting[]``."""
    rule: str
    relation: str
    because: str | None
    title: str
    message: str
    scope: dict
    estimated_gain_pct: float | None
    evidence: list[Evidence]


@dataclass(slots=True)
class IdlePhase(_Reads):
    """The NVTX phase of the step that holds most of the GPU's idle time (issue 46), on a finding about
    the idle time when it holds ``PHASE_MIN_SHARE_PCT`` of it or more: the phase (``optimizer``, ``data``,
    ...), its range names and its share of the idle time (%). The JSON contract's ``findings[].phase``."""
    phase: str | None
    names: str | None
    share_pct: float


@dataclass(slots=True)
class Finding:
    """What a rule's firing says about a run (issue 49, item 1): made by the engine (``evaluate``),
    completed by ``resolve`` (the fields after ``references``), turned into the JSON contract's dict by
    the report (``report.finding_json``) and nowhere else. A finding holds these fields and no others:
    ``f["x"] = ...`` of a name not declared here is an error, so no stage adds a key the type does not
    name; its parts are declared types too (``Evidence``, ``Support``, ``IdlePhase``), and the report only
    converts and orders. ``resolve`` reads and writes the fields; the finding also reads as a mapping
    (``f["rule"]``, ``f.get``) for code that takes a finding or the report's dict of it (``critical.side``),
    the rule cases and tests; an optional field that is ``None`` reads as absent (``get`` gives its
    default). New code reads the attributes."""
    rule: str
    category: str
    severity: str                      # after resolve: capped by the gain (``rule_severity`` keeps the rule's own)
    title: str
    message: str
    evidence: list[Evidence]
    advice: list[str] | None           # rendered for the findings that remain after resolution
    estimated_gain_pct: float | None   # the rule's estimate (% of the window); after resolve: capped
    confidence: str                    # measured, or likely (a summary-tier fact)
    scope: dict                        # {"kernel": name} for a kernel rule, else {}
    pack: str
    references: list
    # set by resolve
    subject: str | None = None         # run, kernels, kernel:<name>, ...
    cause: str | None = None
    supporting: list[Support] = field(default_factory=list)   # the findings it took in, theirs after each
    rule_severity: str | None = None
    subject_share_pct: float | None = None
    gain_basis: str | None = None      # replayed, summary, estimated
    estimated_gain_range_pct: list | None = None
    gain_capped_by: str | None = None
    phase: IdlePhase | None = None     # a finding about the idle time: the step's phase that holds most of it
    locations: list[Location] = field(default_factory=list)   # where in the user's code (issue 55), largest share first

    # the mapping view, C-level (a Python method took 3x a dict's time)
    __getitem__ = object.__getattribute__
    __setitem__ = object.__setattr__

    def get(self, key: str, default=None):
        v = getattr(self, key, None)
        return default if v is None else v

    def setdefault(self, key: str, default=None):
        v = getattr(self, key)
        if v is None:
            setattr(self, key, default)
            return default
        return v

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, None) is not None


@dataclass(slots=True)
class SubjectGain(_Reads):
    """One subject's part of the recoverable time: its share of the window, the union of its findings'
    gains (each fix on what the others leave) and how many findings gain on it."""
    subject: str
    share_pct: float
    gain_pct: float
    findings: int


@dataclass(slots=True)
class PathCap(_Reads):
    """The replayed critical path's bound on the total (``engine/critical.py``): no finding's fix shortens
    the side ``fact`` (``critical_path_host_pct`` or ``critical_path_gpu_pct``, of ``value`` %), so the
    total is at most ``cap_pct``."""
    cap_pct: float
    fact: str
    value: float


@dataclass(slots=True)
class Recoverable(_Reads):
    """The time the findings win back together (``gains.recoverable``): the union of their gains, or with a
    replayed iteration (``basis: replayed``) their transformations ``replayed`` together; held to the
    critical path's bound when one applies. The JSON contract's ``recoverable``."""
    total_pct: float
    subjects: list[SubjectGain]
    basis: str | None = None           # "replayed", or None: the union of the gains
    replayed: list[str] | None = None
    critical_path: PathCap | None = None


@dataclass(slots=True)
class TooLittleWork(_Reads):
    """Too little GPU work to judge the run (``gains.guard``): every finding capped at low. The JSON
    contract's ``too_little_work``."""
    gpu_busy_ms: float
    min_gpu_busy_ms: float
    gpu_ops: int | None = None         # set when the window's few operations decided (``min_gpu_ops``)
    min_gpu_ops: int | None = None
    profiler_steps: int | None = None  # set when a torch.profiler trace's one step decided
