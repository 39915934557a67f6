"""The time a finding wins back, once resolution has one finding per cause (``resolve``, its steps 4-6).

Every finding is about a subject, a part of the window: the tree ``run > idle | busy > kernels | copies >
kernel:<name> | nccl``. Here:
- each subject's share of the window (``share``: its own fact, else its parent's, an upper bound);
- a finding's gain held to its subject's share and to what the critical path lets its fix win
  (``engine/critical.py``), its basis (replayed, summary, estimated) and, from summary reports, its range;
- its severity held to what the gain allows (pack params ``gain_for_<level>_pct``);
- the union of the gains (``recoverable``): per subject as overlapping (each fix works on what the others
  leave: ``S (1 - prod(1 - g/S))``), different parts added within their parent's share, at most 100 %;
- the minimum-work guard (``guard``): too little GPU work in the window caps every finding at low.
Nothing here knows a rule by name: the rule files say the subject and the estimate, the pack the params.
"""
from __future__ import annotations

from . import critical
import dataclasses

from ..notes import Note
from .model import Finding, Recoverable, SubjectGain, TooLittleWork
from .rules import SEVERITIES, Rule

# subject -> (parent, how its share of the window is found); kernel:<name> subjects hang under "kernels"
PARENT = {"run": None, "idle": "run", "busy": "run", "kernels": "busy", "copies": "busy", "nccl": "kernels",
          "ranks": "run", "iterations": "run", "startup": "run"}
SHARE_FACT = {"idle": "gpu_idle_pct", "busy": "gpu_active_pct", "kernels": "kernel_active_pct",
              "copies": "memcpy_active_pct"}
# without a trace, the summaries' estimates of the same shares: sums of kernel / copy time over the iterations'
# time, upper bounds of the shares (overlapping work counts twice), so a gain stays within them (issue 56,
# item 4: "35-100 % of the window" on a 70 % memory-bound finding). The idle share has no such bound (100
# minus an upper bound of the busy share is a lower bound): it keeps its parent's.
SHARE_EST = {"busy": "gpu_active_est_pct", "kernels": "kernel_active_est_pct", "copies": "memcpy_active_est_pct"}
# a gain from summary reports is a flat factor of an estimated share: on the measured pairs such factors
# missed by up to half of the measured gain either way (docs/gains.md), so it is given as this range
SUMMARY_RANGE = (0.5, 1.5)


def parent(sid: str) -> str | None:
    return "kernels" if sid.startswith("kernel:") else PARENT.get(sid)


def within(child: str, whole: str) -> bool:
    """Whether subject ``child`` is ``whole`` or a part of it (kernel:X < kernels < busy < run)."""
    s: str | None = child
    while s is not None:
        if s == whole:
            return True
        s = parent(s)
    return False


def share(sid: str, run: dict, kernels: dict) -> float:
    """The subject's share of the window (%): its own fact, else its parent's share (an upper bound)."""
    v = None
    if sid == "run":
        return 100.0
    if sid == "startup":
        return 0.0                                     # outside the window: it wins back none of it
    if sid in ("ranks", "iterations"):
        v = 100.0
    elif sid == "idle":
        v = run.get("gpu_idle_pct")
        if v is None and isinstance(run.get("gpu_active_pct"), (int, float)):
            v = 100.0 - run["gpu_active_pct"]
    elif sid == "nccl":
        a, b = run.get("nccl_share_of_busy_pct"), run.get("gpu_active_pct")
        v = a * b / 100.0 if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    elif sid.startswith("kernel:"):
        k = kernels.get(sid[7:]) or {}
        a, b = k.get("time_share_pct"), run.get("kernel_active_pct")
        v = a * b / 100.0 if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    else:
        v = run.get(SHARE_FACT.get(sid, ""))
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            v = run.get(SHARE_EST.get(sid, ""))
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return share(parent(sid) or "run", run, kernels)
    return max(0.0, min(100.0, float(v)))


