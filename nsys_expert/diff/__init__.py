"""Compare two runs: facts side by side, findings resolved / new / persisting, a verdict, a gate.

Each side is a profile (anything ``diagnose`` reads) or a JSON report written earlier by
``diagnose --format json`` (a stored baseline). Key facts carry a direction (is higher better?);
``--fail-on-regression PCT`` trips when one of them gets worse by more than PCT percent, or when a
new high / critical finding appears.

This module compares (``compare``, ``promises``, ``comparability``); ``diff/render.py`` writes the
comparison in words (Markdown, HTML, the gate's one line).
"""
from __future__ import annotations

import json
import math
import os

from ..engine.rules import SEVERITIES
from ..errors import InputError
from .where import places_gone

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
        from ..safe_open import open_regular

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
    shares: list[str] = []      # the gate's reasons that are shares of the window (GPU active, idle, copies)
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
                    if n.endswith("_pct"):
                        shares.append(regressions[-1])
        facts.append(row)
    kb = {_key(f): f for f in before.get("findings", [])}
    ka = {_key(f): f for f in after.get("findings", [])}
    brief = lambda f: {"rule": f["rule"], "category": f["category"], "severity": f["severity"],  # noqa: E731
                       "title": f.get("title"), "scope": f.get("scope", {}), "estimated_gain_pct": f.get("estimated_gain_pct")}
    # a finding whose rule could not run on the other side is neither resolved nor new: unknown
    ne_b = {n["rule"] for n in before.get("not_evaluated", [])}
    ne_a = {n["rule"] for n in after.get("not_evaluated", [])}
    # a finding one side shows inside another (folded under a deeper cause, or one of the kernels of a combined
    # finding) is on that side: neither new nor resolved (issue 56, item 1: the fused optimizer's after-run
    # showed launch-bound, folded into optimizer-unfused before, as a "new high finding" and the gate tripped)
    inside_b, inside_a = _inside(before), _inside(after)
    resolved = [brief(kb[k]) for k in kb if k not in ka and k[0] not in ne_a and k not in inside_a]
    new = [brief(ka[k]) for k in ka if k not in kb and k[0] not in ne_b and k not in inside_b]
    unknown = [dict(brief(kb[k]), side="before") for k in kb if k not in ka and k[0] in ne_a] + \
              [dict(brief(ka[k]), side="after") for k in ka if k not in kb and k[0] in ne_b]
    persisting = []
    for k in kb:
        if k in ka:
            row = brief(ka[k])
            row["severity_before"] = kb[k]["severity"]
            row["severity_change"] = SEVERITIES.index(ka[k]["severity"]) - SEVERITIES.index(kb[k]["severity"])
            persisting.append(row)
    for k in kb:
        if k not in ka and k in inside_a:
            persisting.append(dict(brief(kb[k]), severity_before=kb[k]["severity"], severity_change=0,
                                   inside_after=inside_a[k]))
    for k in ka:
        if k not in kb and k in inside_b:
            persisting.append(dict(brief(ka[k]), severity_before=ka[k]["severity"], severity_change=0,
                                   inside_before=inside_b[k]))
    high = SEVERITIES.index("high")
    for f in new:
        if SEVERITIES.index(f["severity"]) >= high and fail_pct is not None:
            regressions.append(f"new {f['severity']} finding: {f['rule']}")
    for f in persisting:
        if f["severity_change"] > 0 and SEVERITIES.index(f["severity"]) >= high and fail_pct is not None:
            regressions.append(f"{f['rule']} rose from {f['severity_before']} to {f['severity']}")
    notes = comparability(before, after)
    verdict, basis = decide(before, after, facts, resolved, new)
    waived = []
    if verdict == "improved" and basis["by"] == "step_time":
        # a shorter step leaves the GPU idle a larger share of a shorter window: a share that fell while each
        # step got faster is no regression (issue 56, item 1: a 47 % faster conv step tripped the gate on
        # gpu_active_pct 96.0 -> 82.8); said, not gated. New high findings and a slower median step still trip
        waived = [r for r in regressions if r in shares]
        regressions = [r for r in regressions if r not in shares]
    if (fail_pct is not None and basis["by"] == "step_time" and basis["change_pct"] > fail_pct
            and not any(r.startswith("iter_median_ms:") for r in regressions)):
        regressions.insert(0, f"time per step: {basis['step_ms_before']:.4g} -> {basis['step_ms_after']:.4g} ms "
                              f"({basis['change_pct']:.1f} % > {fail_pct})")
    return {"schema_version": 1, "before": _label(before), "after": _label(after), "verdict": verdict,
            "verdict_basis": basis,
            "promises": promises(before, after),
            "regressions": regressions, "gate": None if fail_pct is None else {"threshold_pct": fail_pct,
                                                                               "tripped": bool(regressions),
                                                                               **({"not_gated": waived} if waived else {})},
            "facts": facts, "resolved": resolved, "new": new, "persisting": persisting, "not_comparable": unknown,
            "comparability": notes, **({"places_gone": gone} if (gone := places_gone(before, after)) else {})}


