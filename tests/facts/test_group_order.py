"""Fact groups declare what they read and put; the order is derived from that (issue 59, item 4).

The order is checked on the declarations (every group after the groups that put what it reads; a wave's
groups independent), and the declarations are checked on real profiles: each group runs watched
(``facts/tracked.py``) and may touch only what it declared. Running the groups in another valid order
gives the same facts.
"""
import dataclasses
import glob

import pytest

from conftest import FIXTURES, slow_ones
from nsys_expert import facts, load
from nsys_expert.facts import declare, groups, order, registry, tracked

# between them every group runs: nsys SQLite with OS runtime trace and NVTX steps, summaries only, a
# console capture, Nsight Compute with GPU metrics' neighbours, torch.profiler traces (CPU operators, stacks)
CASES = ["pair_sync_bound_sqlite", "checkpoint_spikes_sqlite", "sync_bound_summaries", "dataloader_bound_nvtx_sum",
         "console_deep_dive", "compute_bound_ncu", "gpu_metrics_compute_bound_sqlite", "kineto_hta_ddp_v100",
         "kineto_optimizer", "h100_2gpu_nsys2026_sqlite", "launch_bound_graphed_sqlite", "gil_contention_sqlite"]


def _profile(case):
    files = sorted(f for f in glob.glob(str(FIXTURES / case / "input" / "**" / "*"), recursive=True)
                   if not (FIXTURES / f).is_dir())
    return load.load_files(files)


def _undeclared(log: tracked.Log) -> list[str]:
    by_name = {g.name: g for g in facts.GROUPS}
    out = []
    for name, items in log.reads.items():
        g = by_name[name]
        out += [f"{name} reads {i}" for i in sorted(items) if not any(order.covers(d, i) for d in g.reads | g.puts)]
    for name, items in log.puts.items():
        g = by_name[name]
        out += [f"{name} puts {i}" for i in sorted(items) if not any(order.covers(d, i) for d in g.puts)]
    return out


def test_the_order_is_derived_from_the_declarations():
    seq = order.order(facts.GROUPS)
    assert order.valid(seq, facts.GROUPS) == []
    names = [g.name for g in seq]
    assert sorted(names) == sorted(g.name for g in facts.GROUPS)
    at = {n: i for i, n in enumerate(names)}
    # what the comments used to say, now a consequence of what each group reads
    assert at["gpu_metrics"] > at["ncu"]            # it reads kernel:bound_class, which ncu puts
    assert at["summaries"] > max(at["kernels"], at["memcpy"], at["api"], at["nccl"])   # it fills their facts
    assert at["starved"] > max(at["gaps"], at["summaries"], at["estimates"])
    assert at["per_iteration"] > max(at["kernels"], at["iterations"])
    assert names[-1] == "absent" and names[0] == "busy"


def test_a_wave_holds_groups_that_may_run_side_by_side():
    deps = order.after(facts.GROUPS)
    for wave in order.waves(facts.GROUPS):
        names = {g.name for g in wave}
        for g in wave:
            assert not names & set(deps[g.name]), f"{g.name} runs beside a group it runs after"
            for h in wave:
                if h is not g:
                    assert not any(order.covers(p, q) for p in g.puts for q in h.puts | h.reads), (g.name, h.name)
    assert len(order.waves(facts.GROUPS)) < len(facts.GROUPS) / 2      # most groups run beside others


def test_an_order_against_the_declarations_is_caught():
    seq = order.order(facts.GROUPS)
    bad = [g for g in seq if g.name != "ncu"] + [g for g in seq if g.name == "ncu"]
    assert "gpu_metrics runs before ncu" in order.valid(bad, facts.GROUPS)


def test_a_circle_is_refused():
    a = declare.group("a", lambda c: None, reads=("fact:y",), puts=("fact:x",))
    b = declare.group("b", lambda c: None, reads=("fact:x",), puts=("fact:y",))
    with pytest.raises(ValueError, match="circle"):
        order.waves([a, b])


