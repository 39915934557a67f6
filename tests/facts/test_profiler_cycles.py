"""torch.profiler cycles (issue 56, item 3): a trace written by ``on_trace_ready`` holds the last cycle of a
``schedule(wait, warmup, active)``, often cut short. The real kineto_optimizer trace (ProfilerStep#4 to #9,
AdamW(foreach=False), H100) cut to its last three steps, the last one stopped after 1.8 ms as the profiler
stopped: the tool left #7 out as warm-up (seven steps ran before it) and kept the stub, so the window held
one full step and a stub and every per-step figure halved."""
import gzip
import json

import polars as pl
import pytest

from conftest import expected_doc, FIXTURES
from nsys_expert import config, pipeline
from nsys_expert.facts import window

STUB_US = 1_800


def _cut_cycle(tmp_path, first=7, stub_us=STUB_US):
    doc = json.loads(gzip.open(FIXTURES / "kineto_optimizer" / "input" / "optimizer.pt.trace.json.gz", "rt").read())
    ev = doc["traceEvents"]
    steps = {e["name"]: e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"
             and e.get("cat") == "user_annotation"}
    begin, last = steps[f"ProfilerStep#{first}"]["ts"], steps["ProfilerStep#9"]["ts"]
    stop = last + stub_us
    keep = []
    for e in ev:
        ts = e.get("ts")
        if e.get("ph") in ("X", "i", "f", "s") and isinstance(ts, (int, float)) and not begin <= ts < stop:
            continue
        if e.get("ph") == "X" and isinstance(ts, (int, float)) and ts + e.get("dur", 0) > stop:
            e = dict(e, dur=stop - ts)       # what ran on when the profiler stopped is cut there
        keep.append(e)
    out = tmp_path / "cut.pt.trace.json"
    out.write_text(json.dumps(dict(doc, traceEvents=keep)))
    return out


def _diagnose(path, **kw):
    return pipeline.diagnose(pipeline.Request([str(path)], config.Settings(**kw)))


@pytest.mark.slow
def test_a_cut_off_last_step_is_left_out_and_the_first_kept(tmp_path):
    full = expected_doc("kineto_optimizer")["facts"]
    doc = _diagnose(_cut_cycle(tmp_path))
    w, f = doc["window"], doc["facts"]
    assert w["source"] == "nvtx:ProfilerStep" and w["iterations"] == 2, w
    assert "cut off by the profiler" in w["reason"] and "ProfilerStep#7" in w["reason"]
    assert any("was cut off when the profiler stopped" in str(x) for x in doc["warnings"])
    # per-step figures as in the whole trace, not halved by the stub
    assert f["kernels_per_iter"] == pytest.approx(full["kernels_per_iter"], rel=0.05)
    assert f["iter_median_ms"] == pytest.approx(full["iter_median_ms"], rel=0.15)
    # before: kernels_per_iter 1,204 of 2,353 and iter_median_ms 25.2 of 49.8 (one step and the stub)
    # the two whole steps' phases are measured: the verdict is the whole trace's (before: launch-bound, the
    # optimizer phase facts "not computable" under three steps)
    assert doc["verdict"]["rule"] == expected_doc("kineto_optimizer")["verdict"]["rule"] == "optimizer-unfused"
    assert f["optimizer_phase_kernels_per_iter"] == pytest.approx(full["optimizer_phase_kernels_per_iter"], rel=0.05)


def _steps(ms, first):
    """ProfilerStep#first.. ranges of the given lengths (ms), back to back, as load/kineto.py gives them."""
    rows, t = [], 0
    for k, m in enumerate(ms):
        rows.append((t, t + int(m * 1e6), f"ProfilerStep#{first + k}", 1, 1, 0))
        t += int(m * 1e6) + 1000
    return pl.DataFrame(rows, schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.String,
                                      "pid": pl.Int64, "tid": pl.Int64, "level": pl.Int64}, orient="row")


def _window(ms, first, skip=None):
    nvtx = _steps(ms, first)
    return window.choose(None, None, nvtx, None, skip, window.find_iterations(nvtx))


def test_the_issue_cycle_keeps_38_and_39_and_drops_the_stub():
    w = _window([49.7, 51.0, 1.8], 38)
    assert (w.iterations.height, w.skipped) == (2, 0)
    assert [n.code for n in w.notes] == ["facts.profiler_step_cut"] and "ProfilerStep#38" in str(w.reason)


def test_skip_iterations_still_decides_and_past_the_run_is_said():
    w = _window([49.7, 51.0, 1.8], 38, skip=1)
    assert (w.iterations.height, w.skipped) == (2, 1) and "iteration 1 left out as warm-up" in str(w.reason)
    w = _window([49.7, 51.0, 50.2], 38, skip=100)
    assert w.skipped == 2 and [(n.code, n.fields) for n in w.notes] == [("facts.skip_past_run", {"asked": 100, "n": 3})]


@pytest.mark.parametrize("ms,first,why", [
    ([49.7, 51.0, 50.2], 0, "no schedule ran before ProfilerStep#0: its first step may still warm up"),
    ([80.0, 51.0, 50.2], 38, "a first step 1.6x the others: it still warmed up"),
    ([50.0] * 6, 38, "six steps: leaving one out leaves five (the default, as HTA's traces)"),
    ([50.0, 50.0, 50.0, 30.0], 38, "a last step 60 % of the others: not a stub"),
])
def test_otherwise_the_default_warm_up_stays(ms, first, why):
    w = _window(ms, first)
    assert (w.iterations.height, w.skipped, w.notes) == (len(ms), 1, []), why
