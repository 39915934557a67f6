"""The replay of the iteration (facts/depmodel.py, facts/replay.py; docs/gains.md): each transformation on a
small model whose answer is known by hand, and the model built from real traces."""
import json

import pytest

from conftest import expected_doc, FIXTURES
from nsys_expert.facts import replay
from nsys_expert.facts.depmodel import Item, Model, Op


def _op(ms, cls="matmul", kind="kernel", stream=0, **kw):
    return Op(ms * 1e6, stream, kind, kw.get("copy_kind"), kw.get("bytes", 0.0), kw.get("pageable", False), cls,
              False, kw.get("simt", False), lat=0.0)


def _model(per_iter, iterations=4):
    """``per_iter``: a function (iteration, ops) -> the iteration's host items, appending its operations to ops."""
    ops, items = [], []
    for i in range(iterations):
        items += per_iter(i, ops)
    return Model(items, ops, {}, 0.0, 0.0, 0.0, [], iterations, 1, 0.0)


def _launch(ops, op, i):
    ops.append(op)
    return Item("L", 5e3, [len(ops) - 1], iteration=i)


def _period(m):
    r = replay.simulate(m)
    return r.period / (len(r.comp) - 1) / 1e6


def test_collectives_overlapped_with_compute_leave_the_longer_of_the_two():
    """Each step: a 2 ms GEMM, then a 1 ms all-reduce on the same stream: 3 ms a step; on their own stream the
    all-reduce runs under the next GEMM: 2 ms a step, 33 % back."""
    m = _model(lambda i, ops: [_launch(ops, _op(2), i), _launch(ops, _op(1, cls="nccl"), i)])
    assert _period(m) == pytest.approx(3.0, abs=0.02)
    assert _period(replay.comm_overlap(m)) == pytest.approx(2.0, abs=0.02)


def test_removing_a_sync_leaves_the_host_work_on_the_critical_path():
    """Each step: a 0.3 ms kernel, a synchronize, 2 ms of host work: 2.3 ms; without the sync the kernel runs
    under the host work: 2 ms (sync_bound's lesson: 13 %, not the 86 % of idle time)."""
    def step(i, ops):
        return [_launch(ops, _op(0.3), i), Item("S", 3e3, iteration=i), Item("W", 2e6, iteration=i)]
    m = _model(step)
    assert _period(m) == pytest.approx(2.3, abs=0.02)
    assert _period(replay.remove_syncs(m)) == pytest.approx(2.0, abs=0.02)


def test_host_work_moved_to_four_workers_waits_only_for_what_they_cannot_make():
    """8 ms of host work and 4 ms of GPU work a step: 12 ms when serial (the host waits on a sync); with the
    8 ms on 4 workers (2 ms each step, under the 4 ms of GPU work) the step is the GPU's 4 ms."""
    def step(i, ops):
        return [Item("W", 8e6, iteration=i), _launch(ops, _op(4), i), Item("S", 3e3, iteration=i)]
    m = _model(step)
    assert _period(m) == pytest.approx(12.0, abs=0.05)
    assert _period(replay.host_offload(m)) == pytest.approx(4.0, abs=0.05)


def test_variants_of_one_advice_are_replayed_once():
    assert replay.distinct(["pinned_copies", "copies", "remove_syncs"]) == ("copies", "remove_syncs")
    assert replay.distinct(["host_offload", "data_workers"]) == ("host_offload",)


@pytest.mark.parametrize("case", ["pair_sync_bound", "pair_host_bound", "kineto_dataloader_bound", "small_h2d_copies"])
def test_the_model_of_a_real_trace_replays_it(case):
    """Built from the real traces, the replay gives back the measured iterations within 1 % (small pageable
    copies are staged: the call returns before the copy, and the model must not make the host wait)."""
    f = expected_doc(case)["facts"]
    assert abs(f["replay_model_error_pct"]) < 1.0
    assert 0 <= f["critical_path_host_pct"] <= 100 and 0 <= f["critical_path_gpu_pct"] <= 100