def overlap(s: float, gains: list[float]) -> float:
    """Gains on one subject of share ``s``, each fix working on what the others leave."""
    if s <= 0:
        return 0.0
    left = 1.0
    for g in gains:
        left *= 1.0 - min(max(g, 0.0), s) / s
    return s * (1.0 - left)


def allowed_severity(gain: float | None, params: dict) -> str:
    """The most severe level a gain (% of the window) allows under the pack's ``gain_for_<level>_pct``."""
    if gain is None:
        return "critical"
    best = "info"
    for level in ("low", "medium", "high", "critical"):
        need = params.get(f"gain_for_{level}_pct")
        if need is None or gain >= need:
            best = level
        else:
            break
    return best


def settle(f: Finding, rule: Rule, run: dict, kernels: dict, sides_of: dict) -> None:
    """A resolved finding's gain within its subject's share and the critical path's bound, its basis, and
    its severity within what the gain allows (``rule_severity`` keeps the level it had before)."""
    f.rule_severity = f.severity            # the rule's own level (its cases test this one)
    s = share(f.subject, run, kernels)
    f.subject_share_pct = round(s, 1)
    if f.estimated_gain_pct is not None:
        f.estimated_gain_pct = round(min(f.estimated_gain_pct, s), 1)
    gain_basis(f, rule, run, s)
    bound = critical.finding_cap(f, run, within, sides_of)
    cap = bound[0] if bound else None
    if cap is not None and f.estimated_gain_pct is not None and f.estimated_gain_pct > cap:
        f.estimated_gain_pct, f.gain_capped_by = round(cap, 1), bound[1]
        if f.estimated_gain_range_pct:
            f.estimated_gain_range_pct = [min(v, round(cap, 1)) for v in f.estimated_gain_range_pct]
    level = allowed_severity(f.estimated_gain_pct, rule.pack_params)
    if SEVERITIES.index(f.severity) > SEVERITIES.index(level):
        f.severity = level


def gain_basis(f: Finding, rule: Rule, run: dict, share_pct: float) -> None:
    """``gain_basis``: ``replayed`` (the rule's transformation replayed on the iteration), ``summary`` (from
    summary reports: ``estimated_gain_range_pct`` is [low, high], never a point pretending precision) or
    ``estimated`` (a rule's factor over measured trace facts)."""
    g = f.estimated_gain_pct
    if g is None:
        return
    t = (rule.estimate or {}).get("replay")
    if t and isinstance(run.get(f"replay_gain_{t}_pct"), (int, float)):
        f.gain_basis = "replayed"
    elif f.confidence == "likely":
        f.gain_basis = "summary"
        lo, hi = SUMMARY_RANGE
        f.estimated_gain_range_pct = [round(g * lo, 1), round(min(share_pct, 100.0, g * hi), 1)]
    else:
        f.gain_basis = "estimated"


def guard(findings: list[Finding], rules: dict[str, Rule], run: dict) -> tuple[TooLittleWork, Note] | None:
    """Too little GPU work in the window to judge: every finding capped at low; (``too_little_work``, the
    note that says so), or None when there is enough work (or no way to tell)."""
    limit = next((r.pack_params["min_gpu_busy_ms"] for r in rules.values() if "min_gpu_busy_ms" in r.pack_params), None)
    if limit is None:
        return None
    active, window = run.get("gpu_active_pct"), run.get("window_ms")
    if isinstance(active, (int, float)) and isinstance(window, (int, float)):
        busy_ms = active * window / 100.0
        note = ("engine.too_little_work", {"work": busy_ms, "window": window, "limit": limit})
    elif isinstance(run.get("gpu_work_ms"), (int, float)):
        # no trace: the summaries' GPU work (kernels + copies + memsets) of the whole profile, which is the window
        busy_ms = float(run["gpu_work_ms"])
        note = ("engine.too_little_work_summaries", {"work": busy_ms, "limit": limit})
    else:
        return None
    little = TooLittleWork(round(busy_ms, 4), limit)
    steps = run.get("profiler_step_count")
    if busy_ms >= limit:
        few = _few_ops(rules, run) if note[0] == "engine.too_little_work" else None
        if few is not None:
            ops, least = few
            little.gpu_ops, little.min_gpu_ops = ops, least
            note = ("engine.too_few_gpu_ops", {"ops": ops, "window": window, "least": least})
        elif isinstance(steps, int) and steps == 1:
            # a torch.profiler trace of one step: the profiler's stop may have cut it short (the stub after the
            # loop's last prof.step()), and with no other step to compare it cannot be told (issue 56, item 3)
            little.profiler_steps = steps
            note = ("engine.one_profiler_step", {"window": window})
        else:
            return None
    for f in findings:
        if SEVERITIES.index(f.severity) > SEVERITIES.index("low"):
            f.severity = "low"
    return little, Note(*note)


