"""Compare two runs: facts side by side, findings resolved / new / persisting, a verdict, a gate.

Each side is a profile (anything ``diagnose`` reads) or a JSON report written earlier by
``diagnose --format json`` (a stored baseline). Key facts carry a direction (is higher better?);
``--fail-on-regression PCT`` trips when one of them gets worse by more than PCT percent, or when a
new high / critical finding appears.

Past ~400 lines on purpose: the comparison, its gate and its two renderings, and what BEFORE's findings
promised beside the measured per-step gain (``promises``), which reads the same two documents.
"""
from __future__ import annotations

import json
import math
import os

from .engine.rules import SEVERITIES
from .errors import InputError

# fact -> True when a larger value is better
KEY_FACTS = {
    "gpu_active_pct": True,
    "iter_median_ms": False,
    "gpu_idle_pct": False,
    "kernel_active_pct": True,
    "nccl_exposed_pct": False,
    "memcpy_active_pct": False,
}
SHOWN = ["window_ms", "iter_count", "iter_median_ms", "iter_max_over_median", "gpu_active_pct", "kernel_active_pct",
         "memcpy_active_pct", "gpu_idle_launch_pct", "gpu_idle_sync_pct", "gpu_idle_memcpy_pct", "gpu_idle_data_pct",
         "gpu_idle_host_pct", "kernel_count", "kernels_per_iter", "kernel_median_us", "launch_api_share_pct",
         "sync_api_share_pct", "memcpy_host_share_of_busy_pct", "nccl_share_of_busy_pct", "nccl_overlap_pct",
         "nccl_exposed_pct", "graph_launch_count"]


# What diff reads of a stored JSON report (docs/json-contract.md), checked before any of it is used: a
# hand-edited or hostile report is one line naming the first thing wrong, never a KeyError or a crash.
_STR_OR_NULL = {"type": ["string", "null"]}
_NUM_OR_NULL = {"type": ["number", "null"]}
REPORT_SCHEMA = {
    "type": "object",
    "required": ["schema_version", "findings"],
    "properties": {
        "schema_version": {"const": 1},
        "facts": {"type": "object", "additionalProperties": {"type": ["number", "string", "boolean", "null"]}},
        "findings": {"type": "array", "items": {
            "type": "object", "required": ["rule", "category", "severity"],
            "properties": {"rule": {"type": "string"}, "category": {"type": "string"},
                           "severity": {"enum": list(SEVERITIES)}, "title": _STR_OR_NULL,
                           "scope": {"type": ["object", "null"], "properties": {"kernel": _STR_OR_NULL}},
                           "estimated_gain_pct": _NUM_OR_NULL}}},
        "not_evaluated": {"type": "array", "items": {"type": "object", "required": ["rule"],
                                                     "properties": {"rule": {"type": "string"}}}},
        "inputs": {"type": "array", "items": {"type": "object", "required": ["path"],
                                              "properties": {"path": {"type": "string"}}}},
        "window": {"type": "object", "properties": {"iterations": {"type": ["integer", "null"]}}},
        "verdict": {"type": "object"},
        "environment": {"type": "object", "properties": {"gpus": {"type": "array", "items": {
            "type": "object", "properties": {"name": _STR_OR_NULL}}}}},
    },
}
MAX_BYTES = 256 << 20


def _no_constant(name: str):
    raise ValueError(f"{name} is no JSON number")


def _check(doc, path: str) -> None:
    import jsonschema

    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(REPORT_SCHEMA).iter_errors(doc))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "the top level"
        raise InputError(f"not an nsys-expert JSON report (schema_version 1): at {where[:80]}, {err.message[:160]}",
                         path, "write one with nsys-expert diagnose PROFILE --format json -o FILE")


def load_side(path: str, diagnose_fn) -> dict:
    """A JSON report (validated against REPORT_SCHEMA), or a fresh diagnosis of a profile."""
    if os.path.isfile(path) and path.endswith(".json"):
        from .safe_open import open_regular

        try:
            with open_regular(path) as fh:
                raw = fh.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                raise InputError(f"larger than {MAX_BYTES >> 20} MiB: not a JSON report nsys-expert wrote", path)
            doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except RecursionError:
            raise InputError("not a readable JSON report (nested thousands of levels deep)", path) from None
        except (OSError, ValueError) as e:
            what = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
            raise InputError(f"not a readable JSON report ({what})", path) from None
        _check(doc, path)
        return doc
    return diagnose_fn(path)


