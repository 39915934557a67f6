"""Every fixture's diagnosis matches its hand-checked golden files."""
import json

import pytest

from conftest import FIXTURES, fixture_cases
from golden import golden_view, produce


@pytest.mark.parametrize("case", fixture_cases())
def test_golden(case):
    doc, md = produce(case)
    expected = json.loads((FIXTURES / case / "expected.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(golden_view(doc), ensure_ascii=False))
    assert got["findings"] == expected["findings"]
    assert got["window"] == expected["window"]
    assert got["facts"] == expected["facts"]
    assert got == expected
    assert md == (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
