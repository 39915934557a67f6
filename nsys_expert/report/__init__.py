"""report: rank the findings and put the diagnosis into words (Markdown, JSON).

``build`` produces the JSON contract of design.md (schema_version 1) plus the tables the Markdown
report shows; ``render_markdown`` fills the Jinja2 template. The words of each finding come from its
rule file; the words around them come from ``LABELS`` (en / zh).
The en / zh label tables are in ``labels.py``; the findings ranked and turned into the contract's dicts
(the engine's ``Finding`` read, never written) in ``findings.py``.
"""
from __future__ import annotations

import functools
import json
import math
import os

import jinja2

from .. import __version__, cache
from ..facts import FactSet, registry
from ..facts.names import short_kernel_name
from ..load import Profile
from ..textsafe import visible
from . import shaping, verdict
from .findings import (evidence_json, finding_json, phase_json, rank_findings, recoverable_json,  # noqa: F401 - report.*
                       support_json, too_little_work_json)
from .findings import ordered as _ordered
from .said import _groups, _single_stepped, group_not_evaluated, split_warnings  # noqa: F401 - report.split_warnings
from .shaping import MIN_KERNEL_ADVICE_GAIN_PCT, actionable  # noqa: F401 - report.actionable
from .labels import LABELS, SEVERITY_ZH, labels  # noqa: F401 - report.LABELS, report.SEVERITY_ZH

SCHEMA_VERSION = 1


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


def _verdict(doc: dict, evaluation) -> dict:
    """The verdict of a report (or of a rank's row): ``doc`` holds its ranked findings, facts, inputs,
    not-evaluated rules and tables; its next steps are added to it."""
    doc["next_steps"] = _next_steps(doc)
    limiter = verdict.limiter(doc["findings"], doc["facts"])
    if limiter:
        doc["next_steps"].append(verdict.HOST_SAMPLING_STEP)
    out = verdict.decide(doc["findings"], evaluation.not_evaluated, doc["facts"], doc["next_steps"],
                         doc.get("window"), (doc.get("tables") or {}).get("phases"))
    if evaluation.too_little_work is not None:     # engine/gains.py's minimum-work guard: no finding decides
        out.update(state="undetermined", reason="too_little_work", category=None, rule=None, severity=None,
                   confidence=None)
        out.pop("gpu_idle_attributed_pct", None)
    if doc.get("_recorded", "some") != "some":   # nothing to judge: that is the verdict, not a warning
        out.update(state="undetermined", reason="no_rows" if doc["_recorded"] == "nothing" else "no_gpu_work",
                   category=None, rule=None, severity=None, confidence=None, next_command=shaping.PROFILE_AGAIN)
        out.pop("gpu_idle_attributed_pct", None)
    if limiter:
        out["limiter"] = limiter
    return out


NO_SETTINGS = {"file": None, "packs": [], "select": [], "ignore": [], "parameters": []}


def build(prof: Profile, fs: FactSet, evaluation, lang: str = "en",
          ranks: list[tuple[str, Profile, FactSet]] | None = None, settings: dict | None = None, notes=()) -> dict:
    """The report. ``ranks``: a job's ranks ``[(label, profile, facts)]`` in the order of ``evaluation.ranks``,
    a row each (``job.build_job`` makes a job's report). ``settings``: what was asked beyond the defaults
    (``NO_SETTINGS``'s keys). ``notes``: said of the inputs, after the warnings (one run read twice)."""
    ordered = _ordered(evaluation.findings)
    tables = {k: v for k, v in sorted(fs.tables.items()) if not k.startswith("_")}   # one order (threads)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nsys-expert", "version": __version__},
        "inputs": prof.inputs,
        "window": _window(fs),
        "facts": {k: _clean(v) for k, v in sorted(fs.run.items())},
        "findings": ordered,
        "not_evaluated": evaluation.not_evaluated,
        "warnings": [w for w in getattr(evaluation, "notes", []) + prof.warnings + fs.warnings
                     if not shaping.twin_read(w, prof.inputs)] + list(notes),
        "recoverable": recoverable_json(evaluation.recoverable),
        "too_little_work": too_little_work_json(evaluation.too_little_work),
        "fact_sources": dict(sorted(fs.sources.items())),   # the fact groups run in threads: one order
        "facts_absent": {k: v for k, v in sorted(fs.absent.items())},
        "environment": {"gpus": prof.meta.get("gpus", []), "report_eras": prof.meta.get("report_eras", []),
                        **{k: v for k, v in prof.meta.items() if k not in ("gpus", "report_eras")}},
        "tables": tables,
        "settings": {**NO_SETTINGS, **(settings or {})},
        "lang": lang,
        "_recorded": shaping.recorded(prof),
    }
    doc["verdict"] = _verdict(doc, evaluation)
    if ranks is not None:
        doc["ranks"] = [_rank_row(label, rprof, rfs, rev) for (label, rprof, rfs), (_, rev) in zip(ranks, evaluation.ranks)]
    return doc