def _finite(x):
    """A number that JSON can hold and arithmetic keeps finite (an infinite, NaN or 400-digit value is unknown: None)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return x
    return x if (abs(x) < 1 << 63 if isinstance(x, int) else math.isfinite(x)) else None


def _key(f: dict) -> tuple:
    return (f["rule"], (f.get("scope") or {}).get("kernel") or "")


def compare(before: dict, after: dict, fail_pct: float | None = None) -> dict:
    fb, fa = before.get("facts", {}), after.get("facts", {})
    facts = []
    regressions = []
    names = [n for n in SHOWN if n in fb or n in fa] + sorted((set(fb) & set(fa)) - set(SHOWN) - {n for n in fb if n.endswith("_span")})
    for n in names:
        b, a = fb.get(n), fa.get(n)
        row = {"fact": n, "before": b, "after": a, "change": None, "change_pct": None, "verdict": None}
        if isinstance(b, (int, float)) and isinstance(a, (int, float)) and not isinstance(b, bool):
            row["before"], row["after"] = b, a = _finite(b), _finite(a)
        if isinstance(b, (int, float)) and isinstance(a, (int, float)) and not isinstance(b, bool):
            row["change"] = _finite(round(a - b, 4))
            if b:
                row["change_pct"] = _finite(round(100.0 * (a - b) / abs(b), 2))
            if n in KEY_FACTS:
                better = (a > b) if KEY_FACTS[n] else (a < b)
                worse = (a < b) if KEY_FACTS[n] else (a > b)
                row["verdict"] = "better" if better else ("worse" if worse else "same")
                # percentage points for shares, relative change for times
                delta = abs(a - b) if n.endswith("_pct") else (abs(row["change_pct"] or 0.0))
                if worse and fail_pct is not None and delta > fail_pct:
                    regressions.append(f"{n}: {b} -> {a} ({delta:.1f} {'pp' if n.endswith('_pct') else '%'} > {fail_pct})")
        facts.append(row)
    kb = {_key(f): f for f in before.get("findings", [])}
    ka = {_key(f): f for f in after.get("findings", [])}
    brief = lambda f: {"rule": f["rule"], "category": f["category"], "severity": f["severity"],  # noqa: E731
                       "title": f.get("title"), "scope": f.get("scope", {}), "estimated_gain_pct": f.get("estimated_gain_pct")}
    # a finding whose rule could not run on the other side is neither resolved nor new: unknown
    ne_b = {n["rule"] for n in before.get("not_evaluated", [])}
    ne_a = {n["rule"] for n in after.get("not_evaluated", [])}
    resolved = [brief(kb[k]) for k in kb if k not in ka and k[0] not in ne_a]
    new = [brief(ka[k]) for k in ka if k not in kb and k[0] not in ne_b]
    unknown = [dict(brief(kb[k]), side="before") for k in kb if k not in ka and k[0] in ne_a] + \
              [dict(brief(ka[k]), side="after") for k in ka if k not in kb and k[0] in ne_b]
    persisting = []
    for k in kb:
        if k in ka:
            row = brief(ka[k])
            row["severity_before"] = kb[k]["severity"]
            row["severity_change"] = SEVERITIES.index(ka[k]["severity"]) - SEVERITIES.index(kb[k]["severity"])
            persisting.append(row)
    high = SEVERITIES.index("high")
    for f in new:
        if SEVERITIES.index(f["severity"]) >= high and fail_pct is not None:
            regressions.append(f"new {f['severity']} finding: {f['rule']}")
    for f in persisting:
        if f["severity_change"] > 0 and SEVERITIES.index(f["severity"]) >= high and fail_pct is not None:
            regressions.append(f"{f['rule']} rose from {f['severity_before']} to {f['severity']}")
    notes = comparability(before, after)
    key_rows = [r for r in facts if r["verdict"] in ("better", "worse")]
    better = sum(r["verdict"] == "better" for r in key_rows) + len(resolved)
    worse = sum(r["verdict"] == "worse" for r in key_rows) + sum(SEVERITIES.index(f["severity"]) >= SEVERITIES.index("medium") for f in new)
    verdict = "improved" if better > worse else ("regressed" if worse > better else "unchanged")
    return {"schema_version": 1, "before": _label(before), "after": _label(after), "verdict": verdict,
            "promises": promises(before, after),
            "regressions": regressions, "gate": None if fail_pct is None else {"threshold_pct": fail_pct,
                                                                               "tripped": bool(regressions)},
            "facts": facts, "resolved": resolved, "new": new, "persisting": persisting, "not_comparable": unknown,
            "comparability": notes}


CAME_TRUE_POINTS = 10.0   # a promise within this many points of the measured gain came true


def step_ms(doc: dict) -> tuple[float | None, str]:
    """Time per step as the GPU sees it: the window (the second step's start to the end of the GPU work
    the last step launched) over its steps, the mean that a before/after pair's gain is measured on."""
    f = doc.get("facts", {})
    w, n = f.get("window_ms"), f.get("iter_count")
    if isinstance(w, (int, float)) and isinstance(n, (int, float)) and n >= 2:
        return w / n, "window / iterations"
    return None, ""


