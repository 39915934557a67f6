"""engine/resolve.py and engine/relations.py on small packs: folding, refuting, combining, gains that add up,
severity from gain, the minimum-work guard, and the validation errors of the relation keys."""
import json

import pytest

from nsys_expert import engine
from nsys_expert.engine import resolve
from nsys_expert.engine.rules import load_packs
from nsys_expert.errors import RuleError
from nsys_expert.facts import FactSet

from conftest import expected_doc, finding, FIXTURES

PACK = """\
name: t
version: "1"
params:
  gain_for_low_pct: {default: 1}
  gain_for_medium_pct: {default: 3}
  gain_for_high_pct: {default: 10}
  gain_for_critical_pct: {default: 50}
  min_gpu_busy_ms: {default: 1}
conditions:
  user-kernel:
    when: {fact: name, op: startswith, value: "my_"}
"""


def _rule(rid, **kw):
    base = {"id": rid, "title": rid, "category": kw.pop("category", "stability"), "severity": kw.pop("severity", "high"),
            "message": rid, "when": kw.pop("when", {"fact": "gpu_active_pct", "op": "gte", "value": 0})}
    base.update(kw)
    return base


def _pack(tmp_path, rules, pack=PACK):
    import yaml

    (tmp_path / "pack.yaml").write_text(pack)
    for r in rules:
        (tmp_path / f"{r['id']}.yaml").write_text(yaml.safe_dump(r, sort_keys=False))
    return str(tmp_path)


def _run(tmp_path, rules, run, kernels=(), tables=("gpu_trace",), pack=PACK):
    packs = load_packs([_pack(tmp_path, rules, pack)], builtin=False, installed=False)
    fs = FactSet(run=dict(run), kernels=[dict(k) for k in kernels])
    return engine.evaluate(engine.RuleSet.of([r for p in packs for r in p.rules]), fs, set(tables))


KW = {"when": {"fact": "tensor_pipe_active_pct", "op": "lt", "value": 5}, "scope": "kernel", "subject": "kernel",
      "estimate": {"expr": "time_share_pct * kernel_active_pct / 100 * 0.7"}}
RUN = {"gpu_active_pct": 20.0, "gpu_idle_pct": 80.0, "kernel_active_pct": 20.0, "window_ms": 100.0}


def test_chain_folds_into_one_finding_and_refuted_becomes_evidence(tmp_path):
    rules = [
        _rule("sys-gemm", subject="kernels", severity="medium", supersedes=["kern-gemm"],
              estimate={"expr": "kernel_active_pct * 0.5"}),
        _rule("kern-gemm", **KW, supersedes=["kern-ncu"], refutes=[{"rule": "kern-roof", "because": "wrong roof"}]),
        _rule("kern-ncu", **{**KW, "severity": "low"}),
        _rule("kern-roof", **{k: v for k, v in {**KW, "severity": "info", "actionable": False}.items() if k != "estimate"}),
    ]
    ev = _run(tmp_path, rules, RUN, [{"name": "sgemm", "time_share_pct": 90.0, "tensor_pipe_active_pct": 0.0}])
    assert [f["rule"] for f in ev.findings] == ["sys-gemm"]
    f = ev.findings[0]
    assert [(s["rule"], s["relation"]) for s in f["supporting"]] == [("kern-gemm", "folded"), ("kern-roof", "refuted"),
                                                                     ("kern-ncu", "folded")]
    assert f["supporting"][1]["because"] == "wrong roof"
    # the larger gain of the same cause (12.6 from the kernel, 10 from the system rule), within the kernels' 20 %
    assert f["estimated_gain_pct"] == 12.6 and f["subject_share_pct"] == 20.0
    assert f["severity"] == "high" and f["rule_severity"] == "high"      # the folded rule's high, 12.6 % allows it


