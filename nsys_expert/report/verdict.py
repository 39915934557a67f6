"""The verdict: what the report can honestly say, in one of three states.

- ``diagnosed``: the top finding (severity medium or above, ranked by the time it wins back) rests on
  measured, trace-backed facts; or no finding and every system-level rule ran on measured facts with
  the GPU busy (then, and only then, "no system-level bottleneck").
- ``likely``: the top finding rests on the summary tier (``confidence: likely``); or no finding, the GPU
  looks busy, but only from summary estimates or with system-level rules not evaluated.
- ``undetermined``: no finding and the GPU utilization is unknown, or the GPU is idle for most of the
  window and no rule names a cause. The verdict then names the export that would decide it.

A report never says "no bottleneck" while a system-level rule was not evaluated or the GPU is active
less than :data:`MIN_ACTIVE_PCT` of the window.
"""
from __future__ import annotations

import dataclasses

from ..engine.missing import NotEvaluated
from ..engine.model import Finding
from ..engine.rules import SEVERITIES
from ..notes import Note
from ..scenarios.next_steps import NextStep
from .diagnosis import Limiter, Steady, Verdict
from .findings import system_categories   # a verdict of "no bottleneck" needs every system-level rule

MIN_ACTIVE_PCT = 50.0
# an estimate from summary reports is an upper bound (start-up work outside the steps counts in it): within
# this many points above MIN_ACTIVE_PCT it cannot tell a busy GPU from a starved one (conv_pdl's console
# text: 51.8 % estimated, 48.6 % measured on its SQLite), so the verdict is undetermined, never "healthy"
ESTIMATE_MARGIN_PCT = 10.0
# a window taken from the GPU trace's dense part (no NVTX timestamps) whose steady steps, as the NVTX
# summary counts them, fill less than this share of it holds a slow warm-up step or start-up: its measured
# utilization is not the steady state's (conv_pdl's CSVs: 39 x 30.4 ms of 3,056 ms)
MIN_STEADY_SHARE = 0.6
EXPLAINED_SHARE = 0.5   # idle time the gap causes attribute, above which an idle GPU is not "unexplained"
# host-device copies this share of the GPU's busy time (memcpy-bound's min_share_pct) that only a trace can
# judge (exposed or under kernels): summaries then cannot say "no bottleneck" (issue 56, item 4: copy_serial's
# summaries, copies 39 % of the busy time, said "No system-level bottleneck" where its trace says memcpy-bound)
COPY_SHARE_UNJUDGED = 30.0
# summaries holding this many times the NVTX steps' time in GPU work: the steps do not hold the run's time (a
# loader or a checkpoint between the step ranges, work outside them), so "no bottleneck" cannot be said of it
# (issue 56, item 4: pair_loader_between's summaries, 254 %, said no bottleneck where its trace is
# loader-between-steps, high; healthy_summaries' start-up work makes 114 %)
STEPS_UNBOUNDED_PCT = 150.0


def _command(next_steps: list[NextStep], system_rules: set[str]) -> str | None:
    """The first command of the first next step that supplies a system-level rule (else any step)."""
    for step in next_steps:
        if set(step.rules) & system_rules and step.commands:
            return step.commands[0]
    for step in next_steps:
        if step.commands and not step.limiter:   # a new profile of the host decides nothing
            return step.commands[0]
    return None


