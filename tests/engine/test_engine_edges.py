"""The durable-rules adapter against every sharp edge in notes/durable-rules.md."""
import gc
import resource
import threading

import pytest

from nsys_expert.engine import RuleSet, compiler, durable_adapter, load_packs, select_rules, evaluate
from nsys_expert.engine.rules import Rule
from nsys_expert.facts import FactSet, registry


def mk(rule_id="r", when=None, severity="high", scope="run", params=None, **kw):
    return Rule(id=rule_id, title={"en": "t"}, category="utilization", severity=severity, scope=scope,
                when=when or {"fact": "gpu_active_pct", "op": "lt", "value": 60}, message={"en": "m {{ gpu_active_pct }}"},
                advice={"en": []}, params=params or {}, path=f"{rule_id}.yaml", **kw)


def fire(rules, run=None, kernels=None):
    fs = FactSet(run=run or {}, kernels=kernels or [])
    return [f["rule"] for f in evaluate(RuleSet.of(rules), fs, set(registry.INPUTS)).findings]


def test_threshold_edges_and_int_float():
    r = mk()
    assert fire([r], {"gpu_active_pct": 59.999999}) == ["r"]
    assert fire([r], {"gpu_active_pct": 60}) == [] and fire([r], {"gpu_active_pct": 60.0}) == []
    assert fire([r], {"gpu_active_pct": 42}) == ["r"]


def test_exponent_floats_in_facts_and_thresholds():
    r = mk(when={"fact": "gpu_active_pct", "op": "lt", "value": 2e-05})
    assert fire([r], {"gpu_active_pct": 1e-05}) == ["r"]      # both would be parse error 204 unsanitised
    assert fire([r], {"gpu_active_pct": 1e+16}) == []


def test_non_finite_and_missing_values_are_absent_not_zero():
    r = mk()
    assert fire([r], {"gpu_active_pct": float("nan")}) == []
    assert fire([r], {"gpu_active_pct": float("inf")}) == []
    ev = evaluate(RuleSet.of([r]), FactSet(run={}), set(registry.INPUTS))
    assert ev.findings == [] and ev.not_evaluated[0]["rule"] == "r"


def test_neq_and_not_need_the_fact():
    r = mk(when={"not": {"fact": "gpu_active_pct", "op": "gte", "value": 60}})
    assert fire([r], {"gpu_active_pct": 10}) == ["r"] and fire([r], {"gpu_active_pct": 90}) == []
    assert fire([r], {"kernel_count": 3}) == []   # not evaluated, never "passed"


def test_any_fires_once_and_identical_facts_are_fine():
    r = mk(when={"any": [{"fact": "gpu_active_pct", "op": "lt", "value": 60},
                         {"fact": "gpu_active_pct", "op": "lt", "value": 70}]})
    assert fire([r], {"gpu_active_pct": 10}) == ["r"]
    k = mk("k", scope="kernel", when={"fact": "time_share_pct", "op": "gt", "value": 5})
    same = {"name": "x", "time_share_pct": 10.0}
    assert fire([k], kernels=[dict(same), dict(same), dict(same)]) == ["k", "k", "k"]   # no false duplicates


def test_int_division_in_rhs_is_float():
    r = mk(when={"fact": "kernel_median_us", "op": "gt", "value": {"fact": "gpu_active_pct", "times": 0.5}})
    assert fire([r], {"kernel_median_us": 3.2, "gpu_active_pct": 7}) == []    # 3.2 > 3.5 is false
    assert fire([r], {"kernel_median_us": 3.6, "gpu_active_pct": 7}) == ["r"]


def test_regex_dialect_is_escaped():
    k = mk("k", scope="kernel", when={"fact": "name", "op": "contains", "value": "at::native::(x)."})
    assert fire([k], kernels=[{"name": "void at::native::(x).kernel<4>"}]) == ["k"]
    assert fire([k], kernels=[{"name": "void at::native::x_kernel"}]) == []


def test_huge_strings_and_reserved_keys():
    k = mk("k", scope="kernel", when={"fact": "name", "op": "startswith", "value": "F"})
    assert fire([k], kernels=[{"name": "F" * 200_000}]) == ["k"]   # cut to 4 KB before the engine
    with pytest.raises(ValueError):
        durable_adapter.clean_fact("run", 0, {"id": 1})


