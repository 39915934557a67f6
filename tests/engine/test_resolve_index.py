"""engine/resolve.py finds related findings through an index (issue 34): the same resolution as a
straightforward all-pairs scan, on random finding sets over the built-in rules, and no all-pairs scan."""
import copy
import dataclasses
import json
import random

import pytest

from nsys_expert import engine
from nsys_expert.engine import resolve
from nsys_expert.engine.model import Evidence
from nsys_expert.engine.rules import SEVERITIES, load_packs
from nsys_expert.facts import FactSet

from conftest import finding
from test_resolve import KW, RUN, _pack, _rule


class _AllPairs(resolve._Alive):
    """The reference: every live finding looked at for every question (what resolve did before the index)."""

    def of_rule(self, rid):
        return [f for f in self if f["rule"] == rid]

    def overlapping(self, rid, subject):
        return [f for f in self if f["rule"] == rid
                and (resolve.within(f["subject"], subject) or resolve.within(subject, f["subject"]))]


@pytest.fixture(scope="module")
def builtin_rules():
    return {r.id: r for r in engine.select_rules(engine.load_packs())}


def _random_case(rng: random.Random, rules: dict):
    names = [f"k{i}" for i in range(rng.randint(1, 12))]
    kernels = {n: {"name": n, "time_share_pct": rng.uniform(0, 60), "tensor_pipe_active_pct": rng.uniform(0, 30),
                   "achieved_occupancy_pct": rng.uniform(0, 100), "ncu_top_rule_speedup_pct": rng.uniform(0, 40),
                   "sm_throughput_pct": rng.uniform(0, 100), "memory_throughput_pct": rng.uniform(0, 100)}
               for n in names}
    run = {"gpu_active_pct": rng.uniform(1, 100), "kernel_active_pct": rng.uniform(1, 90),
           "memcpy_active_pct": rng.uniform(0, 20), "window_ms": rng.choice([0.5, 100.0, 5000.0]),
           "nccl_share_of_busy_pct": rng.uniform(0, 50)}
    run["gpu_idle_pct"] = 100.0 - run["gpu_active_pct"]
    ids = sorted(rules)
    findings = []
    for rid in rng.sample(ids, rng.randint(1, len(ids))):
        r = rules[rid]
        for n in (rng.sample(names, rng.randint(1, len(names))) if r.scope == "kernel" else [None]):
            findings.append(finding(rule=rid, category=r.category, severity=rng.choice(SEVERITIES[1:]),
                                    title=f"{rid} {n}", evidence=[Evidence("x", rng.random(), None, None, "", None)],
                                    estimated_gain_pct=rng.choice([None, round(rng.uniform(0, 50), 1)]),
                                    scope={"kernel": n} if n else {}, pack=r.pack))
    rng.shuffle(findings)
    return findings, run, list(kernels.values())


def _resolved(findings, rules, run, kernels, alive_cls, monkeypatch):
    monkeypatch.setattr(resolve, "_Alive", alive_cls)
    res = resolve.resolve(copy.deepcopy(findings), rules, run, kernels, {"gpu_trace", "ncu"})
    little = res.too_little_work and dataclasses.asdict(res.too_little_work)
    return json.dumps([[dataclasses.asdict(f) for f in res.findings], dataclasses.asdict(res.recoverable), [str(n) for n in res.notes], little],
                      sort_keys=True)


@pytest.mark.parametrize("seed", range(40))
def test_index_resolves_like_all_pairs(seed, builtin_rules, monkeypatch):
    findings, run, kernels = _random_case(random.Random(seed), builtin_rules)
    fast = _resolved(findings, builtin_rules, run, kernels, resolve._Alive, monkeypatch)
    ref = _resolved(findings, builtin_rules, run, kernels, _AllPairs, monkeypatch)
    assert fast == ref


def test_related_findings_are_not_found_by_scanning_every_pair(tmp_path, monkeypatch):
    # 500 kernels, two kernel rules, one folding the other on each kernel: the all-pairs scan compared
    # subjects about 500 x 1,000 times; the index looks up the kernel's own bucket
    rules = [_rule("kern-a", **KW, supersedes=["kern-b"]), _rule("kern-b", **{**KW, "severity": "low"})]
    packs = load_packs([_pack(tmp_path, rules)], builtin=False, installed=False)
    ks = [{"name": f"k{i}", "time_share_pct": 0.1, "tensor_pipe_active_pct": 0.0} for i in range(500)]
    calls = []
    real = resolve.within
    monkeypatch.setattr(resolve, "within", lambda a, b: calls.append(1) or real(a, b))
    ev = engine.evaluate(engine.RuleSet.of([r for p in packs for r in p.rules]), FactSet(run=dict(RUN), kernels=ks), {"gpu_trace"})
    assert sorted(f["rule"] for f in ev.findings) == ["kern-a"] * 500
    assert all(len(f["supporting"]) == 1 for f in ev.findings)
    assert len(calls) < 5 * len(ks)