def decide(findings: list[Finding], not_evaluated: list[NotEvaluated], facts: dict, next_steps: list[NextStep],
           window=None, phases: dict | None = None, categories: dict | None = None) -> Verdict:
    """The verdict of ``findings`` (in the report's order) over the run's ``facts``; ``window``: the facts'
    ``Window`` (or None), ``phases``: the phases table; ``categories``: the packs' (the built-in pack's when
    None), whose level says which rules are system-level."""
    system = system_categories(categories)
    strong = [f for f in findings if SEVERITIES.index(f.severity) >= SEVERITIES.index("medium")]
    # a rule that refines another (splits a cause off its finding) is never what leaves the verdict open:
    # without its own inputs its cases count under the rule it refines, which is listed itself if it did not run
    sys_missing = sorted(n.rule for n in not_evaluated if n.category in system
                         and n.scope == "run" and not n.refines
                         and SEVERITIES.index(n.max_severity) >= SEVERITIES.index("medium"))
    if "gpu_active_pct" in facts:
        active, basis = facts["gpu_active_pct"], "measured"
    elif "gpu_active_est_pct" in facts:
        active, basis = facts["gpu_active_est_pct"], "estimated"
        if (facts.get("gpu_work_to_iter_pct") or 0) >= 100:   # the estimate hit its bound: not shown as a value
            basis = "bound"
    else:
        active, basis = None, None
    # without the GPU utilization, only a system-level cause can be the verdict: a kernel, precision or
    # start-up finding is true, but says nothing about where the time goes
    primary = next((f for f in strong if active is not None or f.category in system), None)
    steady = _steady_share(window, phases, facts)
    out = Verdict(gpu_active_pct=active, gpu_active_basis=basis, system_rules_not_evaluated=sys_missing,
                  # what the bound rests on (docs/json-contract.md)
                  gpu_work_to_iter_pct=facts["gpu_work_to_iter_pct"] if basis == "bound" else None)
    if steady is not None and steady.share < MIN_STEADY_SHARE:
        return dataclasses.replace(out, state="undetermined", reason="window_not_steady", steady=steady,
                                   next_command=_command(next_steps, set(sys_missing)))
    if primary:
        conf = primary.confidence
        return dataclasses.replace(
            out, state="likely" if conf == "likely" else "diagnosed", category=primary.category, rule=primary.rule,
            severity=primary.severity, confidence=conf,
            next_command=_command(next_steps, set(sys_missing) | {primary.rule}) if conf == "likely" else None)
    attributed = copies = None
    if active is None:
        state, reason = "undetermined", "utilization_unknown"
    elif active < MIN_ACTIVE_PCT and basis == "measured" and \
            (facts.get("gpu_idle_attributed_pct") or 0) >= EXPLAINED_SHARE * (100.0 - active):
        # the gaps have causes (host work after syncs, cpu_side_math), only no fix of the rules wins much
        state, reason, attributed = "undetermined", "idle_explained", facts["gpu_idle_attributed_pct"]
    elif active < MIN_ACTIVE_PCT:
        state, reason = "undetermined", "idle_unexplained"
    elif basis in ("estimated", "bound") and "memcpy_exposed_pct" not in facts and \
            (facts.get("memcpy_host_share_of_busy_pct") or 0) >= COPY_SHARE_UNJUDGED:
        state, reason = "undetermined", "copies_unjudged"
        copies = round(float(facts["memcpy_host_share_of_busy_pct"]), 1)
    elif basis == "bound" and (facts.get("gpu_work_to_iter_pct") or 0) >= STEPS_UNBOUNDED_PCT:
        state, reason = "undetermined", "steps_unbounded"
    elif basis == "bound":
        state, reason = "likely", "no_finding_bound"
    elif basis == "estimated" and active < MIN_ACTIVE_PCT + ESTIMATE_MARGIN_PCT:
        state, reason = "undetermined", "estimate_near_threshold"
    elif basis == "estimated" or sys_missing:
        state, reason = "likely", "no_finding_partial"
    else:
        state, reason = "diagnosed", "no_finding"
    return dataclasses.replace(out, state=state, reason=reason, gpu_idle_attributed_pct=attributed,
                               memcpy_host_share_of_busy_pct=copies,
                               next_command=_command(next_steps, set(sys_missing)) if state != "diagnosed" else None)


def undecided(v: Verdict, reason: str, next_command: str | None = None) -> Verdict:
    """``v`` with no finding as the verdict, for a ``reason`` no finding can overrule (too little work,
    nothing recorded)."""
    return dataclasses.replace(v, state="undetermined", reason=reason, category=None, rule=None, severity=None,
                               confidence=None, gpu_idle_attributed_pct=None,
                               next_command=next_command if next_command is not None else v.next_command)


