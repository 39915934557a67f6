"""torch.profiler traces: the iteration range and the NVTX phase table (facts/window.py, facts/phases.py).

On real HTA traces the window took PyTorch c10d's own ``nccl:all_reduce`` record_function (hundreds
per step, on the autograd thread) or a TorchRec range of the backward thread for the iterations,
while five ``ProfilerStep#N`` annotations mark the steps; the phase table nested each
``ProfilerStep#N`` inside another one. Every test here fails on the code before this change (a4e2f15) but
``test_an_outer_range_of_another_process_is_not_around_these_steps``, which guards the new cross-thread nesting."""
import polars as pl
import pytest

from conftest import produced
from nsys_expert.facts import phases, window
from nsys_expert.facts.base import Context, FactSet
from nsys_expert.load.profile import Profile


def _nvtx(rows):
    """(start, end, name, pid, tid, level) rows, as load/kineto.py gives user annotations."""
    return pl.DataFrame(rows, schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.String,
                                      "pid": pl.Int64, "tid": pl.Int64, "level": pl.Int64}, orient="row")


def _ddp_steps(n_steps=5, per_step=8, step_name="ProfilerStep#{}", coll="nccl:all_reduce"):
    """Steps on the main thread (tid 1); per step, a forward range inside it and ``per_step`` collective
    ranges on the autograd thread (tid 2, top of its own stack)."""
    rows = []
    for i in range(n_steps):
        s = i * 10_000
        rows.append((s, s + 9_000, step_name.format(i + 2), 7, 1, 0))
        rows.append((s + 100, s + 2_000, "## forward ##", 7, 1, 1))
        for k in range(per_step):
            rows.append((s + 3_000 + k * 500, s + 3_000 + k * 500 + 200, coll, 7, 2, 0))
    return _nvtx(rows)


def test_c10d_collective_ranges_never_mark_iterations():
    passed = []
    name, it = window.find_iterations(_ddp_steps(), passed_over=passed)
    assert name == "ProfilerStep" and it.height == 5
    assert "'nccl:all_reduce' (40 ranges, a PyTorch collective)" in map(str, passed)


def test_range_of_another_thread_inside_the_steps_is_nested_in_them():
    """TorchRec's backward-thread range (10 instances, 2 per step) lay inside the 5 steps of the main thread."""
    passed = []
    name, it = window.find_iterations(_ddp_steps(per_step=2, step_name="train step {}", coll="## bwd_hook ##"),
                                      passed_over=passed)
    assert name == "train step" and it.height == 5
    assert "'## bwd_hook ##' (10 ranges, nested in 'train step')" in map(str, passed)


def test_an_outer_range_of_another_process_is_not_around_these_steps():
    """Two ranks' traces in one table: rank 2's steps run at the same time as rank 1's, not inside them."""
    a = _ddp_steps(per_step=0, step_name="step {}")
    b = _ddp_steps(n_steps=3, per_step=0, step_name="epoch {}").with_columns(pl.lit(8, pl.Int64).alias("pid"),
                                                                              pl.col("end_ns") + 5_000)
    name, it = window.find_iterations(pl.concat([a, b]))
    assert name == "step" and it.height == 5


def test_profiler_step_wins_over_a_more_frequent_top_range_of_another_thread():
    rows = _ddp_steps(n_steps=4, per_step=0).rows()
    rows += [(i * 3_000 + 50, i * 3_000 + 2_500, "worker loop", 7, 3, 0) for i in range(14)]   # not inside one step
    passed = []
    name, it = window.find_iterations(_nvtx(rows), passed_over=passed)
    assert name == "ProfilerStep" and it.height == 4
    assert "'worker loop' (14 ranges, torch.profiler marks steps with 'ProfilerStep')" in map(str, passed)


def test_what_lies_inside_two_profiler_steps_is_never_the_iteration():
    """Two ProfilerSteps are too few for iterations (the window then comes from the GPU trace), and the
    4 collectives inside them are pieces of a step, not 4 iterations."""
    name, it = window.find_iterations(_ddp_steps(n_steps=2, per_step=3, coll="## encoder ##"))
    assert (name, it) == (None, None)