def promises(before: dict, after: dict) -> dict | None:
    """What BEFORE's findings promised beside the per-step gain measured between the runs, and which
    finding's advice the change matches: one the after-run no longer has, else the one whose own evidence (its
    first fact) fell by half or more; among several, the one whose evidence fell the most."""
    b, how = step_ms(before)
    a, _ = step_ms(after)
    if not b or not a:
        return None
    measured = round(100.0 * (1.0 - a / b), 1)
    fa = after.get("facts", {})
    rows = []
    for f in before.get("findings", []):
        gain = f.get("estimated_gain_pct")
        if not isinstance(gain, (int, float)) or gain <= 0:
            continue
        ev = next((e for e in f.get("evidence", []) if isinstance(e.get("value"), (int, float))
                   and not isinstance(e.get("value"), bool)), None)
        drop = None
        if ev is not None and isinstance(fa.get(ev["fact"]), (int, float)) and ev["value"]:
            drop = round(100.0 * (1.0 - fa[ev["fact"]] / ev["value"]), 1)
        elif ev is not None and ev["fact"] not in fa:
            drop = 100.0   # the evidence is gone from the after-run
        still = next((x for x in after.get("findings", []) if x.get("rule") == f["rule"]), None)
        if still is not None and isinstance(still.get("estimated_gain_pct"), (int, float)):
            # the same finding, promising much less: its cause was mostly fixed (an asynchronous checkpoint)
            drop = max(drop or 0.0, round(100.0 * (1.0 - still["estimated_gain_pct"] / gain), 1))
        rows.append({"rule": f["rule"], "promised_pct": gain, "fact": ev["fact"] if ev else None,
                     "fact_before": ev["value"] if ev else None, "fact_after": fa.get(ev["fact"]) if ev else None,
                     "evidence_drop_pct": drop})
    after_rules = {f.get("rule") for f in after.get("findings", [])}
    for r in rows:
        r["resolved"] = r["rule"] not in after_rules
    # the change made: a finding the after-run no longer has, else the one whose evidence fell by half or more;
    # among several, the one whose evidence fell the most
    pick = [r for r in rows if r["resolved"]] or [r for r in rows if (r["evidence_drop_pct"] or 0) >= 50]
    applied = max(pick, key=lambda r: r["evidence_drop_pct"] or 0.0, default=None)
    for r in rows:
        r["applied"] = r is applied
        r["came_true"] = abs(r["promised_pct"] - measured) <= CAME_TRUE_POINTS if r["applied"] else None
    return {"step_ms_before": round(b, 4), "step_ms_after": round(a, 4), "basis": how, "measured_gain_pct": measured,
            "within_points": CAME_TRUE_POINTS, "rows": rows}


def _promise_lines(p: dict) -> list[str]:
    out = [f"per step: {p['step_ms_before']:.4g} ms → {p['step_ms_after']:.4g} ms ({p['basis']}): "
           f"**{p['measured_gain_pct']:.1f} % measured**"]
    for r in p["rows"]:
        head = f"`{r['rule']}` promised {r['promised_pct']:.1f} %"
        if r["applied"]:
            ev = f" (`{r['fact']}` {_num(r['fact_before'], r['fact'])} → {_num(r['fact_after'], r['fact'])})"
            verdict = ("came true" if r["came_true"] else
                       f"**did not come true**: {abs(r['promised_pct'] - p['measured_gain_pct']):.1f} points off")
            out.append(f"{head}; the change matches its advice{ev}: {verdict}")
        else:
            out.append(f"{head}; its evidence did not fall: not the change made")
    return out


def gate_reasons(d: dict, n: int = 3) -> str:
    """What tripped the regression gate, in one line (the first ``n`` reasons)."""
    regs = d.get("regressions") or []
    return "; ".join(regs[:n]) + (f" and {len(regs) - n} more" if len(regs) > n else "")


