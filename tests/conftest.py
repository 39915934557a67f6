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