def _few_ops(rules: dict[str, Rule], run: dict) -> tuple[int, int] | None:
    """(kernels in the window, the least the pack asks) when a window without copies holds fewer kernels
    (NCCL kernels and graph launches counted) than ``min_gpu_ops``, however long they run: one GEMM of 1.4 ms
    that a torch.profiler trace caught after its start-up is not a run to call compute-bound (issue 56,
    item 3); else None."""
    least = next((r.pack_params["min_gpu_ops"] for r in rules.values() if "min_gpu_ops" in r.pack_params), None)
    kernels = run.get("kernel_count")
    if least is None or not isinstance(kernels, (int, float)) or (run.get("memcpy_active_pct") or 0) > 0:
        return None   # copies are work the kernel count does not hold: not judged by it
    ops = int(kernels) + sum(int(run.get(k) or 0) for k in ("nccl_kernel_count", "graph_launch_count"))
    return (ops, int(least)) if ops < least else None


def recoverable(findings: list[Finding], run: dict, kernels: dict, rules: dict[str, Rule] | None = None,
                replay=None) -> Recoverable:
    """The union of the findings' gains: per subject as overlapping, subjects of one parent added (at most
    the parent's share), up the tree to the run (at most 100 %). When every finding with a gain names
    its transformation (``estimate.replay``) and the iteration was replayed, the total is those
    transformations replayed together (``basis: replayed``)."""
    gaining = [f for f in findings if f.estimated_gain_pct]
    rules = rules or {}
    names = [(rules[f.rule].estimate or {}).get("replay") if f.rule in rules else None for f in gaining]
    if replay is not None and gaining and all(names):
        out = _union(findings, run, kernels)
        gains = [f.estimated_gain_pct for f in gaining]
        # between the largest gain and their sum: fixes replayed together may overlap, never more than add
        total = min(100.0, sum(gains), max(max(gains), replay(names)))
        return dataclasses.replace(out, total_pct=round(total, 1), basis="replayed", replayed=sorted(set(names)))
    return _union(findings, run, kernels)


def _union(findings: list[Finding], run: dict, kernels: dict) -> Recoverable:
    known: dict[str, float] = {}

    def shares(sid: str) -> float:       # share() of each subject once (it is asked three times)
        v = known.get(sid)
        if v is None:
            v = known[sid] = share(sid, run, kernels)
        return v

    own: dict[str, list[float]] = {}
    for f in findings:
        if f.estimated_gain_pct is not None:
            own.setdefault(f.subject, []).append(f.estimated_gain_pct)
    nodes = set()
    for sid in own:
        s: str | None = sid
        while s is not None:
            nodes.add(s)
            s = parent(s)
    children: dict[str, list[str]] = {}
    for n in nodes:
        if parent(n) is not None:
            children.setdefault(parent(n), []).append(n)

    def union(n: str) -> float:
        s = shares(n)
        below = min(s, sum(union(c) for c in children.get(n, [])))
        return overlap(s, own.get(n, []) + ([below] if below else []))

    total = union("run") if nodes else 0.0
    return Recoverable(round(total, 1), [SubjectGain(sid, round(shares(sid), 1), round(overlap(shares(sid), g), 1), len(g))
                                         for sid, g in sorted(own.items())])
