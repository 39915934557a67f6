"""The Python condition evaluator (advice and relation conditions) means what the compiled durable rules
mean: rule by rule, over the facts of real fixtures, both say the same for every rule's ``when`` and
every escalation."""
import pytest

from conftest import FIXTURES
from nsys_expert import engine, pipeline
from nsys_expert.engine import compiler, conditions, durable_adapter
from nsys_expert.engine.rules import walk_conditions

RULES = [r for p in engine.load_packs(installed=False) for r in p.rules]
CASES = ["sync_bound_ncu", "memory_bound_ncu", "launch_bound", "memcpy_bound", "nccl_single", "dataloader_bound",
         "launch_bound_summaries", "compute_bound_ncu", "cupy_nsys2020_sqlite"]


def _pythonable(rule):
    return all(c["op"] != "matches" for c in walk_conditions(rule.when))


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
