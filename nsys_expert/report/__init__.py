"""report: rank the findings, decide the verdict and put the diagnosis into words (JSON, Markdown).

``build`` makes the run's ``Diagnosis`` (``diagnosis.py``: declared types, between the engine and the
renderers); ``to_json`` writes the JSON contract of design.md (schema_version 1), ``render_markdown`` fills
the Jinja2 template, ``html.render_html`` and ``terminal.summary`` read the same Diagnosis. The words of
each finding come from its rule file; the words around them come from ``LABELS`` (en / zh, ``labels.py``);
the findings ranked and turned into the contract's dicts (the engine's ``Finding`` read, never written) in
``findings.py``.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os

import jinja2

from .. import __version__, cache
from ..facts import FactSet, registry
from ..facts.names import short_kernel_name
from ..load import Profile
from ..notes import Note
from ..textsafe import visible
from . import shaping, verdict
from .diagnosis import SCHEMA_VERSION, Diagnosis, JobInfo, RankRow, Ranked, Verdict, json_doc, ranked  # noqa: F401
from .findings import (evidence_json, finding_json, phase_json, rank_findings, recoverable_json,  # noqa: F401 - report.*
                       support_json, too_little_work_json)
from .said import note_groups, single_stepped, group_not_evaluated, split_warnings  # noqa: F401 - report.split_warnings
from .shaping import MIN_KERNEL_ADVICE_GAIN_PCT, actionable  # noqa: F401 - report.actionable
from .labels import LABELS, labels, with_categories  # noqa: F401 - report.LABELS


def clean_value(v):
    """A fact's value as the JSON report writes it (floats rounded to 4 places, non-finite as null)."""
    return _clean(v)


def _clean(v):
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        return round(v, 4)
    return v


def _window(fs: FactSet) -> dict:
    return fs.window.to_json() if fs.window else {"start_ns": None, "end_ns": None, "source": "whole", "iterations": 0}


def _decided(findings: list[Ranked], facts: dict, inputs: list, tables: dict, evaluation, not_evaluated: list,
             window, recorded: str = "some") -> tuple[Verdict, list]:
    """The verdict of a report (or of a rank's row) and its next steps: the commands that collect what the
    rules under ``not_evaluated`` lacked, then the host-sampling step when the host is the limiter."""
    steps = _next_steps(not_evaluated, facts, inputs, tables)
    typed = [x.finding for x in findings]
    lim = verdict.limiter(typed, facts, evaluation.categories)
    if lim:
        steps.append(verdict.HOST_SAMPLING_STEP)
    out = verdict.decide(typed, evaluation.not_evaluated, facts, steps, window, tables.get("phases"),
                         evaluation.categories)
    # a torch.profiler trace (the only input that names its GPUs' maker) is profiled again with torch.profiler
    # (on an AMD GPU no command: `command quick` prints nsys beside the torch.profiler snippet)
    again = shaping.PROFILE_AGAIN if "gpu_vendor" not in facts else \
        None if facts["gpu_vendor"] == "amd" else shaping.PROFILE_AGAIN_TORCH
    if evaluation.too_little_work is not None:     # engine/gains.py's minimum-work guard: no finding decides
        # more steps decide, not ncu on the few kernels there are (a new profile or an export stays)
        keep = out.next_command and not out.next_command.startswith("ncu ")
        out = verdict.undecided(out, "too_little_work", out.next_command if keep else again)
    if recorded != "some":   # nothing to judge: that is the verdict, not a warning
        out = verdict.undecided(out, "no_rows" if recorded == "nothing" else "no_gpu_work", again)
    if lim:
        out = dataclasses.replace(out, limiter=lim)
    return out, steps


NO_SETTINGS = {"file": None, "packs": [], "select": [], "ignore": [], "parameters": []}


