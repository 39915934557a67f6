"""The Python condition evaluator (advice and relation conditions) means what the compiled durable rules
mean: rule by rule, over the facts of real fixtures, both say the same for every rule's ``when`` and
every escalation."""
import pytest

from conftest import FIXTURES, slow_ones
from nsys_expert import engine, pipeline
from nsys_expert.engine import compiler, conditions, durable_adapter
from nsys_expert.engine.conditions import Leaf
from nsys_expert.engine.rules import walk_conditions

RULES = [r for p in engine.load_packs(installed=False) for r in p.rules]
CASES = ["sync_bound_ncu", "memory_bound_ncu", "launch_bound", "memcpy_bound", "nccl_single", "dataloader_bound",
         "launch_bound_summaries", "compute_bound_ncu", "cupy_nsys2020_sqlite"]


def _pythonable(rule):
    return all(c.op != "matches" for c in walk_conditions(rule.when))


@pytest.mark.parametrize("case", slow_ones(CASES, {   # 0.3-0.4 s each (issue 56, item 14)
    "memory_bound_ncu", "memcpy_bound", "nccl_single", "dataloader_bound", "compute_bound_ncu"}))
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


def test_every_condition_parses_once_and_gives_its_yaml_back():
    """The rules' conditions are nodes (parsed when the rule was made), and a node's YAML form parses to
    the same node (the pack cache keeps that form)."""
    from nsys_expert.engine import conditions as condition

    n = 0
    for _r, cond in _every_condition():
        cond = condition.parse(cond)
        assert isinstance(cond, condition.NODES)
        assert condition.parse(condition.raw(cond)) == cond
        n += 1
    assert n > 100


def test_parse_refuses_what_is_no_condition():
    from nsys_expert.engine import conditions as condition

    for bad in ({}, {"all": []}, {"any": "x"}, {"not": None}, {"fact": "x"}, {"fact": 3, "op": "lt"}, [1],
                {"fact": "x", "op": "lt", "value": {"times": 2}}):
        with pytest.raises(condition.ConditionError, match="a condition is"):
            condition.parse(bad)
    leaf = condition.parse({"fact": "x", "op": "in", "value": ["a", "$p", 3]})
    assert leaf.value == condition.Items((condition.Lit("a"), condition.Param("p"), condition.Lit(3)))


def test_one_table_of_operators():
    """Each operator is one entry of operators.OPS: its opposite's opposite is itself, both evaluators and
    the words know it, and the rule-pack guide lists every operator a pack may write."""
    import pathlib

    from nsys_expert.engine import describe
    from nsys_expert.engine.conditions import Leaf as L
    from nsys_expert.engine.operators import ALL_OPS, OPS, PY_OPS

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "writing-a-rule-pack.md").read_text()
    table = doc[doc.index("## Operators"):]
    table = table[:table.index("\n## ")]
    for name, op in OPS.items():
        if op.negation:
            assert OPS[op.negation].negation == name, name
        assert op.words("en") and op.words("zh"), name
        if name in ALL_OPS:
            assert f"`{name}`" in table, name
            v = None if not op.needs_value else [1] if op.kind == "list" else 1 if op.kind == "numeric" else "a"
            line = describe.condition_text(conditions.parse({"fact": "x", "op": name, **({"value": v} if v is not None else {})}), {})
            assert op.words("en") in line[0]
        if name in PY_OPS:
            assert conditions.holds(L("x", name, None if v is None else conditions.parse({"fact": "x", "op": name, "value": v}).value), {}) == op.missing
    assert PY_OPS == ALL_OPS - {"matches"}


def test_a_new_operator_is_one_entry(monkeypatch):
    """An operator added to the table alone is evaluated in Python, compiled for the engine and put in
    words (no other file names it; its words in another language are the labels catalog's)."""
    from nsys_expert.engine import describe, operators
    from nsys_expert.engine.conditions import Leaf as L
    from nsys_expert.engine.conditions import Lit

    rule = engine.Rule(id="r", title={}, category="c", severity="low", scope="run", when=None, message={}, advice={})
    odd = operators.Operator("odd_above", operators.NUMERIC, "is odd and above", None,
                             lambda h, v: isinstance(h, int) and h % 2 == 1 and h > v,
                             lambda fact, val: {"$gt": {fact: val}})
    monkeypatch.setitem(operators.OPS, "odd_above", odd)
    leaf = L("x", "odd_above", Lit(2))
    assert conditions.holds(leaf, {"x": 3}) and not conditions.holds(leaf, {"x": 4}) and not conditions.holds(leaf, {})
    assert conditions.compiled(leaf)({"x": 5}) and not conditions.compiled(leaf)({"x": 1})
    assert compiler.compile_condition(leaf, {}, rule) == {"$gt": {"x": 2}}
    assert describe.condition_text(leaf, {}, lang="zh") == ["- `x` is odd and above 2"]   # no catalog entry: its words
    assert operators.OPS["gte"].words("zh") == "≥" and operators.OPS["in"].words("zh") == "属于"   # the labels catalog's


def _one_rule_pack(tmp_path, meta: str, when: str = "{fact: gpu_active_pct, op: lt, value: 3}"):
    (tmp_path / "pack.yaml").write_text(meta)
    (tmp_path / "r.yaml").write_text("id: t-rule\ntitle: T\ncategory: launch-bound\nseverity: low\nmessage: m\n"
                                     f"when: {when}\n")
    return str(tmp_path)


def test_a_named_condition_that_is_no_condition_is_one_line(tmp_path, monkeypatch):
    """pack.yaml ``conditions:`` are parsed with the pack: a tree that is no condition is an error naming
    the file and the condition (it was a KeyError)."""
    from nsys_expert.errors import RuleError

    monkeypatch.setenv("NSX_NO_CACHE", "1")
    meta = "name: t\nversion: '1'\nconditions:\n  c1: {doc: d, when: {fact: name}}\n"
    with pytest.raises(RuleError, match=r"pack.yaml conditions: c1: a condition is .*this one is not: \{\"fact\": \"name\"\}") as e:
        engine.load_packs([_one_rule_pack(tmp_path, meta)], builtin=False, installed=False)
    assert "pack.yaml" in str(e.value) and "\n" not in str(e.value)


def test_the_pack_cache_keeps_the_parsed_conditions(tmp_path, monkeypatch):
    """A pack read back from the pack cache (JSON: the conditions' YAML form) has the same parsed
    conditions as the pack validated."""
    import tempfile

    from nsys_expert.engine import pack_cache

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "p").mkdir()
    folder = _one_rule_pack(tmp_path / "p",
                            "name: t\nversion: '1'\nconditions:\n  c1: {doc: d, when: {not: {fact: name, op: icontains, value: x}}}\n",
                            "{any: [{fact: gpu_active_pct, op: lt, value: {fact: gpu_active_pct, times: 2}}, "
                            "{not: {fact: gpu_active_pct, op: in, value: [1, 2]}}]}")
    first = engine.load_packs([folder], builtin=False, installed=False)[0]
    got = []
    real = pack_cache.get
    monkeypatch.setattr(pack_cache, "get", lambda *a: got.append(real(*a)) or got[-1])
    again = engine.load_packs([folder], builtin=False, installed=False)[0]
    assert got and got[0] is not None                      # read back from the cache
    assert again == first and isinstance(again.rules[0].when, conditions.Any)
    assert again.conditions["c1"] == conditions.Not(conditions.Leaf("name", "icontains", conditions.Lit("x")))
