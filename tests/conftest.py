import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


def fixture_cases():
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "input").is_dir())


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