def _label(doc: dict) -> dict:
    ins = doc.get("inputs", [])
    try:
        common = os.path.commonpath([i["path"] for i in ins]) if ins else ""
    except ValueError:         # absolute and relative paths mixed (an edited report): no common folder
        common = ""
    return {"inputs": common, "window": doc.get("window", {}), "verdict": doc.get("verdict", {}),
            "gpus": doc.get("environment", {}).get("gpus", [])}


def comparability(before: dict, after: dict) -> list[str]:
    """Reasons the two runs may not be comparable (said, not enforced)."""
    notes = []
    gb = [g.get("name") for g in before.get("environment", {}).get("gpus", [])]
    ga = [g.get("name") for g in after.get("environment", {}).get("gpus", [])]
    if gb and ga and gb != ga:
        notes.append(f"different GPUs: {gb} vs {ga}")
    sb, sa = before.get("window", {}).get("source"), after.get("window", {}).get("source")
    if sb != sa:
        notes.append(f"the windows were chosen differently: {sb} vs {sa}")
    nb, na = before.get("window", {}).get("iterations"), after.get("window", {}).get("iterations")
    if nb and na and max(nb, na) > 2 * min(nb, na):
        notes.append(f"very different iteration counts: {nb} vs {na}")
    mb = set(before.get("facts", {})) - set(after.get("facts", {}))
    if {"gpu_active_pct"} & mb:
        notes.append("GPU utilization is known before but not after (see the after run's warnings)")
    ma = set(after.get("facts", {})) - set(before.get("facts", {}))
    if {"gpu_active_pct"} & ma:
        notes.append("GPU utilization is known after but not before (see the before run's warnings)")
    return notes


KERNEL_CUT = 60


def _num(v, fact: str = "") -> str:
    """A fact's value: counts without decimals, the rest with two."""
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or (float(v).is_integer() and (fact.endswith(("_count", "_calls")) or "count" in fact)):
        return f"{int(v):,}"
    return f"{v:,.2f}"


def _change(r: dict) -> str:
    if r["change"] is None:
        return "–"
    if r["fact"].endswith("_pct"):   # a share: the change is in percentage points, not relative
        return f"{r['change']:+,.1f} pp"
    whole = isinstance(r["before"], int) and isinstance(r["after"], int)
    ch = f"{int(r['change']):+,}" if whole else f"{r['change']:+,.2f}"
    return ch + (f" ({r['change_pct']:+.1f} %)" if r["change_pct"] is not None else "")


# facts that count the kernels one by one: a run whose kernels are all inside CUDA graphs (nsys's
# default --cuda-graph-trace=graph) has none of them, while its kernel time is there (issue 48, item 11:
# 'kernel_count 39,800 -> 0' beside 'kernel_active_pct 98.85')
GRAPH_HIDDEN = ("kernel_count", "kernels_per_iter", "kernel_small_share_pct", "kernel_median_us")
GRAPH_NOTE = ("not comparable: the {side} run's kernels are inside CUDA graphs, traced as whole graphs "
              "(profile with --cuda-graph-trace=node to count them)")


def _graphed_sides(rows: list[dict]) -> str | None:
    """'before', 'after' or 'both': the run(s) with CUDA graph launches and no kernel counted."""
    by = {r["fact"]: r for r in rows}
    g, k = by.get("graph_launch_count") or {}, by.get("kernel_count") or {}
    sides = [s for s in ("before", "after") if (g.get(s) or 0) > 0 and not k.get(s)]
    return None if not sides else sides[0] if len(sides) == 1 else "both"