ROW_FIELDS = ("rule", "category", "severity", "rank", "title", "estimated_gain_pct", "scope")


def _rank_row(label: str, prof: Profile, fs: FactSet, evaluation) -> dict:
    """A rank's row of a multi-rank report: its own facts (the cross-rank ones with them), window,
    verdict and findings (their titles: the job's findings above carry the words and advice)."""
    row = {"findings": _ordered(evaluation.findings), "facts": {k: _clean(v) for k, v in sorted(fs.run.items())},
           "inputs": prof.inputs, "tables": {k: v for k, v in fs.tables.items() if not k.startswith("_")}}
    return {"rank": label, "pid": prof.meta.get("pid"), "facts": row["facts"], "window": _window(fs),
            "verdict": _verdict(row, evaluation), "findings": [{k: f[k] for k in ROW_FIELDS} for f in row["findings"]]}


def _next_steps(doc: dict) -> list[dict]:
    """The exact commands that collect what the rules under not_evaluated lacked (scenarios.next_steps)."""
    from .. import scenarios
    from ..load import schema

    name = "report.nsys-rep"
    for i in doc.get("inputs", []):
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
        return scenarios.next_steps(doc.get("not_evaluated", []), doc.get("facts", {}), inputs=doc.get("inputs", []),
                                    report=name, ncu_hint=(doc.get("tables") or {}).get("ncu_command"))
    except Exception:  # noqa: BLE001 - advice about the next run must never break this report
        return []


def to_json(doc: dict) -> str:
    public = {k: v for k, v in doc.items() if k != "lang" and not k.startswith("_")}
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


def _fmt(v, nd: int = 1) -> str:
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


def _window_span(w) -> str:
    """The window's start and end in seconds as ``--window`` takes them back (``START–END``): as ``fmt(3)``
    under 100 s; from 100 s up without thousands separators and with the decimals that tell start from end
    (a torch.profiler trace's clock reads 5,656,674 s: 'fmt' printed '5,656,674–5,656,674', issue 56, item 10)."""
    a, b = w["start_ns"] / 1e9, w["end_ns"] / 1e9
    if max(abs(a), abs(b)) < 100:
        return f"{_fmt(a, 3)}–{_fmt(b, 3)}"
    for d in range(3, 10):
        sa, sb = f"{a:.{d}f}", f"{b:.{d}f}"
        if sa != sb:
            break
    return f"{sa}–{sb}"


# A name shown in full (an HTML tooltip) is cut to this many characters: a 1 MB kernel name is kept once,
# whole, in the JSON report (tables.top_kernels), not copied into every tooltip.
MAX_SHOWN_NAME = 1000


def shown_name(name) -> str:
    """``name`` as a tooltip shows it: whole up to MAX_SHOWN_NAME characters, else cut with its length said."""
    s = str(name)
    if len(s) <= MAX_SHOWN_NAME:
        return s
    return s[:MAX_SHOWN_NAME - 1] + f"… ({len(s):,} characters; the whole name is in the JSON report)"


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
    env.filters["fmt"] = _fmt
    env.filters["wspan"] = _window_span
    env.filters["short"] = short_kernel_name
    env.filters["basename"] = lambda p: os.path.basename(str(p))
    env.filters["actionable"] = shaping.actionable
    env.filters["gbps"] = _gbps
    env.filters["memkind"] = shaping.memkind
    return env


