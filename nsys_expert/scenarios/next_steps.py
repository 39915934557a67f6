"""What to collect next: the rules a diagnosis could not evaluate -> the commands that supply what they lack.

Decided from what the input holds, never from the wording of a reason:
- a report the input lacks is exported from the same profile, by the report names of the nsys that
  wrote the input (2021-2022: ``cudaapitrace``); an SQLite export lacks a table only when nsys recorded
  nothing of its kind, so that case is a new profile with the right ``--trace``, not an export;
- a report the input holds is never exported again: a fact it could not give has another cause
  (CUDA graphs traced as a whole -> ``--cuda-graph-trace=node``; NVTX ranges that mark no iterations ->
  mark each step; a window with no kernels -> nothing to collect);
- NVTX ranges the input holds (``nvtx_sum`` and the other NVTX summaries count) are never asked for:
  with a step among them (an iteration, or the step the phases found) nothing is to be marked;
- Nsight Compute: the hot kernels by exact function name (``regex:^(a|b)$``), the warm-up launches
  skipped, the same command the facts computed; the raw page when only the details page was given.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import os
import re

from ..notes import Note
from .commands import Command, era_of, kernel_regex, ncu_exports, nsys_export_sqlite, nsys_stats, report_name
from .plans import DEFAULT_APP, Options, build, export_lines

_REPORT_OF = {"gpu_trace": "cuda_gpu_trace", "api_trace": "cuda_api_trace", "nvtx_trace": "nvtx_pushpop_trace",
              "kern_sum": "cuda_gpu_kern_sum", "api_sum": "cuda_api_sum", "mem_time_sum": "cuda_gpu_mem_time_sum",
              "mem_size_sum": "cuda_gpu_mem_size_sum", "nvtx_sum": "nvtx_sum", "osrt_sum": "osrt_sum",
              "kern_exec_sum": "cuda_kern_exec_sum"}
_NVTX_TABLES = {"nvtx_trace", "nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum"}
# what a new profile must trace to record a table an SQLite export lacks
_TRACE_FOR = {"nvtx_trace": "nvtx", "nvtx_sum": "nvtx", "osrt_sum": "osrt"}


def _held_as(report: str, era: str) -> str | None:
    """The canonical table the report of this name gives in this era (``nvtx_sum`` -> nvtx_pushpop_sum
    in 2020-2021, where the name is ``nvtxppsum``)."""
    from ..load import schema
    spec = schema.SPEC_BY_NAME.get(report_name(report, era))
    return spec.table if spec else None


def ncu_target(hint: Note | None) -> tuple[list[str], int, int] | None:
    """(function names, launches to skip, launches to profile) from the facts' ncu command (facts/ncu.py: a
    ``phrase.ncu_command`` note whose fields name the top kernels by nsys time and the warm-up launches before
    the window), read from its fields, never from its words."""
    f = hint.fields if isinstance(hint, Note) else {}
    names = [n for n in f.get("kernels") or () if n]
    return (names, int(f["skip"]), int(f["count"])) if names else None


OSRT_HOST_IDLE_PCT = 5.0   # idle share with the host outside CUDA above which the OS runtime trace is worth a step


@dataclass(frozen=True, slots=True)
class NextStep:
    """One step of "Next steps": what to collect (``need``) and why (``why``), each a ``Note`` the report says
    in its language, the rules it lets run, the exact commands. ``limiter``: the host-sampling step the
    verdict adds when the host's own work limits the run (a new profile of the host decides no rule). The
    JSON contract's ``next_steps[]`` (``report.diagnosis``); it also reads as a mapping (``s["commands"]``)
    for the tests."""
    need: Note
    why: Note
    rules: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    limiter: bool = False

    __getitem__ = object.__getattribute__

    def get(self, key: str, default=None):
        v = getattr(self, key, None)
        return default if v is None else v


def _step(need: str, why: str, rules, commands, **fields) -> NextStep:
    """A step whose need and why are the catalog's ``step.<need>`` / ``step.<why>`` phrases (notes/codes.py)."""
    need_f = {k: v for k, v in fields.items() if k in ("reports", "what")}
    why_f = {k: v for k, v in fields.items() if k not in need_f}
    return NextStep(Note("step." + need, need_f), Note("step." + why, why_f), list(rules), list(commands))