def test_the_indexed_overlap_is_the_pairwise_one():
    """``order._overlap`` (the items put, indexed) answers as ``covers`` tested on every pair, on every two
    built-in groups and on made-up items (wildcards, whole-profile twins, sources, kernels)."""
    for g in facts.GROUPS:
        for h in facts.GROUPS:
            for items in (g.puts, g.reads):
                assert order._overlap(h.puts, items) == order._overlap_pairs(h.puts, items), (h.name, g.name)
    made = ["fact:x", "fact:x_span", "fact:*", "source:x", "source:x_span", "source:*", "absent:x", "absent:*",
            "kernel:y", "kernel:*", "kernels", "kernel:y_span", "input:*", "input:api_trace", "table:t", "x"]
    for p in made:
        for q in made:
            for r in made:
                puts = frozenset((p, q))
                assert order._overlap(puts, frozenset((r,))) == order._overlap_pairs(puts, frozenset((r,))), (p, q, r)


def test_the_waves_are_worked_out_once_per_list_of_groups():
    first = order.waves(facts.GROUPS)
    again = order.waves(facts.GROUPS)
    assert [[g.name for g in w] for w in first] == [[g.name for g in w] for w in again]
    assert first == order._waves(facts.GROUPS)
    again[0].clear()                               # a caller's copy: the next call's waves are whole
    assert order.waves(facts.GROUPS) == first


def test_one_list_of_groups():
    assert registry.DECLARING_GROUPS is groups.MODULES
    assert facts.GROUPS == [g for m in groups.MODULES for g in getattr(m, "GROUPS", ())]
    names = [g.name for g in facts.GROUPS]
    assert len(names) == len(set(names))
    text = (FIXTURES.parent / "nsys_expert" / "facts" / "__init__.py").read_text(encoding="utf-8")
    assert '"last"' not in text and '"parallel"' not in text and "after ncu" not in text


@pytest.mark.parametrize("case", slow_ones(CASES, {  # 0.7-2.8 s each (issue 56, item 14)
    "gpu_metrics_compute_bound_sqlite", "kineto_hta_ddp_v100", "pair_sync_bound_sqlite", "checkpoint_spikes_sqlite",
    "h100_2gpu_nsys2026_sqlite", "gil_contention_sqlite"}))
def test_each_group_touches_only_what_it_declares(case):
    prof = _profile(case)
    plain = facts.compute(prof)
    log = tracked.Log()
    watched = facts.compute(prof, runner=lambda ctx, todo: tracked.run(ctx, order.order(todo), log))
    assert log.reads, "nothing was watched"
    assert _undeclared(log) == [], f"{case}: a group touched what it does not declare (its GROUPS entry)"
    # another valid order (each wave's groups the other way round) gives the same facts
    other = facts.compute(prof, runner=lambda ctx, todo: tracked.run(
        ctx, [g for w in order.waves(todo) for g in reversed(w)], tracked.Log()))
    for fs in (watched, other):
        assert fs.run == plain.run and fs.absent == plain.absent and fs.sources == plain.sources
        assert fs.tiers == plain.tiers and fs.kernels == plain.kernels and fs.tables.keys() == plain.tables.keys()
        assert [str(w) for w in fs.warnings] == [str(w) for w in plain.warnings]


def test_the_check_sees_an_undeclared_read(monkeypatch):
    g = next(g for g in facts.GROUPS if g.name == "per_iteration")
    blind = dataclasses.replace(g, reads=frozenset({"fact:kernel_count"}))
    monkeypatch.setattr(facts, "GROUPS", [blind if x is g else x for x in facts.GROUPS])
    log = tracked.Log()
    facts.compute(_profile("pair_sync_bound_sqlite"), runner=lambda ctx, todo: tracked.run(ctx, order.order(todo), log))
    assert "per_iteration reads fact:iter_count" in _undeclared(log)