def _gbps(v) -> str:
    """A copy rate: below 0.01 GB/s (a handful of bytes a copy: latency, not bandwidth) it is "< 0.01",
    not "0.00256" (issue 48, item 16)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 0.01:
        return "< 0.01"
    return _fmt(v, 2)


def localized(doc: dict, lang: str) -> dict:
    """The run-time sentences of a report in ``lang`` (``i18n``: the message catalog), for both
    renderers: the window (its reason), the not-evaluated groups, the warnings (split into those
    that matter and the notes on the inputs) and the next steps."""
    from .i18n import say

    def tr(s):
        return say(s, lang)

    single, stepped = _single_stepped(doc)
    groups = [(rules, "; ".join(tr(m) for m in missing))
              for rules, missing in _groups(doc.get("not_evaluated", []), single, stepped)]
    important, notes = split_warnings(doc.get("warnings", []))
    return {"w": dict(doc["window"], reason=tr(doc["window"].get("reason"))),
            "not_evaluated_groups": groups, "warnings": ([tr(x) for x in important], [tr(x) for x in notes]),
            "next_steps": [dict(st, need=tr(st["need"]), why=tr(st["why"])) for st in doc.get("next_steps") or []],
            "absent_active": _unnest(tr(doc.get("facts_absent", {}).get("gpu_active_pct") or "not computed")),
            "async_step": _async_step(doc, labels(lang, doc))}


def _async_step(doc: dict, L: dict) -> str | None:
    """Why the NVTX table's step median is shorter than the iterations' (issue 48, item 11: 0.049 ms
    beside 'Iterations: median 0.187 ms', unexplained): the step range times the host, which queues the
    GPU work and goes on; an iteration of the window runs to the end of the work it launched."""
    src = str((doc.get("window") or {}).get("source") or "")
    it = (doc.get("facts") or {}).get("iter_median_ms")
    rows = ((doc.get("tables") or {}).get("phases") or {}).get("rows") or []
    r = next((r for r in rows if src.startswith("nvtx:") and r.get("name") == src[5:]), None)
    if r is None or not isinstance(it, (int, float)) or not isinstance(r.get("median_ms"), (int, float)) \
            or r["median_ms"] >= 0.5 * it:
        return None
    return (L["async_step"].replace("{range}", str(r["name"])).replace("{host}", _fmt(r["median_ms"], 2))
            .replace("{iter}", _fmt(it, 2)))


def _unnest(text: str) -> str:
    """A reason shown in parentheses keeps no parentheses of its own at its end: "needs X (cmd)" is
    "needs X: cmd" (no doubled "))")."""
    for o, c in (("(", ")"), ("（", "）")):
        if text.endswith(c) and o in text:
            i = text.rindex(o)
            return text[:i].rstrip() + ": " + text[i + 1:-1]
    return text


def render_markdown(doc: dict, lang: str = "en") -> str:
    L = labels(lang, doc)
    units = {n: (registry.lookup("run", n).unit if registry.lookup("run", n) else "") for n in doc["facts"]}
    tpl = _env().get_template("report.md.j2")
    sev = severity_word(lang)
    text = tpl.render(doc=doc, L=L, f=doc["facts"], t=doc["tables"], units=units, lang=lang, sev=sev,
                      vw=verdict.words(doc, L, sev), **localized(doc, lang)).rstrip() + "\n"
    if lang == "zh":
        from .i18n import zh_markdown_brackets

        text = zh_markdown_brackets(text)
    return visible(text)   # a kernel name's RTL override or zero-width space is shown, not obeyed


def severity_word(lang: str):
    return lambda s: SEVERITY_ZH.get(s, s) if lang == "zh" else s


_FACTS_WORDS = {"en": ("Facts", "| Fact | Value | Unit | Source |", "Absent (rules that need them are not evaluated):", ": "),
               "zh": ("指标", "| 指标 | 数值 | 单位 | 来源 |", "缺失（需要它们的规则未被评估）：", "：")}


def render_facts(doc: dict, lang: str = "en") -> str:
    """``--show-facts``: every fact of the run with unit and source, for rule authors; why each absent
    fact is absent in ``lang`` (the message catalog, as the not-evaluated lines)."""
    from .i18n import say

    title, head, absent_title, colon = _FACTS_WORDS.get(lang, _FACTS_WORDS["en"])
    lines = ["", f"## {title}", "", head, "|---|---:|---|---|"]
    for name, value in doc["facts"].items():
        d = registry.lookup("run", name)
        src = doc.get("fact_sources", {}).get(name)
        lines.append(f"| `{name}` | {_fmt(value, 3)} | {d.unit if d else ''} | {_md_code(src) if src else '–'} |")
    absent = doc.get("facts_absent", {})
    if absent:
        lines += ["", absent_title, ""]
        lines += [f"- `{k}`{colon}{say(v, lang)}" for k, v in absent.items()]
    return "\n".join(lines) + "\n"
