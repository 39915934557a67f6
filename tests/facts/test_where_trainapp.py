"""Where in the code, on real torch.profiler traces (with_stack=True) of the trainapp workloads
(benchmarks/workloads/trainapp: a model zoo, a trainer with callbacks, a data module), each with a cause
planted on a known line: the finding of that cause names the planted function first (issue 55)."""
import json

import pytest

from conftest import FIXTURES


def _doc(case):
    return json.loads((FIXTURES / case / "expected.json").read_text())


@pytest.mark.parametrize("case,rule,file,function", [
    ("kineto_trainapp_loss_callback", "step-sync", "callbacks.py", "on_step_end"),
    ("kineto_trainapp_moe_mask", "data-dependent-shapes", "models.py", "_dispatch_by_mask"),
    ("kineto_trainapp_janitor", "allocator-churn", "callbacks.py", "on_step_end"),
    ("kineto_trainapp_conv_nchw", "layout-conversion", "models.py", "forward"),
    ("kineto_trainapp_hand_attention", "attention-by-hand", "models.py", "forward"),
])
def test_the_planted_function_comes_first(case, rule, file, function):
    found = next(f for f in _doc(case)["findings"] if f["rule"] == rule)
    first = found["locations"][0]
    assert first["file"].rsplit("/", 1)[-1] == file and first["function"] == function
    assert first["share_pct"] >= 25


def test_places_are_the_users_not_the_libraries():
    for case in ("kineto_trainapp_loss_callback", "kineto_trainapp_janitor", "kineto_trainapp_moe_mask"):
        for f in _doc(case)["findings"]:
            for loc in f.get("locations", []):
                assert "site-packages" not in loc["file"] and "/torch/" not in loc["file"]