def test_passed_over_names_each_range_once():
    """A name on several threads: 'X' (27 ranges, fewer instances than 'X') was written."""
    rows = [(i * 1_000, i * 1_000 + 500, "# TensorsToDeviceModule #", 7, 10 + (i % 2), 0) for i in range(11)]
    rows += [(i * 1_000 + 600, i * 1_000 + 700, "spread", 7, 20 + i, 0) for i in range(4)]   # 1 per thread
    passed = []
    name, it = window.find_iterations(_nvtx(rows), passed_over=passed)
    assert name == "# TensorsToDeviceModule #" and it.height == 6
    assert [p.fields["name"] for p in passed] == ["spread"]
    assert str(passed[0]) == "'spread' (4 ranges, fewer than 3 on one thread)"


def _phase_table(nvtx):
    from nsys_expert.load.kineto import _ranges
    from nsys_expert.load.sqlite import summary as _summary
    n = _ranges(nvtx.select("start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"), "name", "pid", "tid"))
    prof = Profile(tables={"nvtx_trace": n, "nvtx_sum": _summary(n, "dur_ns", style=True)},
                   sources={"nvtx_trace": "t.json", "nvtx_sum": "t.json"}, meta={"kineto": {"rank": 0}})
    fs = FactSet()
    win = window.Window(0, 50_000, "nvtx:ProfilerStep", "", None, 0, 0, 50_000)
    phases.compute(Context(fs=fs, prof=prof, win=win))
    return fs.tables["phases"]


def test_kineto_phase_table_nests_from_the_time_stamps():
    ph = _phase_table(_ddp_steps())
    assert ph["nesting"] == "trace"
    rows = {r["name"]: r for r in ph["rows"]}
    assert rows["ProfilerStep"]["count"] == 5 and rows["ProfilerStep"]["parent"] is None
    assert rows["## forward ##"]["parent"] == "ProfilerStep"
    # the autograd thread's collectives lie inside the main thread's step
    assert rows["nccl:all_reduce"]["parent"] == "ProfilerStep" and rows["nccl:all_reduce"]["count"] == 40
    assert rows["## forward ##"]["share_of_parent_pct"] == pytest.approx(100 * 5 * 1_900 / (5 * 9_000))


@pytest.mark.parametrize("case, iters, median, first, slowest", [
    ("kineto_hta_ddp_v100", 4, 345, "1.0", "1.06"),
    ("kineto_hta_cnn_1rank", 4, 95.62, "1.1", "1.00"),
    ("kineto_hta_torchrec_16rank", 4, 216, "1.7", "1.00"),
])
def test_real_hta_traces_iterate_over_profiler_steps(case, iters, median, first, slowest):
    doc, md = produced(case, "en")
    w = doc["window"]
    assert w["source"] == "nvtx:ProfilerStep" and w["iterations"] == iters
    assert f"- Iterations: {iters} (median {median} ms, first (warm-up) {first}×, slowest {slowest}×)" in md
    assert "iteration-jitter" not in [f["rule"] for f in doc["findings"]]
    ph = doc["tables"]["phases"]
    assert ph["nesting"] == "trace"
    names = [r["name"] for r in ph["rows"]]
    assert "ProfilerStep" in names and not any(n.startswith("ProfilerStep#") for n in names)
    assert all(r["parent"] != r["name"] for r in ph["rows"])


def test_torchrec_forward_is_inside_the_step_not_inside_sparse_data_dist():
    rows = {r["name"]: r for r in produced("kineto_hta_torchrec_16rank", "en")[0]["tables"]["phases"]["rows"]}
    assert rows["## forward ##"]["parent"] == "ProfilerStep"
    assert rows["## sparse_data_dist ##"]["parent"] == "ProfilerStep"
    assert rows["ProfilerStep"]["count"] == 5
