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

from ..engine.rules import SEVERITIES

# the categories of the system-level (whole-run) rules: a verdict of "no bottleneck" needs them all
SYSTEM_CATEGORIES = ("launch-bound", "sync-bound", "memcpy-bound", "compute-bound", "memory-bound",
                     "data-io-bound", "host-bound", "comm-bound", "gpu-idle")
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


def _command(next_steps: list[dict], system_rules: set[str]) -> str | None:
    """The first command of the first next step that supplies a system-level rule (else any step)."""
    for step in next_steps:
        if set(step.get("rules", [])) & system_rules and step.get("commands"):
            return step["commands"][0]
    for step in next_steps:
        if step.get("commands") and not step.get("limiter"):   # a new profile of the host decides nothing
            return step["commands"][0]
    return None


def decide(findings: list[dict], not_evaluated: list[dict], facts: dict, next_steps: list[dict],
           window: dict | None = None, phases: dict | None = None) -> dict:
    strong = [f for f in findings if SEVERITIES.index(f["severity"]) >= SEVERITIES.index("medium")]
    # a rule that refines another (splits a cause off its finding) is never what leaves the verdict open:
    # without its own inputs its cases count under the rule it refines, which is listed itself if it did not run
    sys_missing = sorted(n["rule"] for n in not_evaluated if n.get("category") in SYSTEM_CATEGORIES
                         and n.get("scope", "run") == "run" and not n.get("refines")
                         and SEVERITIES.index(n.get("max_severity", "medium")) >= SEVERITIES.index("medium"))
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
    primary = next((f for f in strong if active is not None or f["category"] in SYSTEM_CATEGORIES), None)
    steady = _steady_share(window, phases, facts)
    out = {"state": None, "category": None, "rule": None, "severity": None, "confidence": None,
           "gpu_active_pct": active, "gpu_active_basis": basis, "reason": None,
           "system_rules_not_evaluated": sys_missing, "next_command": None}
    if basis == "bound":   # what the bound rests on (docs/json-contract.md)
        out["gpu_work_to_iter_pct"] = facts["gpu_work_to_iter_pct"]
    if steady is not None and steady["share"] < MIN_STEADY_SHARE:
        out.update(state="undetermined", reason="window_not_steady", steady=steady,
                   next_command=_command(next_steps, set(sys_missing)))
        return out
    if primary:
        conf = primary.get("confidence", "measured")
        out.update(state="likely" if conf == "likely" else "diagnosed", category=primary["category"],
                   rule=primary["rule"], severity=primary["severity"], confidence=conf)
        if conf == "likely":
            out["next_command"] = _command(next_steps, set(sys_missing) | {primary["rule"]})
        return out
    if active is None:
        out.update(state="undetermined", reason="utilization_unknown")
    elif active < MIN_ACTIVE_PCT and basis == "measured" and \
            (facts.get("gpu_idle_attributed_pct") or 0) >= EXPLAINED_SHARE * (100.0 - active):
        # the gaps have causes (host work after syncs, cpu_side_math), only no fix of the rules wins much
        out.update(state="undetermined", reason="idle_explained",
                   gpu_idle_attributed_pct=facts["gpu_idle_attributed_pct"])
    elif active < MIN_ACTIVE_PCT:
        out.update(state="undetermined", reason="idle_unexplained")
    elif basis in ("estimated", "bound") and "memcpy_exposed_pct" not in facts and \
            (facts.get("memcpy_host_share_of_busy_pct") or 0) >= COPY_SHARE_UNJUDGED:
        out.update(state="undetermined", reason="copies_unjudged",
                   memcpy_host_share_of_busy_pct=round(float(facts["memcpy_host_share_of_busy_pct"]), 1))
    elif basis == "bound":
        out.update(state="likely", reason="no_finding_bound")
    elif basis == "estimated" and active < MIN_ACTIVE_PCT + ESTIMATE_MARGIN_PCT:
        out.update(state="undetermined", reason="estimate_near_threshold")
    elif basis == "estimated" or sys_missing:
        out.update(state="likely", reason="no_finding_partial")
    else:
        out.update(state="diagnosed", reason="no_finding")
    if out["state"] != "diagnosed":
        out["next_command"] = _command(next_steps, set(sys_missing))
    return out


# the host's own time on the critical path above which, when no finding names host work, it is the limiter
HOST_LIMITER_PCT = 50.0
HOST_LIMITER_GAIN_PCT = 20.0   # ... and moving the host's work between CUDA calls off the path wins this much
HOST_SAMPLING_STEP = {
    "need": "A profile of the host's own work",
    "why": "most of each iteration's critical path is the launching thread's own work between CUDA calls, "
           "and no finding names it: sample its Python and native stacks to see what it is",
    "rules": [], "limiter": True,
    "commands": ["nsys profile --trace=cuda,nvtx,osrt --sample=process-tree --python-sampling=true "
                 "--cpuctxsw=process-tree -o host python train.py",
                 "py-spy record --native -o host.svg -- python train.py"]}


def limiter(findings: list[dict], facts: dict) -> dict | None:
    """The host's own work as the limiter no finding names (sync_bound: 85 % of the critical path is
    2.2 ms of host work a step, while removing the syncs wins 10 %): ``{"side", "critical_path_host_pct"}``."""
    from ..engine.critical import side
    from ..engine.gains import within
    host = facts.get("critical_path_host_pct")
    if not isinstance(host, (int, float)) or host < HOST_LIMITER_PCT:
        return None
    offload = facts.get("replay_gain_host_offload_pct")
    if not isinstance(offload, (int, float)) or offload < HOST_LIMITER_GAIN_PCT:
        return None   # the host's time is in CUDA calls (launches, copies, syncs) that the findings name
    if any(side(f, within) == "host" and SEVERITIES.index(f["severity"]) >= SEVERITIES.index("low")
           for f in findings):
        return None
    # a whole-step cause on both sides (a checkpoint saved on the training thread, a read-back for host math)
    # names the host's work too: "no finding names it" beside it was untrue (issue 56, item 7)
    if any(side(f, within) == "both" and SEVERITIES.index(f["severity"]) >= SEVERITIES.index("medium")
           for f in findings):
        return None
    return {"side": "host", "critical_path_host_pct": round(float(host), 1),
            "replay_gain_host_offload_pct": round(float(offload), 1)}