def _blocks(d: dict) -> list[tuple]:
    """The diff as blocks both renderers draw: ("h1"|"h2"|"p", text), ("ul", items),
    ("table", header, rows); text marks code with backticks and bold with ``**``."""
    out: list[tuple] = [("h1", "nsys-expert diff"), ("p", f"**Verdict:** {d['verdict']}")]
    head = [f"before: `{d['before']['inputs']}` ({d['before']['window'].get('source')})",
            f"after: `{d['after']['inputs']}` ({d['after']['window'].get('source')})"]
    if d["gate"]:
        head.append(f"regression gate ({d['gate']['threshold_pct']}): " + ("**tripped**" if d["gate"]["tripped"] else "passed"))
    head += [f"regression: {r}" for r in d["regressions"]]
    out.append(("ul", head))
    if d["comparability"]:
        out += [("p", "Comparability:"), ("ul", list(d["comparability"]))]
    if d.get("promises"):
        out += [("h2", "Promised and measured"), ("ul", _promise_lines(d["promises"]))]
    out.append(("h2", "Findings"))
    cut: dict[str, str] = {}
    empty = []
    for title, rows in (("Resolved", d["resolved"]), ("New", d["new"]), ("Persisting", d["persisting"]),
                        ("Not comparable (the rule could not run on the other side)", d["not_comparable"])):
        if not rows:
            empty.append(title.split(" (")[0].lower())
            continue
        items = []
        for f in rows:
            sev = f["severity"] if "severity_before" not in f or f["severity_before"] == f["severity"] else \
                f"{f['severity_before']} → {f['severity']}"
            k = (f.get("scope") or {}).get("kernel") or ""
            if len(k) > KERNEL_CUT:
                cut[k[:KERNEL_CUT] + "…"] = k
                k = k[:KERNEL_CUT] + "…"
            items.append(f"`{f['rule']}` ({f['category']}, {sev})" + (f" `{k}`" if k else "") + f": {f.get('title') or ''}")
        out += [("p", f"**{title}** ({len(rows)})"), ("ul", items)]
    if empty:
        names = ", ".join(empty[:-1]) + (" or " if len(empty) > 1 else "") + empty[-1]
        out.append(("p", f"No {names} findings."))
    changed = [r for r in d["facts"] if not (r["before"] == r["after"] or r["change"] == 0)]
    same = [r["fact"] for r in d["facts"] if r not in changed]
    out.append(("h2", "Facts"))
    hidden = _graphed_sides(d["facts"])
    if changed:   # no table without rows (a run diffed with itself: issue 48, item 16)
        out.append(("table", ["fact", "before", "after", "change", "verdict"],
                    [[f"`{r['fact']}`", _num(r["before"], r["fact"]), _num(r["after"], r["fact"]), _change(r),
                      (GRAPH_NOTE.format(side=hidden) if hidden and r["fact"] in GRAPH_HIDDEN else r["verdict"] or "")]
                     for r in changed]))
    elif same:
        out.append(("p", "No fact changed."))
    if same:
        out.append(("p", f"{len(same)} facts unchanged: " + ", ".join(f"`{n}`" for n in same) + "."))
    if cut:
        out += [("h2", "Kernel names in full"), ("ul", [f"`{short}`: `{full}`" for short, full in cut.items()])]
    return out


def render_markdown(d: dict) -> str:
    lines: list[str] = []
    for b in _blocks(d):
        kind = b[0]
        if kind == "h1":
            lines += [f"# {b[1]}", ""]
        elif kind == "h2":
            lines += [f"## {b[1]}", ""]
        elif kind == "p":
            lines += [b[1], ""]
        elif kind == "ul":
            lines += [f"- {x}" for x in b[1]] + [""]
        else:
            lines += ["| " + " | ".join(b[1]) + " |", "|---|---:|---:|---:|---|"]
            lines += ["| " + " | ".join(r) + " |" for r in b[2]] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _inline(text: str) -> str:
    import html
    import re

    t = html.escape(text, quote=False)
    t = re.sub(r"`([^`]*)`", r"<code>\1</code>", t)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)


def render_html(d: dict) -> str:
    """The diff as one self-contained page: the same blocks as the Markdown, as HTML elements."""
    parts = ["<!doctype html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<meta name='generator' content='nsys-expert'><title>nsys-expert diff</title>",
             "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:1160px;margin:0 auto;padding:24px}"
             "table{border-collapse:collapse}td,th{border-bottom:1px solid #e5e7eb;padding:3px 10px;text-align:left}"
             "td.num,th.num{text-align:right}code{background:#f3f4f6;padding:1px 4px;overflow-wrap:anywhere}</style>",
             "</head><body><main>"]
    for b in _blocks(d):
        kind = b[0]
        if kind in ("h1", "h2", "p"):
            parts.append(f"<{kind}>{_inline(b[1])}</{kind}>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in b[1]) + "</ul>")
        else:
            num = lambda i: " class='num'" if 0 < i < 4 else ""  # noqa: E731
            parts.append("<table><tr>" + "".join(f"<th{num(i)}>{_inline(h)}</th>" for i, h in enumerate(b[1])) + "</tr>")
            parts += ["<tr>" + "".join(f"<td{num(i)}>{_inline(c)}</td>" for i, c in enumerate(r)) + "</tr>" for r in b[2]]
            parts.append("</table>")
    return "\n".join(parts + ["</main></body></html>"]) + "\n"