def test_action_errors_surface():
    class Broken(durable_adapter.Engine):
        def _record(self, c, name):
            raise RuntimeError("boom")

    definition, _ = compiler.compile_rules([mk()], {})
    eng = Broken(definition)
    with pytest.raises(RuntimeError, match="a rule action failed"):
        eng.run([("run", {"gpu_active_pct": 1.0})])
    assert eng.run([("run", {"gpu_active_pct": 99.0})]) == []   # the engine still works afterwards


@pytest.mark.slow
def test_thousand_runs_flat_threads_and_memory():
    rules = select_rules(load_packs())
    run = {"gpu_active_pct": 4.7, "gpu_idle_launch_pct": 95.2, "gpu_idle_short_gaps_pct": 95.2,
           "kernel_small_share_pct": 100.0, "kernel_median_us": 0.86, "kernels_per_iter": 200.0}
    kernels = [{"name": f"k{i}", "kernel_class": "elementwise", "time_share_pct": 1.0, "count": 5} for i in range(20)]
    evaluate(RuleSet.of(rules), FactSet(run=dict(run), kernels=kernels), set(registry.INPUTS))
    gc.collect()
    threads0 = threading.active_count()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(1000):
        fs = FactSet(run=dict(run, gpu_active_pct=4.7 + (i % 7)), kernels=kernels)
        ev = evaluate(RuleSet.of(rules), fs, set(registry.INPUTS))
        assert ev.findings and ev.findings[0]["rule"] == "launch-bound"
    gc.collect()
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert threading.active_count() == threads0
    assert grew_mb < 50, grew_mb


@pytest.mark.slow
def test_thousand_full_diagnoses_flat_threads_and_memory():
    """Issue 9: 1,000 diagnoses in one process (load + facts + engine + report), no thread or memory growth.
    Four in five use the summaries-only fixture, one in five a real trace (the thread-pool paths)."""
    from conftest import FIXTURES
    from nsys_expert import pipeline

    small = str(FIXTURES / "launch_bound_summaries" / "input")
    trace = str(FIXTURES / "memcpy_bound" / "input")
    for p in (small, trace):
        pipeline.diagnose(pipeline.Request([p]))
    gc.collect()
    threads0 = threading.active_count()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(1000):
        doc = pipeline.diagnose(pipeline.Request([trace if i % 5 == 0 else small]))
        assert doc["findings"][0]["rule"] in ("memcpy-bound", "launch-bound")
    gc.collect()
    assert threading.active_count() == threads0
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    print(f"\n1,000 diagnoses: threads {threads0} -> {threading.active_count()}, peak RSS +{grew_mb:.1f} MB")
    assert grew_mb < 50, grew_mb


def test_short_fact_names_fire_exactly_as_the_long_ones(monkeypatch):
    """The adapter sends facts under short names (durable hands every matched fact back as JSON): the
    built-in ruleset fires on the same facts with and without them, over values on both sides of the
    thresholds, absent facts, strings and booleans."""
    rules = [r for p in load_packs() for r in p.rules]
    definition, _ = compiler.compile_rules(rules, {})
    alias = durable_adapter.aliases(definition)
    assert alias and all(len(a) <= 4 for a in alias.values())
    import random

    rnd = random.Random(7)
    facts = []
    for i in range(300):
        f = {}
        for name in alias:
            x = rnd.random()
            if x < 0.2:
                continue                       # absent
            f[name] = (rnd.choice([0, 1, 5, 10, 50, 90, 100, 1e-5]) * rnd.choice([1, 1.0, 0.99, 1.01])
                       if x < 0.8 else rnd.choice([True, False, "memory", "compute", "nccl", "elementwise", ""]))
        facts.append((rnd.choice(["run", "kernel"]), f))
    short = durable_adapter.Engine(definition).run(facts)
    monkeypatch.setattr(durable_adapter, "aliases", lambda d: None)
    long_ = durable_adapter.Engine(definition).run(facts)
    assert short and short == long_          # the same firings in the same order


def test_an_unknown_condition_shape_keeps_the_long_names():
    assert durable_adapter.aliases({"r": {"all": [{"m": {"$xx": {"a": 1}}}], "run": "r"}}) is None
    alias = durable_adapter.aliases({"r": {"all": [{"m": {"$gt": {"a": {"$m": "b"}}}}], "run": "r"}})
    assert sorted(alias) == ["a", "b"] and sorted(alias.values()) == ["a0", "a1"]
