"""A summary-only verdict may be weaker than the trace's, never the opposite (issue 56, item 4).

Every CSV fixture with traces is diagnosed again from its summary reports alone (the *_sum.csv files: what
`nsys profile --stats=true` prints as console text). Opposite: the trace names a bottleneck (medium or
above) and the summaries say there is none, or the trace finds none and the summaries name one."""
import shutil

import pytest

from conftest import expected_doc, FIXTURES
from nsys_expert import config, pipeline
from nsys_expert.engine.rules import SEVERITIES

# summaries that still name a bottleneck the trace does not have, and why (not hidden: the test fails when
# one of them changes, so a fix lands with its entry removed)
KNOWN = {
    "overlapped_copies": "copies under the kernels: the summaries' idle estimate (23.8 %) cannot see the overlap, "
                         "and a sync every step reads as sync-bound (medium)",
    "pair_memory_bound_fixed": "memory-bound 3.8 % (medium) from the kernel summary where the trace's "
                               "memory-bound finding wins 0.0 % (info)",
}


def _cases():
    return sorted(d.name for d in FIXTURES.iterdir() if (d / "input").is_dir()
                  and any((d / "input").glob("*_sum.csv")) and any((d / "input").glob("*_trace.csv")))


def _summaries(case, tmp_path):
    for f in (FIXTURES / case / "input").glob("*_sum.csv"):
        shutil.copy(f, tmp_path / f.name)
    return pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings()))


def _golden(case):
    import json
    return expected_doc(case)


def opposite(trace: dict, summ: dict) -> str | None:
    medium = SEVERITIES.index("medium")
    tv, sv = trace["verdict"], summ["verdict"]
    t_names = tv.get("rule") is not None and SEVERITIES.index(tv["severity"]) >= medium
    s_names = sv.get("rule") is not None and SEVERITIES.index(sv["severity"]) >= medium
    s_healthy = sv.get("rule") is None and sv["state"] in ("likely", "diagnosed")
    t_healthy = tv.get("rule") is None and tv["state"] == "diagnosed"
    if t_names and s_healthy:
        return f"trace {tv['rule']}, summaries: no bottleneck ({sv.get('reason')})"
    if t_healthy and s_names:
        return f"trace: no bottleneck, summaries {sv['rule']} ({sv['severity']})"
    return None


def test_copies_the_summaries_cannot_judge_are_undetermined(tmp_path):
    """copy_serial: copies 39 % of the busy time; its trace is memcpy-bound (high), its summaries said
    "No system-level bottleneck"."""
    s = _summaries("pair_copy_serial", tmp_path)
    assert (s["verdict"]["state"], s["verdict"]["reason"]) == ("undetermined", "copies_unjudged")
    assert s["verdict"]["memcpy_host_share_of_busy_pct"] == pytest.approx(39.2, abs=0.1)
    assert opposite(_golden("pair_copy_serial"), s) is None


@pytest.mark.slow
@pytest.mark.parametrize("case", _cases())
def test_summaries_never_tell_the_opposite_of_the_trace(case, tmp_path):
    why = opposite(_golden(case), _summaries(case, tmp_path))
    if case in KNOWN:
        assert why is not None, f"{case} agrees now: remove it from KNOWN"
        pytest.xfail(KNOWN[case])
    assert why is None, f"{case}: {why}"


# SQLite-only fixtures whose export names a kernel-class finding: their summary reports (made from the export as
# `nsys stats` makes them, tests/summaries_from_sqlite.py) said "No system-level bottleneck" (eager-compile and
# layout-conversion read kernel_active_pct, which only a trace measures); now the same finding, likely
@pytest.mark.parametrize("case", ["pair_hf_llama_sqlite", "pair_conv_nchw_sqlite", "pair_effnet_layout_sqlite",
                                  "pair_block_stack_sqlite"])
def test_an_exports_summaries_name_its_kernel_class_finding(case, tmp_path):
    from summaries_from_sqlite import write_summaries

    src = next(p for p in (FIXTURES / case / "input").iterdir() if ".sqlite" in p.name)
    write_summaries(str(src), str(tmp_path), case)
    s = pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings()))
    t = _golden(case)
    assert opposite(t, s) is None, opposite(t, s)
    assert (s["verdict"]["state"], s["verdict"]["rule"]) == ("likely", t["verdict"]["rule"]), s["verdict"]


@pytest.mark.parametrize("case,work", [("pair_loader_between_sqlite", 254), ("pair_checkpoint_fixed_sqlite", 1371)])
def test_steps_that_do_not_hold_the_runs_time_are_undetermined(case, work, tmp_path):
    """A loader between the step ranges (loader-between-steps, high) or a checkpoint every few steps (checkpoint-
    pauses): the summaries hold 2.5x / 14x the steps' time in GPU work and said "No system-level bottleneck"."""
    from summaries_from_sqlite import write_summaries

    src = next(p for p in (FIXTURES / case / "input").iterdir() if ".sqlite" in p.name)
    write_summaries(str(src), str(tmp_path), case)
    s = pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings()))
    assert (s["verdict"]["state"], s["verdict"]["reason"]) == ("undetermined", "steps_unbounded"), s["verdict"]
    assert s["verdict"]["gpu_work_to_iter_pct"] == pytest.approx(work, abs=1)
    assert opposite(_golden(case), s) is None
