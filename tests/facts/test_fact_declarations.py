"""Facts declare themselves (issue 49, item 3): every fact a fact group puts is registered, whether
in registry.py's table or in its group module's ``FACTS`` list beside its code."""
import pytest

from conftest import FIXTURES, diagnosed
from nsys_expert.facts import declare, phase_work, registry

# real profiles that between them run every fact group: nsys SQLite with OS runtime trace and NVTX steps
# (pauses, phases), a sync-bound pair, a 2-rank torch.profiler DDP trace (cross-rank facts)
CASES = ["pair_sync_bound_sqlite", "checkpoint_spikes_sqlite", "kineto_hta_ddp_v100"]


def _undeclared(names, scopes=("run",)) -> set[str]:
    return {n for n in names if all(registry.lookup(s, n) is None for s in scopes)}


@pytest.mark.parametrize("case", CASES)
def test_every_fact_put_is_declared(case):
    doc = diagnosed(FIXTURES / case / "input")
    assert len(doc["facts"]) > 40
    rows = [doc] + doc.get("ranks", [])
    for row in rows:
        assert _undeclared(row["facts"]) == set(), f"{case}: facts put but declared nowhere (registry.py or a FACTS list)"
    assert _undeclared(doc["fact_sources"]) == set()
    assert _undeclared(doc["facts_absent"], tuple(registry.SCOPES)) == set()   # kernel facts too (ncu)


def test_the_check_sees_an_undeclared_fact():
    assert _undeclared(["pause_count", "pause_count_span", "pause_count_pct"]) == {"pause_count_pct"}


def test_phase_work_declares_its_facts_beside_its_code():
    assert len(phase_work.FACTS) == 44 and phase_work in registry.DECLARING_GROUPS
    for f in phase_work.FACTS:
        assert registry.RUN_FACTS[f.name] is f          # collected as declared, not a copy in registry.py
    text = (FIXTURES.parent / "nsys_expert" / "facts" / "registry.py").read_text(encoding="utf-8")
    assert '"pause_count"' not in text and '"step_d2h_exposed_pct"' not in text


def test_every_group_declares_its_facts_and_the_registry_none():
    """The registry holds no table of its own: every fact is a line in its group's FACTS list."""
    text = (FIXTURES.parent / "nsys_expert" / "facts" / "registry.py").read_text(encoding="utf-8")
    assert "fact(" not in text.replace("declare.fact(", "")
    declared = [f for m in registry.DECLARING_GROUPS for f in m.FACTS]
    assert len(declared) == len(registry.RUN_FACTS) + len(registry.KERNEL_FACTS)
    from nsys_expert.facts import kernels, ncu_metrics
    assert registry.RUN_FACTS["nchw_kernel_share_of_kernel_pct"] in kernels.FACTS
    assert registry.KERNEL_FACTS["achieved_occupancy_pct"] in ncu_metrics.FACTS


def test_two_groups_declaring_one_fact_is_refused(monkeypatch):
    class Other:
        __name__ = "facts.other"
        FACTS = [declare.fact("gpu_active_pct", "%", "again")]
    monkeypatch.setattr(registry, "DECLARING_GROUPS", registry.DECLARING_GROUPS + (Other,))
    with pytest.raises(ValueError, match="gpu_active_pct is declared by another group"):
        registry._collect("run")                         # noqa: SLF001


def test_no_fact_is_declared_twice():
    # a FACTS list and registry.py's table naming one fact would silently keep the later entry
    run = [f.name for f in registry._RUN]                # noqa: SLF001
    assert len(run) == len(set(run)) == len(registry.RUN_FACTS) > 200


def test_every_declaring_group_is_collected():
    for module in registry.DECLARING_GROUPS:
        for f in module.FACTS:
            assert registry.SCOPES[f.scope].get(f.name) is f, f"{module.__name__}: {f.name} declared, not collected"


def test_a_bad_declaration_is_refused():
    class Group:
        __name__ = "facts.fake"
        FACTS = [declare.fact("fake_pct", "%", "a fact", ("no_such_input",))]
    with pytest.raises(ValueError, match="fake"):
        registry._declared(Group)                        # noqa: SLF001
    Group.FACTS = [declare.fact("fake_pct", "%", "a"), declare.fact("fake_pct", "%", "b")]
    with pytest.raises(ValueError, match="twice"):
        registry._declared(Group)                        # noqa: SLF001