# the host's own time on the critical path above which, when no finding names host work, it is the limiter
HOST_LIMITER_PCT = 50.0
HOST_LIMITER_GAIN_PCT = 20.0   # ... and moving the host's work between CUDA calls off the path wins this much
HOST_SAMPLING_STEP = NextStep(
    Note("step.need_host_profile"), Note("step.why_host_profile"), [],
    ["nsys profile --trace=cuda,nvtx,osrt --sample=process-tree --python-sampling=true "
     "--cpuctxsw=process-tree -o host python train.py",
     "py-spy record --native -o host.svg -- python train.py"], limiter=True)


HOST_NAMED_SHARE = 0.5   # of the offload gain, the host-side findings' gains that name the host's work


def limiter(findings: list[Finding], facts: dict, categories: dict | None = None) -> Limiter | None:
    """The host's own work as the limiter no finding names (sync_bound: 85 % of the critical path is
    2.2 ms of host work a step, while removing the syncs wins 10 %)."""
    from ..engine.critical import side, sides
    from ..engine.gains import within
    from ..engine.categories import builtin_categories
    host = facts.get("critical_path_host_pct")
    if not isinstance(host, (int, float)) or host < HOST_LIMITER_PCT:
        return None
    offload = facts.get("replay_gain_host_offload_pct")
    if not isinstance(offload, (int, float)) or offload < HOST_LIMITER_GAIN_PCT:
        return None   # the host's time is in CUDA calls (launches, copies, syncs) that the findings name
    sides_of = sides(categories or builtin_categories())
    # a whole-step cause on both sides of medium or more (a checkpoint saved on the training thread, a
    # read-back for host math) names the host's work too: "no finding names it" beside it was untrue (issue 56,
    # item 7)
    named = [f for f in findings
             if (side(f, within, sides_of) == "host" and SEVERITIES.index(f.severity) >= SEVERITIES.index("low"))
             or (side(f, within, sides_of) == "both" and SEVERITIES.index(f.severity) >= SEVERITIES.index("medium"))]
    # a host-side finding names the host's work only when its fix wins back a fair part of what taking the
    # work off the path would (issue 54: a sync before 90 % of numpy work is 'sync-bound, 3.5 %', and the
    # host's own work is still the limiter)
    if sum(f.estimated_gain_pct or 0.0 for f in named) >= HOST_NAMED_SHARE * offload:
        return None
    return Limiter("host", round(float(host), 1), round(float(offload), 1))


def _steady_share(window, phases: dict | None, facts: dict) -> Steady | None:
    """How much of a window chosen without NVTX timestamps the steady steps fill: (count - 1) x the median
    of the NVTX summary's step range over the window, when the steps' total spans most of the window (then
    the rest is one slow step). None when the window is the NVTX steps' own or the steps do not span it."""
    if window is None or window.source != "trace" or not phases:
        return None
    steps = [r for r in phases.get("rows", []) if r.get("phase") == "step" and not r.get("parent")]
    win = facts.get("window_ms")
    if not steps or not isinstance(win, (int, float)) or win <= 0:
        return None
    r = max(steps, key=lambda r: r.get("total_ms") or 0)
    if not isinstance(r.get("count"), int) or r["count"] < 3 or not isinstance(r.get("median_ms"), (int, float)):
        return None
    if not isinstance(r.get("total_ms"), (int, float)) or r["total_ms"] < MIN_STEADY_SHARE * win:
        return None   # host ranges that end before their GPU work (an asynchronous loop) say nothing of the window
    ms = (r["count"] - 1) * r["median_ms"]
    busy = facts.get("gpu_active_pct")
    if isinstance(busy, (int, float)) and ms < 0.5 * busy * win / 100.0:
        return None   # steady host ranges shorter than the GPU's work: they end before it (checkpoint_spikes)
    return Steady(r["name"], r["count"] - 1, round(r["median_ms"], 4), round(ms, 3), round(win, 3), round(ms / win, 3))


def _listed(findings: list, sev) -> str:
    """Findings named in the verdict's sentence, each title once with how many findings share it ("Latency-bound
    kernel ... (medium) × 12", not the title twelve times: issue 56, item 11)."""
    seen: dict[tuple, int] = {}
    for f in findings:
        k = (f.title, f.severity)
        seen[k] = seen.get(k, 0) + 1
    return "; ".join(f"{t} ({sev(s)})" + (f" × {n}" if n > 1 else "") for (t, s), n in seen.items())


