"""A scenario's plan as data: the playbook's constants (``playbook.yaml``), the :class:`Options` a user
gives, the :class:`Plan` a builder returns (commands, wrapper files, notes, what each option is
for) and the words that explain each option. The builders are in ``plans.py``."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..notes import Note, Said
from .commands import Command, Opt, playbook, quote

PLAYBOOK = playbook()
STATS_REPORTS = tuple(PLAYBOOK["stats_reports"])
PYTORCH_MODES = tuple(PLAYBOOK["pytorch_modes"])
TRACE_VALUES = tuple(PLAYBOOK["trace_values"])
DEFAULT_APP = tuple(PLAYBOOK["default_app"])
NSYS_HELP = PLAYBOOK["nsys_help"]
NCU_HELP = PLAYBOOK["ncu_help"]
# why each option is there, in English (another language's words: its message catalog, said by cli/command.py)
TRACE_DOC = dict(PLAYBOOK["trace_doc"])
OPTION_DOC = dict(PLAYBOOK["option_doc"])
VERB_DOC = {tuple(k.split(" ", 1)): v for k, v in PLAYBOOK["verb_doc"].items()}
ALIASES = dict(PLAYBOOK["aliases"])
SITUATIONS = {k: v["situation"] for k, v in PLAYBOOK["scenarios"].items()}
COLLECTABLE = tuple(PLAYBOOK["collectable"])


@dataclass(frozen=True)
class WrapperFile:
    name: str
    content: str
    executable: bool = True


@dataclass
class Plan:
    scenario: str
    title: Said                          # a plan.* note where it holds a value, else the playbook's English
    commands: list[Command]
    files: list[WrapperFile] = field(default_factory=list)
    notes: list[Said] = field(default_factory=list)
    container: list[str] = field(default_factory=list)   # lines to run / paste before the commands
    explain: list[tuple[str, Said]] = field(default_factory=list)  # (option as printed, why)
    outputs: list[str] = field(default_factory=list)      # what the commands write

    def lines(self) -> list[str]:
        return [c.line() for c in self.commands]

    def shell(self, multiline: bool = True) -> str:
        return "\n".join(c.multiline() if multiline else c.line() for c in self.commands)


@dataclass(frozen=True)
class Options:
    app: tuple[str, ...] = DEFAULT_APP
    output: str | None = None            # report name (no extension)
    trace: str | None = None             # overrides the scenario's --trace list
    pytorch: tuple[str, ...] = ("autograd-nvtx",)
    ranks: tuple[int, ...] = (0,)
    nproc_per_node: int = 8
    nnodes: int = 1
    range_name: str = "profile_region"
    delay: int = 120
    duration: int = 30
    kernel: str | None = None            # ncu kernel-name regex (without the regex: prefix)
    launch_skip: int | None = None
    launch_count: int | None = None
    input: str | None = None             # stats: the .nsys-rep to export
    before: tuple[str, ...] | None = None
    after: tuple[str, ...] | None = None
    cuda_graph_trace: str | None = None  # graph | node
    container: str | None = None         # docker | k8s
    extra: tuple[str, ...] = ()          # more nsys / ncu options, passed through as given
    wrapper_dir: str | None = None       # where the wrapper files are written (for the launch command)
    gpu_metrics: str | None = None       # --gpu-metrics-devices: "all" or GPU ids ("0,1"); None: off


# ------------------------------------------------------------------------- why each option is there
def explain_option(o: Opt, tool: str = "nsys", verb: str = "") -> Said:
    """Why option ``o`` is there, in English (``--trace``: a ``plan.trace_doc`` note, each value's words)."""
    key = o.key
    if (verb, key) in VERB_DOC:
        return VERB_DOC[(verb, key)]
    if tool == "ncu" and key in ("-o", "-f", "-i"):
        return OPTION_DOC[key]
    key = ALIASES.get(key, key)
    if key == "--trace":
        value = o.words[0].split("=", 1)[1] if "=" in o.words[0] else (o.words[1] if len(o.words) > 1 else "")
        return Note("plan.trace_doc", {"values_clauses": tuple(Note("plan.trace_value", {"value": v, "why": TRACE_DOC[v]})
                                                              for v in value.split(",") if v in TRACE_DOC)})
    if key in OPTION_DOC:
        return OPTION_DOC[key]
    return "passed through to the tool as given"


def explanation(plan: Plan) -> list[tuple[str, Said]]:
    seen, out = set(), []
    for c in plan.commands:
        tool = "ncu" if c.head and c.head[0] == "ncu" else "nsys"
        verb = c.head[1] if len(c.head) > 1 else ""
        for o in c.opts:
            why = explain_option(o, tool, verb)
            if (c.head, o.key, why) in seen:
                continue
            seen.add((c.head, o.key, why))
            out.append((" ".join(quote(w) for w in o.words), why))
    return out