def _needs(not_evaluated, facts, held) -> dict[str, list[str]]:
    """need -> rules. Needs: a table id (export or new profile), 'ncu', 'ncu_raw', 'graph-node', 'nvtx-steps'.
    ``not_evaluated``: the engine's ``NotEvaluated`` entries (their ``rule`` and missing ``facts``)."""
    from ..facts import registry

    out: dict[str, list[str]] = {}
    f = facts or {}
    # graph launches whose kernels the GPU trace does not hold one by one (torch.profiler and an export traced
    # by node hold them: graph_kernel_count > 0 there)
    graphs = bool((f.get("graph_launch_count") or f.get("graph_launch_count_span")) and not f.get("graph_kernel_count"))
    for entry in not_evaluated or []:
        rule = entry.rule
        got: list[str] = []
        for f in entry.facts or []:
            d = registry.lookup("run", f) or registry.lookup("kernel", f)
            if d is None or "ranks" in d.needs:
                continue
            if "ncu" in d.needs:
                if "ncu" not in held:
                    got.append("ncu")
                elif "ncu_raw" not in held:
                    got.append("ncu_raw")
                continue
            traces = [n for n in d.needs if n.endswith("trace")]
            if not any(n in held for n in d.needs):
                got.append(d.needs[0])                     # "needs A or B": A is the richer one
            elif traces and not any(t in held for t in traces):
                got.append(traces[0])                      # summaries only: the trace gives the window's value
            elif "nvtx_trace" in d.needs and "nvtx_trace" in held and "iter_count" not in (facts or {}):
                got.append("nvtx-steps")                   # NVTX ranges there, but none marks the iterations
            elif graphs and "gpu_trace" in held:
                got.append("graph-node")                   # the trace is there but blind to the graphs' kernels
        for n in dict.fromkeys(got):
            out.setdefault(n, [])
            if rule not in out[n]:
                out[n].append(rule)
    return {n: sorted(rules) for n, rules in out.items()}


def next_steps(not_evaluated: list, facts: dict, *, inputs: list[dict] | None = None,
               report: str = "report.nsys-rep", app=DEFAULT_APP, ncu_hint: Note | None = None) -> list[NextStep]:
    """For the rules a diagnosis could not evaluate, the exact commands that collect what they lack.

    ``not_evaluated``: the engine's ``NotEvaluated`` entries (``rule``, missing ``facts``); ``facts``: its run
    facts; ``inputs``: its inputs (``kind``, ``table``, ``version``, ``path``) - what the input holds and
    which nsys wrote it; ``report``: the .nsys-rep they came from; ``ncu_hint``: the facts' ncu command.
    Each step a ``NextStep``, in the order: export, new profile, Nsight Compute.
    """
    inputs = inputs or []
    if any(i.get("kind") == "kineto" for i in inputs):
        return _kineto_steps(not_evaluated, facts, inputs, report, app, ncu_hint)
    held = {i.get("table") for i in inputs if i.get("table")}
    exported = any(i.get("kind") == "nsys-sqlite" for i in inputs)
    era = era_of(inputs)
    needs = _needs(not_evaluated, facts, held)
    base = report[:-len(".nsys-rep")] if report.endswith(".nsys-rep") else report
    c = _Asked(needs, held, exported, era, base, base.rsplit("/", 1)[-1], tuple(app), inputs, facts or {})
    return _export_steps(c) + _nvtx_steps(c) + _osrt_steps(c) + _tool_steps(c, ncu_hint)


@dataclass(frozen=True)
class _Asked:
    """What the next steps are made from: the inputs each rule lacks, what the input holds and which nsys
    wrote it, the report's name (``base`` with its folder, ``stem`` without), the application."""
    needs: dict
    held: set
    exported: bool
    era: object
    base: str
    stem: str
    app: tuple
    inputs: list
    facts: dict


def _export_steps(c: _Asked) -> list[NextStep]:
    """Reports to export from the same profile, or a profile that records them."""
    needs, held, exported, era, base, stem, app = c.needs, c.held, c.exported, c.era, c.base, c.stem, c.app
    steps: list[NextStep] = []

    tables = [n for n in _REPORT_OF if n in needs]   # one order whatever rules lack them
    # a report the input already holds under this era's name (before 2021 nvtx_sum is nvtxppsum, the push-pop
    # summary an empty nsys 2019.5 section gave): exporting it again gives the same table (the NVTX step says why)
    tables = [n for n in tables if _held_as(_REPORT_OF[n], era) not in held]
    if tables and not exported:
        reports = [_REPORT_OF[n] for n in tables]
        steps.append(_step("need_reports", "why_export", sorted({r for n in tables for r in needs[n]}),
                           [nsys_stats(reports, base + ".nsys-rep", base, era).line()],
                           reports=tuple(report_name(r, era) for r in reports)))
    trace = ",".join(dict.fromkeys(["cuda", "nvtx", "osrt"] + [_TRACE_FOR[n] for n in tables if n in _TRACE_FOR]))
    if tables and exported:
        steps.append(_step("need_profile_records", "why_not_traced", sorted({r for n in tables for r in needs[n]}),
                           build("quick", Options(app=app, output=stem, trace=trace)).lines() + export_lines(stem),
                           what=tuple(_REPORT_OF[n] for n in tables), trace=trace))
    return steps


