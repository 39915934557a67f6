"""Engine.run with ``keys`` (issue 34: the facts are not copied down to the names the rules read before
they are cleaned) sends what filtering the facts first sent."""
import math
import random

import pytest

from nsys_expert import engine
from nsys_expert.engine import compiler, durable_adapter


def _engine():
    rules = [r for p in engine.load_packs(installed=False) for r in p.rules]
    definition, _ = compiler.compile_rules(rules, {})
    return durable_adapter.engine_for(definition)


def test_kept_names_clean_as_filtered_facts():
    eng = _engine()
    assert eng._alias is not None
    names = sorted(eng._alias)
    rng = random.Random(34)
    values = [None, 0, 1, True, 2.5, 1e-05, 3e17, math.nan, math.inf, "x", "y" * 5000, {"a": 1}, [1]]
    for trial in range(300):
        keys = {"kernel": set(rng.sample(names, 12)) | ({"not_a_rule_fact"} if trial % 3 else set()), "run": set(rng.sample(names, 5))}
        facts = []
        for i in range(5):
            kind = rng.choice(["kernel", "run"])
            f = {k: rng.choice(values) for k in rng.sample(names, 20) + ["not_a_rule_fact", "other"]}
            if trial % 7 == 0:
                f["kind"] = 3            # a reserved name no rule reads: dropped either way
            if trial % 11 == 0:
                f.update({f"pad{j}": 1.0 for j in range(300)})    # past MAX_PROPS: the general path
            facts.append((kind, f))
        want = [durable_adapter.clean_fact(kind, i, {k: v for k, v in f.items() if k in keys.get(kind, ())}, eng._alias)
                for i, (kind, f) in enumerate(facts)]
        assert eng._clean_kept(facts, keys) == want


def test_a_reserved_name_the_rules_would_read_is_refused_as_before():
    eng = _engine()
    with pytest.raises(ValueError):
        eng._clean_kept([("kernel", {"id": "x"})], {"kernel": {"id"}})