def build(prof: Profile, fs: FactSet, evaluation, lang: str = "en",
          ranks: list[tuple[str, Profile, FactSet]] | None = None, settings: dict | None = None,
          notes=()) -> Diagnosis:
    """The diagnosis of one run. ``ranks``: a job's ranks ``[(label, profile, facts)]`` in the order of
    ``evaluation.ranks``, a row each (``job.build_job`` makes a job's diagnosis with them). ``settings``: what
    was asked beyond the defaults (``NO_SETTINGS``'s keys). ``notes``: said of the inputs, after the warnings
    (one run read twice)."""
    findings = ranked(evaluation.findings, evaluation.categories)
    tables = {k: v for k, v in sorted(fs.tables.items()) if not k.startswith("_")}   # one order (threads)
    facts = {k: _clean(v) for k, v in sorted(fs.run.items())}
    recorded = shaping.recorded(prof)
    v, steps = _decided(findings, facts, prof.inputs, tables, evaluation, evaluation.not_evaluated, fs.window, recorded)
    job = None
    if ranks is not None:
        job = JobInfo([], "", [_rank_row(label, rprof, rfs, rev)
                               for (label, rprof, rfs), (_, rev) in zip(ranks, evaluation.ranks)])
    return Diagnosis(
        tool={"name": "nsys-expert", "version": __version__},
        inputs=prof.inputs,
        window=_window(fs),
        facts=facts,
        findings=findings,
        not_evaluated=evaluation.not_evaluated,
        warnings=[w for w in list(evaluation.notes) + prof.warnings + fs.warnings
                  if not shaping.twin_read(w, prof.inputs)] + list(notes),
        recoverable=evaluation.recoverable,
        too_little_work=evaluation.too_little_work,
        fact_sources=dict(sorted(fs.sources.items())),   # the fact groups run in threads: one order
        facts_absent=dict(sorted(fs.absent.items())),
        environment={"gpus": prof.meta.get("gpus", []), "report_eras": prof.meta.get("report_eras", []),
                     **{k: v for k, v in prof.meta.items() if k not in ("gpus", "report_eras")}},
        tables=tables,
        settings={**NO_SETTINGS, **(settings or {})},
        next_steps=steps,
        verdict=v,
        lang=lang,
        recorded=recorded,
        job=job,
        categories=evaluation.categories)


def _rank_row(label: str, prof: Profile, fs: FactSet, evaluation) -> RankRow:
    """A rank's row of a multi-rank report: its own facts (the cross-rank ones with them), window,
    verdict and findings (their titles: the job's findings above carry the words and advice). Its verdict
    is decided without the window's steady share and without next steps of its own."""
    findings = ranked(evaluation.findings, evaluation.categories)
    facts = {k: _clean(v) for k, v in sorted(fs.run.items())}
    tables = {k: v for k, v in fs.tables.items() if not k.startswith("_")}
    v, _steps = _decided(findings, facts, prof.inputs, tables, evaluation, [], None)
    return RankRow(label, prof.meta.get("pid"), facts, _window(fs), v, findings)


def _next_steps(not_evaluated: list, facts: dict, inputs: list, tables: dict) -> list:
    """The exact commands that collect what the rules under not_evaluated lacked (scenarios.next_steps)."""
    from .. import scenarios
    from ..load import schema

    name = "report.nsys-rep"
    for i in inputs:
        base = os.path.basename(i["path"])
        stem, ext = os.path.splitext(base)
        if ext in (".nsys-rep", ".qdrep", ".sqlite"):
            name = f"{stem}.nsys-rep"
            break
        rep = schema.report_name_from_filename(base)
        if rep and base.lower().find(rep) > 0:
            name = base[: base.lower().find(rep)].rstrip("_.-") + ".nsys-rep"
            break
    try:
        return scenarios.next_steps(not_evaluated, facts, inputs=inputs, report=name,
                                    ncu_hint=tables.get("ncu_command"))
    except Exception:  # noqa: BLE001 - advice about the next run must never break this report
        return []


def to_json(d: Diagnosis | dict) -> str:
    """The JSON contract (``diagnosis.json_doc``); a dict (a stored report read back) as it is."""
    public = json_doc(d) if isinstance(d, Diagnosis) else {k: v for k, v in d.items() if k != "lang" and not k.startswith("_")}
    return json.dumps(public, indent=2, ensure_ascii=False, default=str) + "\n"


def _md_code(s) -> str:
    s = str(s).replace("`", "'").replace("|", "\\|").replace("\n", " ")
    return f"`{s}`"