def _nvtx_steps(c: _Asked) -> list[NextStep]:
    """NVTX step ranges, when the input marks no repeated step."""
    needs, exported, stem, app, inputs, facts = c.needs, c.exported, c.stem, c.app, c.inputs, c.facts
    steps: list[NextStep] = []
    # NVTX ranges the input already holds (a summary or the trace) are never asked for again: with a step
    # among them (an iteration, or the step range the phases found) there is nothing to mark
    nvtx_held = any(i.get("table") in _NVTX_TABLES and (i.get("rows") is None or i.get("rows", 0) > 0) for i in inputs)
    # (the phases' step is a step only when it repeats: a script's one range around everything is not)
    steps_known = any(k in (facts or {}) for k in ("iter_count", "iter_est_count")) or \
        ((facts or {}).get("data_phase_parent_count") or 0) >= 2
    if ("nvtx-steps" in needs or (not exported and ("nvtx_trace" in needs or "nvtx_sum" in needs))) \
            and not (nvtx_held and steps_known):
        rules = sorted(set(needs.get("nvtx-steps", []) + needs.get("nvtx_trace", []) + needs.get("nvtx_sum", [])))
        held_nvtx = "nvtx-steps" in needs or nvtx_held
        steps.append(_step("need_nvtx", "why_nvtx_no_step" if held_nvtx else "why_nvtx_none", rules,
                           build("quick", Options(app=app, output=stem)).lines()))
    return steps


def _osrt_steps(c: _Asked) -> list[NextStep]:
    """The OS runtime summary and the per-thread OS runtime trace."""
    needs, held, exported, base, stem, app, facts = c.needs, c.held, c.exported, c.base, c.stem, c.app, c.facts
    steps: list[NextStep] = []
    if "osrt_sum" in needs and not exported:
        steps.append(_step("need_osrt_sum", "why_osrt_sum", needs["osrt_sum"],
                           build("quick", Options(app=app, output=stem)).lines()))
    # the per-thread OS runtime trace tells the host's idle time apart (working, waiting for data, asleep,
    # waiting for the GIL): worth asking for only where the GPU is measured idle while the host is outside CUDA
    if "osrt_trace" in needs and (facts or {}).get("gpu_idle_host_pct", 0) >= OSRT_HOST_IDLE_PCT:
        if exported:   # an SQLite export without OSRT_API: the profile did not trace the OS runtime: a new one
            why = "why_osrt_export"
            rep, profile = stem, build("quick", Options(app=app, output=stem)).lines()
        else:          # CSVs: nsys stats has no per-thread OS runtime report; the SQLite export has the calls
            why = "why_osrt_stats" if "osrt_sum" in held else "why_osrt_stats_none"
            rep, profile = base, []
        steps.append(_step("need_osrt_trace", why, needs["osrt_trace"],
                           profile + [nsys_export_sqlite(rep + ".nsys-rep", rep + ".sqlite").line(),
                                      Command(("nsys-expert", "diagnose"), (), (rep + ".sqlite",)).line()]))
    return steps


def _tool_steps(c: _Asked, ncu_hint: Note | None) -> list[NextStep]:
    """CUDA graph kernels in the trace, Nsight Compute's metrics and its raw page."""
    needs, stem, app, inputs = c.needs, c.stem, c.app, c.inputs
    steps: list[NextStep] = []
    if "graph-node" in needs:
        steps.append(_step("need_graph_nodes", "why_graph_nodes", needs["graph-node"],
                           build("quick", Options(app=app, output=stem, cuda_graph_trace="node")).lines()
                           + export_lines(stem)))
    target = ncu_target(ncu_hint)
    if "ncu" in needs and target:
        names, skip, count = target
        plan = build("ncu-kernel", Options(app=app, kernel=kernel_regex(names), output="ncu_kernel",
                                           launch_skip=skip, launch_count=count))
        steps.append(_step("need_ncu", "why_ncu_skip" if skip else "why_ncu", needs["ncu"], plan.lines(),
                           kernels=tuple(names), **({"n": skip} if skip else {})))
    if "ncu_raw" in needs:
        details = next((i["path"] for i in inputs if i.get("kind") == "ncu-details"), "ncu_kernel_details.csv")
        stem_ncu = re.sub(r"_details$", "", os.path.splitext(os.path.basename(details))[0])
        steps.append(_step("need_ncu_raw", "why_ncu_raw", needs["ncu_raw"],
                           [c.line() for c in ncu_exports(stem_ncu, pages=("raw",))]))
    return steps


def _kineto_steps(not_evaluated, facts, inputs, report, app, ncu_hint) -> list[NextStep]:
    """A torch.profiler trace: its steps are ProfilerStep ranges (prof.step()), not NVTX ranges; on an AMD
    GPU no step names nsys or ncu (NVIDIA's tools); on an NVIDIA GPU their steps stay (a second view)."""
    held = {i.get("table") for i in inputs if i.get("table")}
    needs = _needs(not_evaluated, facts, held)
    steps: list[NextStep] = []
    step_rules = sorted(set(needs.get("nvtx-steps", []) + needs.get("nvtx_trace", []) + needs.get("nvtx_sum", [])))
    if step_rules:
        steps.append(_step("need_profiler_steps", "why_profiler_steps", step_rules, []))
    if (facts or {}).get("gpu_vendor") == "amd":
        return steps
    rest = next_steps([e for e in not_evaluated or [] if e.rule not in step_rules], facts,
                      inputs=[dict(i, kind="kineto-as-nsys") for i in inputs], report=report, app=app,
                      ncu_hint=ncu_hint)
    # no .nsys-rep to export from: keep the steps that make a new nsys or ncu profile
    return steps + [s for s in rest if s.need.code != "step.need_nvtx" and s.commands
                    and not s.commands[0].startswith(("nsys stats", "nsys export"))]
