import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


def fixture_cases():
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "input").is_dir())


def expected_doc(case: str) -> dict:
    """A fixture's golden document as one mapping: what a user sees (expected.json) with the facts
    snapshot's facts under "facts" (facts.json; tests/golden.py)."""
    import json

    doc = json.loads((FIXTURES / case / "expected.json").read_text(encoding="utf-8"))
    doc["facts"] = json.loads((FIXTURES / case / "facts.json").read_text(encoding="utf-8"))["facts"]
    return doc


# one diagnosis of an input no test changes, shared by the tests that read it (issue 56, item 14: the fast
# set re-diagnosed sync_bound 27 times, launch_bound 23). Each caller gets its own deep copy, so a test that
# edits what it got changes no other test's. Not for a test that patches what a diagnosis runs (monkeypatch
# of the pipeline, the facts, the packs, the environment), nor for a folder the test changes after its diagnosis.
_DIAGNOSES: dict = {}


def diagnosed(*paths, **settings):
    """``pipeline.diagnose(Request([*paths], config.Settings(**settings)))``, diagnosed once a session."""
    import copy
    import os

    from nsys_expert import config, pipeline

    key = ("diagnose", tuple(os.path.abspath(str(p)) for p in paths), tuple(sorted(settings.items())))
    if key not in _DIAGNOSES:
        _DIAGNOSES[key] = pipeline.diagnose(pipeline.Request([str(p) for p in paths], config.Settings(**settings)))
    return copy.deepcopy(_DIAGNOSES[key])


def produced(case: str, lang: str = "en") -> tuple[dict, str]:
    """``golden.produce(case, lang)`` (the JSON report and the Markdown of ``nsys-expert diagnose input`` run
    in the fixture's folder), made once a session: test_golden and the tests that assert on one fixture's
    diagnosis share it."""
    import copy

    from golden import produce

    key = ("produce", case, lang)
    if key not in _DIAGNOSES:
        _DIAGNOSES[key] = produce(case, lang)
    return copy.deepcopy(_DIAGNOSES[key])


def slow_ones(cases, slow):
    """``cases`` for ``pytest.mark.parametrize``, those in ``slow`` marked ``slow`` (the fast set keeps the
    others: a quick run still covers the family)."""
    missing = set(slow) - set(cases)
    assert not missing, missing
    return [pytest.param(c, marks=pytest.mark.slow) if c in slow else c for c in cases]


needs_shared = pytest.mark.skipif(not (SHARED / "cases").is_dir(), reason="../shared is not next to this checkout")


@pytest.fixture
def tmp_case(tmp_path):
    """Copy a fixture's input into a temp folder (tests may damage the copy, never the fixture)."""
    import shutil

    def make(name):
        dst = tmp_path / name
        shutil.copytree(FIXTURES / name / "input", dst)
        return dst
    return make


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Say why tests skipped, grouped by reason (a fresh clone has no ../shared: its tests skip, and
    the run should say so rather than pass quietly with fewer tests)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.write_sep("-", f"{len(skipped)} skipped, by reason")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:4d} skipped: {reason}")
    if not (SHARED / "cases").is_dir():
        terminalreporter.write_line(f"     the real shared profiles are read from {SHARED}: put the shared folder "
                                    "there to run those tests")


def finding(**fields):
    """An ``engine.model.Finding`` with placeholder values for the fields a test leaves out."""
    from nsys_expert.engine.model import Finding

    base = {"rule": "r", "category": "gpu-idle", "severity": "medium", "title": "t", "message": "m", "evidence": [],
            "advice": None, "estimated_gain_pct": None, "confidence": "measured", "scope": {}, "pack": "builtin",
            "references": []}
    return Finding(**(base | fields))