def words(d, L: dict, sev) -> dict:
    """The verdict of ``d`` (a ``Diagnosis``) in words, for every renderer: ``label`` (Verdict / Verdict
    (likely ...) / ...), ``text`` (one sentence), ``severity`` (of the top finding or None), ``command_label``
    and ``command``."""
    v: Verdict = d.verdict
    findings = d.findings
    out = {"label": L["verdict"], "text": "", "severity": v.severity, "command_label": None,
           "command": v.next_command, "ok": False}
    state = v.state
    lim = v.limiter
    # the limiter no finding names: a sentence of its own after the verdict's (and its severity)
    out["limiter"] = (L["limiter_host"].replace("{host}", f"{lim.critical_path_host_pct:,.1f}")
                      .replace("{offload}", f"{lim.replay_gain_host_offload_pct:,.1f}")) if lim else None
    if v.rule:
        top = next((f for f in findings if f.rule == v.rule), None)
        out["text"] = top.title if top else str(v.category)
        if state == "likely":
            out["label"], out["command_label"] = L["verdict_likely"], L["confirm"]
        return out
    if state == "diagnosed":
        # no bottleneck, but a minor finding (low: a warm-up cost in the window, a small share) is named
        minor = [f for f in findings if f.severity == "low"]
        busy = any(f.category == "compute-bound" for f in findings)   # at the roof: a finding, not "nothing"
        text = (L["compute_ok"] if busy else L["none_found"]) + (f" {L['also_noted']}: " + _listed(minor, sev) + "." if minor else "")
        out.update(text=text, ok=True)
        return out
    active = v.gpu_active_pct
    basis = L.get("basis_" + str(v.gpu_active_basis), "")
    work = v.gpu_work_to_iter_pct
    reason = v.reason
    little = d.too_little_work
    if reason == "too_little_work" and active is None and little is not None and little.gpu_busy_ms is not None:
        reason = "too_little_work_summary"   # no trace: the summaries' GPU work of the whole profile (engine/resolve.py)
    elif reason == "too_little_work" and little is not None and little.gpu_ops is not None:
        reason = "too_little_work_ops"       # a few long kernels: the GPU was busy, but with too few operations
    elif reason == "too_little_work" and little is not None and little.profiler_steps is not None:
        reason = "too_little_work_steps"     # a torch.profiler trace of one step, maybe a stub
    st = v.steady
    text = L["reason_" + reason]
    if reason.endswith("_ops"):
        text = text.replace("{ops}", str(little.gpu_ops)).replace("{window_ms}", f"{d.facts.get('window_ms') or 0:,.3g}")
    text = (text.replace("{work_ms}", f"{little.gpu_busy_ms:.3g}" if reason.endswith("_summary") else "")
            .replace("{active}", f"{active:,.1f}" if active is not None else "–")
            .replace("{basis}", basis).replace("{work}", f"{work:,.0f}" if work is not None else "–")
            .replace("{attributed}", f"{v.gpu_idle_attributed_pct or 0:,.1f}")
            .replace("{copies}", f"{v.memcpy_host_share_of_busy_pct or 0:,.1f}")
            .replace("{steady_ms}", f"{st.steady_ms if st else 0:,.0f}")
            .replace("{window_ms}", f"{st.window_ms if st else 0:,.0f}")
            .replace("{steps}", str(st.steps if st else ""))
            .replace("{range}", str(st.range if st else ""))
            .replace("{median_ms}", f"{st.median_ms if st else 0:,.3g}")) + "."
    if state == "undetermined" and findings:
        text += f" {L['found_so_far']}: " + _listed(findings, sev) + "."
    if v.system_rules_not_evaluated and reason not in ("no_rows", "no_gpu_work"):
        text += f" {L['not_checked']}: " + ", ".join(v.system_rules_not_evaluated) + "."
    out["text"] = text
    # likely because rules could not run, on a measured trace: not "from summary reports"
    partial = state == "likely" and v.gpu_active_basis == "measured"   # "bound" is from summaries too
    out["label"] = (L["verdict_partial"] if partial else L["verdict_likely"]) if state == "likely" else L["verdict_undetermined"]
    out["command_label"] = L["confirm"] if state == "likely" else L["export_next"]
    return out