def _md_text(s) -> str:
    """Escape text from the profile (kernel / NVTX names) for Markdown prose and tables."""
    s = str(s)
    for ch in ("\\", "|", "<", ">", "*", "_", "[", "]", "`"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _md_safe(s) -> str:
    """Prose that may quote profile text (kernel names in a message): no raw HTML, no table breaks. A
    ``<`` outside code spans gets a backslash before it (CommonMark draws that as ``<``, and a terminal
    shows no ``&lt;`` entity: issue 48, item 12); inside a code span it is literal already."""
    parts = str(s).replace("\n", " ").split("`")
    if len(parts) % 2 == 0:          # an unpaired backtick opens no code span: escape all of it
        return "`".join(parts).replace("<", "\\<")
    return "`".join(p if i % 2 else p.replace("<", "\\<") for i, p in enumerate(parts))   # a lone ">" opens no tag


def number_text(v, nd: int = 1) -> str:
    """A number for a reader (Babel's number formatting, the CLDR patterns; the root locale, whose
    data loads in a third of the time of en and writes numbers the same way): thousands grouped,
    ``nd`` decimals from 1 up, no decimals from 100 up or for a whole number (``grid_size 1``, not
    ``1.00``), three significant digits under 1 and never scientific notation (``0.000009``, not
    ``9e-06``)."""
    from babel.numbers import format_decimal

    if v is None or isinstance(v, jinja2.Undefined):
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return format_decimal(v, "#,##0", locale="root")
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if abs(v) >= 100 or (v.is_integer() and abs(v) < 1e15):
            return format_decimal(v, "#,##0", locale="root")
        if abs(v) >= 1:
            return format_decimal(v, "#,##0." + "0" * nd if nd > 0 else "#,##0", locale="root")
        return format_decimal(v, "@##", locale="root")
    return str(v)


def window_span_text(w) -> str:
    """The window's start and end in seconds as ``--window`` takes them back (``START–END``): as ``fmt(3)``
    under 100 s; from 100 s up without thousands separators and with the decimals that tell start from end
    (a torch.profiler trace's clock reads 5,656,674 s: 'fmt' printed '5,656,674–5,656,674', issue 56, item 10)."""
    a, b = w["start_ns"] / 1e9, w["end_ns"] / 1e9
    if max(abs(a), abs(b)) < 100:
        return f"{number_text(a, 3)}–{number_text(b, 3)}"
    for d in range(3, 10):
        sa, sb = f"{a:.{d}f}", f"{b:.{d}f}"
        if sa != sb:
            break
    return f"{sa}–{sb}"


# A name shown in full (an HTML tooltip) is cut to this many characters: a 1 MB kernel name is kept once,
# whole, in the JSON report (tables.top_kernels), not copied into every tooltip.
MAX_SHOWN_NAME = 1000


def shown_name(name, cut: str = "{n} characters; the whole name is in the JSON report") -> str:
    """``name`` as a tooltip shows it: whole up to MAX_SHOWN_NAME characters, else cut with its length said
    (``cut``: the words, the HTML labels' ``name_cut`` in the report's language)."""
    s = str(name)
    if len(s) <= MAX_SHOWN_NAME:
        return s
    return s[:MAX_SHOWN_NAME - 1] + "… (" + cut.replace("{n}", f"{len(s):,}") + ")"


@functools.lru_cache(maxsize=None)
def template_env(autoescape: bool) -> jinja2.Environment:
    """The Jinja2 environment of the report templates, made once per process. Compiled templates are
    kept beside the validated rule packs (``nsys_expert.cache``, off with ``NSX_NO_CACHE=1``):
    compiling the report template costs more than rendering it."""
    bcc = cache.bytecode_cache("templates")     # entries verified before use (cache.py)
    kw = {} if autoescape else {"keep_trailing_newline": True}
    return jinja2.Environment(loader=jinja2.PackageLoader("nsys_expert.report", "templates"),
                              autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.Undefined,
                              bytecode_cache=bcc, **kw)


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    env = template_env(False)
    env.filters["code"] = _md_code
    env.filters["mdtext"] = _md_text
    env.filters["mdsafe"] = _md_safe
    env.filters["fmt"] = number_text
    env.filters["wspan"] = window_span_text
    env.filters["short"] = short_kernel_name
    env.filters["basename"] = lambda p: os.path.basename(str(p))
    env.filters["actionable"] = shaping.actionable
    env.filters["gbps"] = gbps_text
    env.filters["memkind"] = shaping.memkind
    return env


def gbps_text(v) -> str:
    """A copy rate: below 0.01 GB/s (a handful of bytes a copy: latency, not bandwidth) it is "< 0.01",
    not "0.00256" (issue 48, item 16)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 0.01:
        return "< 0.01"
    return number_text(v, 2)


def localized(d: Diagnosis, lang: str) -> dict:
    """The run-time sentences of a report in ``lang`` (``i18n``: the message catalog), for both
    renderers: the window (its reason), the not-evaluated groups, the warnings (split into those
    that matter and the notes on the inputs) and the next steps."""
    from .i18n import say

    def tr(s):
        return say(s, lang)

    single, stepped = single_stepped(d)
    groups = [(rules, "; ".join(tr(m) for m in missing))
              for rules, missing in note_groups(d.not_evaluated, single, stepped)]
    important, notes = split_warnings(d.warnings)
    return {"w": dict(d.window, reason=tr(d.window.get("reason"))),
            "not_evaluated_groups": groups, "warnings": ([tr(x) for x in important], [tr(x) for x in notes]),
            "next_steps": [{"need": tr(st.need), "why": tr(st.why), "rules": st.rules, "commands": st.commands,
                            "limiter": st.limiter} for st in d.next_steps],
            "absent_active": _unnest(tr(d.facts_absent.get("gpu_active_pct") or Note("phrase.not_computed"))),
            "async_step": _async_step(d, labels(lang, d.facts))}


def _async_step(d: Diagnosis, L: dict) -> str | None:
    """Why the NVTX table's step median is shorter than the iterations' (issue 48, item 11: 0.049 ms
    beside 'Iterations: median 0.187 ms', unexplained): the step range times the host, which queues the
    GPU work and goes on; an iteration of the window runs to the end of the work it launched."""
    src = str(d.window.get("source") or "")
    it = d.facts.get("iter_median_ms")
    rows = (d.tables.get("phases") or {}).get("rows") or []
    r = next((r for r in rows if src.startswith("nvtx:") and r.get("name") == src[5:]), None)
    if r is None or not isinstance(it, (int, float)) or not isinstance(r.get("median_ms"), (int, float)) \
            or r["median_ms"] >= 0.5 * it:
        return None
    return (L["async_step"].replace("{range}", str(r["name"])).replace("{host}", number_text(r["median_ms"], 2))
            .replace("{iter}", number_text(it, 2)))


def _unnest(text: str) -> str:
    """A reason shown in parentheses keeps no parentheses of its own at its end: "needs X (cmd)" is
    "needs X: cmd" (no doubled "))")."""
    for o, c in (("(", ")"), ("（", "）")):
        if text.endswith(c) and o in text:
            i = text.rindex(o)
            return text[:i].rstrip() + ": " + text[i + 1:-1]
    return text


def render_markdown(d: Diagnosis, lang: str = "en") -> str:
    """The Markdown report of ``d`` in ``lang`` (``templates/report.md.j2``)."""
    L = with_categories(labels(lang, d.facts), d.categories, lang)
    units = {n: (registry.lookup("run", n).unit if registry.lookup("run", n) else "") for n in d.facts}
    tpl = _env().get_template("report.md.j2")
    sev = severity_word(lang)
    text = tpl.render(doc=d, L=L, f=d.facts, t=d.tables, units=units, lang=lang, sev=sev,
                      vw=verdict.words(d, L, sev), **localized(d, lang)).rstrip() + "\n"
    if L["brackets"] == "full-width":
        from .i18n import zh_markdown_brackets

        text = zh_markdown_brackets(text)
    return visible(text)   # a kernel name's RTL override or zero-width space is shown, not obeyed


def severity_word(lang: str):
    from .labels import severity

    return severity(lang)


_FACTS_WORDS = {"title": "Facts", "head": "| Fact | Value | Unit | Source |",
                "absent": "Absent (rules that need them are not evaluated):", "colon": ": "}


def render_facts(d: Diagnosis, lang: str = "en") -> str:
    """``--show-facts``: every fact of the run with unit and source, for rule authors; why each absent
    fact is absent in ``lang`` (the message catalog, as the not-evaluated lines)."""
    from .i18n import say

    from .labels import words

    w = words("facts", _FACTS_WORDS, lang)
    title, head, absent_title, colon = w["title"], w["head"], w["absent"], w["colon"]
    lines = ["", f"## {title}", "", head, "|---|---:|---|---|"]
    for name, value in d.facts.items():
        decl = registry.lookup("run", name)
        src = d.fact_sources.get(name)
        lines.append(f"| `{name}` | {number_text(value, 3)} | {decl.unit if decl else ''} | {_md_code(src) if src else '–'} |")
    absent = d.facts_absent
    if absent:
        lines += ["", absent_title, ""]
        lines += [f"- `{k}`{colon}{say(v, lang)}" for k, v in absent.items()]
    return "\n".join(lines) + "\n"
