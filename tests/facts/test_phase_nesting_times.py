"""NVTX phase nesting from the ranges' times when the trace has no parent ids (an nsys SQLite export):
nvtx-examples' `square-diff` holds its four ranges (checked against NVTX_EVENTS by hand: data generation
0.660 of 2.516 ms = 26.2 %), and a script's one range is no step for the next steps."""
from __future__ import annotations

import os

import pytest

from nsys_expert import facts, load
from nsys_expert.facts import phases

CUPY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures", "cupy_nsys2020_sqlite", "input")


def _phases(monkeypatch=None, cap=None):
    if cap is not None:
        monkeypatch.setattr(phases, "MAX_TIMED_RANGES", cap)
    fs = facts.compute(load.load_paths([CUPY]))
    return fs, fs.tables["phases"]


def test_sqlite_ranges_nested_from_their_times():
    fs, t = _phases()
    assert t["nesting"] == "trace"
    rows = {r["name"]: r for r in t["rows"]}
    assert {n: rows[n]["parent"] for n in ("compute", "data generation", "copy", "faster compute")} == \
        dict.fromkeys(("compute", "data generation", "copy", "faster compute"), "square-diff")
    assert rows["square-diff"]["parent"] is None
    assert fs.run["data_phase_share_of_step_pct"] == pytest.approx(100 * 660388 / 2516400, abs=0.01)
    assert fs.run["data_phase_parent_count"] == 1


def test_past_the_cap_the_nesting_is_inferred(monkeypatch):
    _, t = _phases(monkeypatch, cap=2)   # five ranges, none a library's or an operator's: over the cap
    assert t["nesting"] == "inferred"


def test_one_range_around_a_script_is_not_a_step():
    """The phases' parent stands for a step only when it repeats: with one `square-diff`, the report
    still asks for NVTX step ranges (iteration-jitter and slow-first-iteration need them)."""
    from nsys_expert import pipeline
    doc = pipeline.run(pipeline.Request(paths=[CUPY])).doc
    assert doc["facts"]["data_phase_parent"] == "square-diff"
    assert any(st["need"] == "NVTX step ranges" for st in doc["next_steps"]), doc["next_steps"]
