"""The Python condition evaluator (advice and relation conditions) means what the compiled durable rules
mean: rule by rule, over the facts of real fixtures, both say the same for every rule's ``when`` and
every escalation."""
import pytest

from conftest import FIXTURES
from nsys_expert import engine, pipeline
from nsys_expert.engine import compiler, conditions, durable_adapter
from nsys_expert.engine.condition import Leaf
from nsys_expert.engine.rules import walk_conditions

RULES = [r for p in engine.load_packs(installed=False) for r in p.rules]
CASES = ["sync_bound_ncu", "memory_bound_ncu", "launch_bound", "memcpy_bound", "nccl_single", "dataloader_bound",
         "launch_bound_summaries", "compute_bound_ncu", "cupy_nsys2020_sqlite"]


def _pythonable(rule):
    return all(c.op != "matches" for c in walk_conditions(rule.when))


@pytest.mark.parametrize("case", CASES)
def test_python_conditions_agree_with_the_engine(case):
    fs = pipeline.run(pipeline.Request([str(FIXTURES / case / "input")])).fs
    rules = [r for r in RULES if _pythonable(r)]
    definition, names = compiler.compile_rules(rules, {})
    fired = durable_adapter.engine_for(definition).run([("run", fs.run)] + [("kernel", k) for k in fs.kernels])
    got = {(names[n][0], names[n][1], fid) for n, fid in fired}
    checked = positives = 0
    for r in rules:
        params = r.param_values()
        targets = [("run:0", fs.run)] if r.scope == "run" else [(f"kernel:{i + 1}", k) for i, k in enumerate(fs.kernels)]
        levels = [(r.severity, r.when)] + [(e["severity"], {"all": [r.when, e["when"]]}) for e in r.escalate]
        for fid, fact in targets:
            for sev, cond in levels:
                py = conditions.holds(cond, fact, params)
                assert py == ((r.id, sev, fid) in got), (case, r.id, sev, fid)
                checked += 1
                positives += py
    assert checked > 20 and positives >= 1 and positives == len(got)


def _every_condition():
    """(rule, condition) for every condition of the built-in rules: when, escalations, advice items,
    relations, and the pack's named conditions."""
    for r in RULES:
        for c in [r.when] + [e["when"] for e in r.escalate] + list(r.advice_when) \
                + [rel["when"] for rel in r.supersedes + r.refutes] + list(r.pack_conditions.values()):
            if c is not None:
                yield r, c
                yield r, {"not": c}


def _facts_around(cond, rng):
    """Facts that test a condition at its edges: each leaf's fact missing, at its threshold, a hair
    either side, of another type (a string, a bool, an int), or a name that holds the searched text."""
    import math

    out = [{}]
    for leaf in conditions.leaves(conditions.parse(cond)):
        if type(leaf) is not Leaf:
            continue
        v = None if leaf.value is None else leaf.value.raw()
        cands = [None, True, False, 0, 1, "x", "60", math.nan, math.inf, rng.uniform(-1, 200), rng.randint(0, 200)]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            cands += [v, float(v), math.nextafter(float(v), math.inf), math.nextafter(float(v), -math.inf), int(v)]
        if isinstance(v, str) and not v.startswith("$"):
            cands += [v, v.upper(), "void " + v + "<float>", v[1:]]
        if isinstance(v, list):
            cands += list(v)
        out.append({leaf.fact: rng.choice(cands)})
    merged = {}
    for o in out:
        merged.update(o)
    return out + [merged]


def test_compiled_conditions_mean_what_holds_means():
    """conditions.compiled (the advice conditions at scale) gives what holds gives, on every condition of
    the built-in rules (and its negation), over facts at each leaf's edges and random mixes of them."""
    import random

    rng = random.Random(34)
    inputs = {"ncu", "api_trace"}
    checked = differ = 0
    for r, cond in _every_condition():
        params = r.param_values()
        fn = conditions.compiled(cond, params, inputs, r.pack_conditions)
        for _ in range(6):
            for facts in _facts_around(cond, rng):
                try:
                    want = conditions.holds(cond, facts, params, inputs, r.pack_conditions)
                except Exception as e:  # noqa: BLE001 - the same error either way
                    with pytest.raises(type(e)):
                        fn(facts)
                    continue
                checked += 1
                differ += fn(facts) != want
    assert checked > 5000 and differ == 0


def test_compiled_conditions_edges():
    """The cases the compiled comparisons take apart: an int fact, a bool, NaN, a huge int threshold, a
    negated string test, a parameter, an unknown named condition raising only when tested."""
    import math

    c = {"fact": "x", "op": "gte", "value": "$t"}
    for facts in ({"x": 5}, {"x": 5.0}, {"x": True}, {"x": math.nan}, {"x": "7"}, {}, {"x": 4.999999999}):
        for t in (5, 5.0, 2 ** 60, True):
            assert conditions.compiled(c, {"t": t})(facts) == conditions.holds(c, facts, {"t": t}), (facts, t)
    s = {"not": {"fact": "name", "op": "icontains", "value": "NCCL"}}
    for facts in ({"name": "ncclKernel"}, {"name": "gemm"}, {}, {"name": 3}):
        assert conditions.compiled(s)(facts) == conditions.holds(s, facts)
    bad = {"any": [{"fact": "x", "op": "exists"}, {"condition": "nope"}]}
    fn = conditions.compiled(bad, {}, set(), {})
    assert fn({"x": 1}) is True
    with pytest.raises(KeyError):
        fn({})