def test_gains_capped_by_subject_and_severity_by_gain(tmp_path):
    rules = [_rule("idle-a", subject="idle", estimate={"expr": "95"}),
             _rule("idle-b", subject="idle", estimate={"expr": "50"}),
             _rule("tiny", subject="kernels", severity="critical", estimate={"expr": "2"})]
    ev = _run(tmp_path, rules, RUN)
    by = {f["rule"]: f for f in ev.findings}
    assert by["idle-a"]["estimated_gain_pct"] == 80.0                     # at most the idle share
    assert by["tiny"]["severity"] == "low"                               # 2 % allows low, not critical
    assert by["idle-a"]["severity"] == "high" and by["idle-b"]["severity"] == "high"
    # idle: 80 (both overlap: 80 x (1 - 0 x 0.375) = 80); kernels: 2; they add: 82
    assert ev.recoverable["total_pct"] == 82.0
    assert [s["subject"] for s in ev.recoverable["subjects"]] == ["idle", "kernels"]


def test_overlap_and_union():
    assert resolve.overlap(50, [25, 25]) == pytest.approx(37.5)
    assert resolve.overlap(50, [60]) == 50
    assert resolve.overlap(0, [5]) == 0
    assert resolve.within("kernel:x", "busy") and resolve.within("copies", "run") and not resolve.within("idle", "busy")
    fs = [finding(subject="idle", estimated_gain_pct=60.0), finding(subject="kernel:k", estimated_gain_pct=30.0),
          finding(subject="kernels", estimated_gain_pct=30.0)]
    rec = resolve.recoverable(fs, {"gpu_idle_pct": 60.0, "gpu_active_pct": 40.0, "kernel_active_pct": 40.0},
                              {"k": {"time_share_pct": 100.0}})
    # kernels: its own 30 overlaps the kernel's 30 within 40: 40 x (1 - 0.25 x 0.25) = 37.5; + idle 60 = 97.5
    assert rec["total_pct"] == 97.5


def test_allowed_severity():
    p = {"gain_for_low_pct": 1, "gain_for_medium_pct": 3, "gain_for_high_pct": 10, "gain_for_critical_pct": 50}
    assert [resolve.allowed_severity(g, p) for g in (0.5, 1, 5, 10, 60, None)] == \
        ["info", "low", "medium", "high", "critical", "critical"]
    assert resolve.allowed_severity(0.1, {}) == "critical"                 # a pack without thresholds caps nothing


def test_combine_kernels_and_conditional_relation(tmp_path):
    rules = [_rule("grid", **{**KW, "combine": "kernels", "severity": "medium"}),
             _rule("fix-user", **{**KW, "severity": "low"}),
             _rule("lib-only", **{**KW, "severity": "low", "supersedes": [{"rule": "fix-user", "when": {"not": {"condition": "user-kernel"}}}]})]
    ks = [{"name": "my_k", "time_share_pct": 60.0, "tensor_pipe_active_pct": 0.0},
          {"name": "cublas_k", "time_share_pct": 40.0, "tensor_pipe_active_pct": 0.0}]
    ev = _run(tmp_path, rules, RUN, ks)
    got = sorted((f["rule"], f["scope"]["kernel"], f["subject"]) for f in ev.findings)
    # one grid finding for both kernels; fix-user folded into lib-only only on the library kernel
    assert got == [("fix-user", "my_k", "kernel:my_k"), ("grid", "my_k", "kernels"), ("lib-only", "cublas_k", "kernel:cublas_k"),
                   ("lib-only", "my_k", "kernel:my_k")]
    grid = next(f for f in ev.findings if f["rule"] == "grid")
    assert grid["estimated_gain_pct"] == pytest.approx(14.0)               # 8.4 + 5.6: different kernels add


def test_advice_conditions(tmp_path):
    rules = [_rule("adv", advice=[{"en": "always"}, {"en": "no ncu", "when": {"not": {"input": "ncu"}}},
                                  {"en": "pageable", "when": {"fact": "memcpy_pageable_share_pct", "op": "gte", "value": 10}}])]
    ev = _run(tmp_path, rules, {**RUN, "memcpy_pageable_share_pct": 0.1}, tables=("gpu_trace", "ncu"))
    assert ev.findings[0]["advice"] == ["always"]
    ev = _run(tmp_path, rules, {**RUN, "memcpy_pageable_share_pct": 90.0})
    assert ev.findings[0]["advice"] == ["always", "no ncu", "pageable"]