def _steady_share(window: dict | None, phases: dict | None, facts: dict) -> dict | None:
    """How much of a window chosen without NVTX timestamps the steady steps fill: (count - 1) x the median
    of the NVTX summary's step range over the window, when the steps' total spans most of the window (then
    the rest is one slow step). None when the window is the NVTX steps' own or the steps do not span it."""
    if not window or window.get("source") != "trace" or not phases:
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
    return {"range": r["name"], "steps": r["count"] - 1, "median_ms": round(r["median_ms"], 4),
            "steady_ms": round(ms, 3), "window_ms": round(win, 3), "share": round(ms / win, 3)}


def _listed(findings: list[dict], sev) -> str:
    """Findings named in the verdict's sentence, each title once with how many findings share it ("Latency-bound
    kernel ... (medium) × 12", not the title twelve times: issue 56, item 11)."""
    seen: dict[tuple, int] = {}
    for f in findings:
        k = (f["title"], f["severity"])
        seen[k] = seen.get(k, 0) + 1
    return "; ".join(f"{t} ({sev(s)})" + (f" × {n}" if n > 1 else "") for (t, s), n in seen.items())


def words(doc: dict, L: dict, sev) -> dict:
    """The verdict in words, for every renderer: ``label`` (Verdict / Verdict (likely ...) / ...),
    ``text`` (one sentence), ``severity`` (of the top finding or None), ``command_label`` and ``command``."""
    v = doc["verdict"]
    findings = doc.get("findings", [])
    out = {"label": L["verdict"], "text": "", "severity": v.get("severity"), "command_label": None,
           "command": v.get("next_command"), "ok": False}
    state = v.get("state")
    lim = v.get("limiter")
    # the limiter no finding names: a sentence of its own after the verdict's (and its severity)
    out["limiter"] = (L["limiter_host"].replace("{host}", f"{lim['critical_path_host_pct']:,.1f}")
                      .replace("{offload}", f"{lim.get('replay_gain_host_offload_pct', 0):,.1f}")) if lim else None
    if v.get("rule"):
        top = next((f for f in findings if f["rule"] == v["rule"]), None)
        out["text"] = top["title"] if top else str(v["category"])
        if state == "likely":
            out["label"], out["command_label"] = L["verdict_likely"], L["confirm"]
        return out
    if state == "diagnosed":
        # no bottleneck, but a minor finding (low: a warm-up cost in the window, a small share) is named
        minor = [f for f in findings if f["severity"] == "low"]
        busy = any(f["category"] == "compute-bound" for f in findings)   # at the roof: a finding, not "nothing"
        text = (L["compute_ok"] if busy else L["none_found"]) + (f" {L['also_noted']}: " + _listed(minor, sev) + "." if minor else "")
        out.update(text=text, ok=True)
        return out
    active = v.get("gpu_active_pct")
    basis = L.get("basis_" + str(v.get("gpu_active_basis")), "")
    work = v.get("gpu_work_to_iter_pct")
    reason = v["reason"]
    if reason == "too_little_work" and active is None and (doc.get("too_little_work") or {}).get("gpu_busy_ms") is not None:
        reason = "too_little_work_summary"   # no trace: the summaries' GPU work of the whole profile (engine/resolve.py)
    text = (L["reason_" + reason].replace("{work_ms}", f"{doc['too_little_work']['gpu_busy_ms']:.3g}" if reason.endswith("_summary") else "")
            .replace("{active}", f"{active:,.1f}" if active is not None else "–")
            .replace("{basis}", basis).replace("{work}", f"{work:,.0f}" if work is not None else "–")
            .replace("{attributed}", f"{v.get('gpu_idle_attributed_pct') or 0:,.1f}")
            .replace("{copies}", f"{v.get('memcpy_host_share_of_busy_pct') or 0:,.1f}")
            .replace("{steady_ms}", f"{(v.get('steady') or {}).get('steady_ms', 0):,.0f}")
            .replace("{window_ms}", f"{(v.get('steady') or {}).get('window_ms', 0):,.0f}")
            .replace("{steps}", str((v.get("steady") or {}).get("steps", "")))
            .replace("{range}", str((v.get("steady") or {}).get("range", "")))
            .replace("{median_ms}", f"{(v.get('steady') or {}).get('median_ms', 0):,.3g}")) + "."
    if state == "undetermined" and findings:
        text += f" {L['found_so_far']}: " + _listed(findings, sev) + "."
    if v.get("system_rules_not_evaluated") and reason not in ("no_rows", "no_gpu_work"):
        text += f" {L['not_checked']}: " + ", ".join(v["system_rules_not_evaluated"]) + "."
    out["text"] = text
    # likely because rules could not run, on a measured trace: not "from summary reports"
    partial = state == "likely" and v.get("gpu_active_basis") == "measured"   # "bound" is from summaries too
    out["label"] = (L["verdict_partial"] if partial else L["verdict_likely"]) if state == "likely" else L["verdict_undetermined"]
    out["command_label"] = L["confirm"] if state == "likely" else L["export_next"]
    return out
