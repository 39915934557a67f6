"""data-dependent-shapes tells its story from the evidence: a read-back that torch.profiler's CPU operators place
inside aten::item is a value the code decides on (lead with keeping the decision on the GPU), one inside
aten::nonzero a data-dependent size (lead with static shapes); without operators it names both."""
import pytest

from nsys_expert import engine
from nsys_expert.engine.rules import load_packs
from nsys_expert.facts import FactSet

RUN = {"sync_small_d2h_per_iter": 160.0, "sync_small_d2h_share_pct": 98.0, "sync_mid_step_share_pct": 90.0,
       "gpu_idle_sync_pct": 30.0, "sync_api_share_pct": 45.0, "iter_median_ms": 40.0, "gpu_active_pct": 60.0,
       "gpu_idle_pct": 40.0, "kernel_active_pct": 60.0, "window_ms": 400.0}


def _finding(run):
    rules = [r for p in load_packs([], installed=False) for r in p.rules]
    ev = engine.evaluate(engine.RuleSet.of(rules), FactSet(run=dict(run), kernels=[]), {"gpu_trace", "api_trace"})
    return next(f for f in ev.findings if f["rule"] == "data-dependent-shapes")


@pytest.mark.parametrize("op,first,absent", [
    ("aten::item", "a Python decision on a GPU tensor", "Make the shapes static"),
    ("aten::_local_scalar_dense", "a Python decision on a GPU tensor", "Make the shapes static"),
    ("aten::nonzero", "Make the shapes static", "a Python decision on a GPU tensor"),
    (None, "Make the shapes static", "The reads come from"),
])
def test_advice_follows_the_operator(op, first, absent):
    f = _finding({**RUN, **({"sync_source_op": op} if op else {})})
    assert first in f["advice"][0]
    assert not any(absent in a for a in f["advice"])
    if op is None:       # no operators: both stories, and how to tell them apart
        assert any("aten::nonzero vs aten::item" in a for a in f["advice"])
        assert "or reads a value it decides on" in f["message"]
    elif op != "aten::nonzero":
        assert "reads a value back inside the passes" in f["message"] and "data-dependent size" not in f["message"]
    else:
        assert "data-dependent size" in f["message"] and f"(`{op}`)" in f["message"]