def _inside(doc: dict) -> dict[tuple, str]:
    """The findings a side shows inside another (``supporting`` with relation ``folded`` or ``also``):
    their key -> the rule of the finding that holds them."""
    out: dict[tuple, str] = {}
    for f in doc.get("findings", []):
        for s in f.get("supporting") or []:
            if isinstance(s, dict) and s.get("relation") in ("folded", "also") and isinstance(s.get("rule"), str):
                out.setdefault(_key(s), f["rule"])
    return out


STEP_NOISE_PCT = 2.0   # a time per step within this many percent of the other run's is unchanged


def _step_times(before: dict, after: dict) -> tuple[float, float, str] | None:
    """Both runs' time per step on one basis: window / iterations where both have it, else the median step."""
    b, how = step_ms(before)
    a, _ = step_ms(after)
    if b and a:
        return b, a, how
    b, a = before.get("facts", {}).get("iter_median_ms"), after.get("facts", {}).get("iter_median_ms")
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) and _finite(x) and x > 0 for x in (b, a)):
        return b, a, "median step"
    return None


def decide(before: dict, after: dict, facts: list[dict], resolved: list[dict], new: list[dict]) -> tuple[str, dict]:
    """The headline word and what it rests on. The time per step decides when both runs have one (issue 56,
    item 1: a 42 % faster step was "regressed" because its shorter step left the GPU idle a larger share):
    STEP_NOISE_PCT or more faster is improved, slower is regressed, else unchanged. Without it, the key facts
    that moved and the findings resolved / new (medium and above) are counted."""
    steps = _step_times(before, after)
    if steps is not None:
        b, a, how = steps
        change = round(100.0 * (a - b) / b, 1)
        verdict = "improved" if change <= -STEP_NOISE_PCT else ("regressed" if change >= STEP_NOISE_PCT else "unchanged")
        return verdict, {"by": "step_time", "basis": how, "step_ms_before": round(b, 4), "step_ms_after": round(a, 4),
                         "change_pct": change, "noise_pct": STEP_NOISE_PCT}
    key_rows = [r for r in facts if r["verdict"] in ("better", "worse")]
    better = sum(r["verdict"] == "better" for r in key_rows) + len(resolved)
    worse = sum(r["verdict"] == "worse" for r in key_rows) + \
        sum(SEVERITIES.index(f["severity"]) >= SEVERITIES.index("medium") for f in new)
    verdict = "improved" if better > worse else ("regressed" if worse > better else "unchanged")
    return verdict, {"by": "counts", "better": better, "worse": worse}


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
    after_rules = {f.get("rule") for f in after.get("findings", [])} | {k[0] for k in _inside(after)}
    for r in rows:
        r["resolved"] = r["rule"] not in after_rules
    applied = _applied(rows)
    together = _overlap([r["promised_pct"] for r in applied])
    for r in rows:
        r["applied"] = any(r is x for x in applied)
        r["came_true"] = abs(together - measured) <= CAME_TRUE_POINTS if r["applied"] else None
    out = {"step_ms_before": round(b, 4), "step_ms_after": round(a, 4), "basis": how, "measured_gain_pct": measured,
           "within_points": CAME_TRUE_POINTS, "rows": rows}
    if len(applied) > 1:
        out["applied_promised_pct"] = together
    return out


def _applied(rows: list[dict]) -> list[dict]:
    """The findings whose advice the change matches. One change can fix several (DataLoader workers with
    pinned buffers end the between-steps idle and the pageable copies: issue 56, item 2, where the 1.6 %
    pageable-copy finding took the credit from the 53 % host-bound one because its evidence fell 100 % and
    the other's 99.8 %). Every finding the after-run no longer has whose evidence fell by half or more (or is
    gone); else every finding the after-run no longer has; else every one whose evidence fell by half."""
    fell = [r for r in rows if r["evidence_drop_pct"] is None or r["evidence_drop_pct"] >= 50]
    resolved = [r for r in rows if r["resolved"]]
    return [r for r in resolved if any(r is x for x in fell)] or resolved or \
        [r for r in fell if r["evidence_drop_pct"] is not None]


def _overlap(gains: list[float]) -> float:
    """Gains of one window that overlap: combined, not summed (100 (1 - prod(1 - g / 100)), docs/gains.md)."""
    rest = 1.0
    for g in gains:
        rest *= max(0.0, 1.0 - g / 100.0)
    return round(100.0 * (1.0 - rest), 1)


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