def test_too_little_work(tmp_path):
    ev = _run(tmp_path, [_rule("big", subject="idle", estimate={"expr": "70"})], {**RUN, "gpu_active_pct": 0.5})
    assert (ev.too_little_work.gpu_busy_ms, ev.too_little_work.min_gpu_busy_ms) == (0.5, 1.0)
    assert ev.findings[0]["severity"] == "low" and "too little to judge" in str(ev.notes[0])


@pytest.mark.parametrize("rules,msg", [
    ([_rule("a", supersedes=["b"]), _rule("b", supersedes=["a"])], "cycle"),
    ([_rule("a", supersedes=["nope"])], "names no rule 'nope'"),
    ([_rule("a", cause="x"), _rule("b", cause="x")], "share the cause 'x'"),
    ([_rule("a", severity="info", actionable=False, supersedes=["b"]), _rule("b")], "cannot supersede"),
    ([_rule("a", actionable=False)], "needs severity info"),
    ([_rule("a", subject="kernel")], "does not fit scope"),
    ([_rule("a", advice=[{"en": "x", "when": {"input": "nvtx"}}])], "unknown input 'nvtx'"),
    ([_rule("a", advice=[{"en": "x", "when": {"condition": "nope"}}])], "unknown named condition 'nope'"),
    ([_rule("a", advice=[{"en": "x", "when": {"fact": "name", "op": "matches", "value": "x"}}], scope="kernel",
            subject="kernel", when={"fact": "time_share_pct", "op": "gt", "value": 1})], "not allowed here"),
    ([_rule("a", combine="kernels")], "combine: kernels is for kernel rules"),
])
def test_relation_errors(tmp_path, rules, msg):
    with pytest.raises(RuleError, match=msg):
        load_packs([_pack(tmp_path, rules)], builtin=False, installed=False)


def test_pack_param_errors(tmp_path):
    bad = PACK.replace("gain_for_low_pct", "gain_for_lo_pct")
    with pytest.raises(RuleError, match="did you mean 'gain_for_low_pct'"):
        load_packs([_pack(tmp_path, [_rule("a")], bad)], builtin=False, installed=False)
    bad = PACK.replace("gain_for_high_pct: {default: 10}", "gain_for_high_pct: {default: 1}")
    with pytest.raises(RuleError, match="gain_for_low_pct <= gain_for_medium_pct"):
        load_packs([_pack(tmp_path, [_rule("a")], bad)], builtin=False, installed=False)


def test_a_pack_without_params_uses_the_builtin_ones(tmp_path):
    packs = load_packs([_pack(tmp_path, [_rule("custom-x")], "name: t\nversion: '1'\n")], installed=False)
    custom = next(r for p in packs for r in p.rules if r.id == "custom-x")
    assert custom.pack_params["gain_for_high_pct"] == 10 and "library-kernel" in custom.pack_conditions


def test_without_a_trace_a_subject_is_bounded_by_its_summary_estimate():
    """Issue 56, item 4: from summaries, the fp32 GEMM finding (subject: kernels) was bounded by the whole
    window, and its range reached 12.8 % where the kernels are at most 11.6 % of it (sync_bound's console
    text: kernel time over the iterations' time, an upper bound of their share)."""
    from nsys_expert.engine import gains
    run = {"kernel_active_est_pct": 11.6, "gpu_active_est_pct": 14.0, "memcpy_active_est_pct": 2.4,
           "gpu_idle_est_pct": 86.0}
    assert gains.share("kernels", run, {}) == 11.6 and gains.share("busy", run, {}) == 14.0
    assert gains.share("copies", run, {}) == 2.4
    assert gains.share("idle", run, {}) == 100.0        # 100 - an upper bound of busy is no bound of idle
    assert gains.share("kernels", dict(run, kernel_active_pct=9.0), {}) == 9.0   # the trace's own first
    doc = expected_doc("sync_bound_summaries")
    f = next(x for x in doc["findings"] if x["rule"] == "fp32-gemm-without-tensor-cores")
    assert f["estimated_gain_range_pct"][1] <= doc["facts"]["kernel_active_est_pct"] + 0.05
