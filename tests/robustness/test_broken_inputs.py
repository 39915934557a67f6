"""Never crash, never lie: broken inputs give a report with a warning or one line and exit 2."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from robustness.make_broken import make

NSX = [sys.executable, "-m", "nsys_expert"]
# what each variant must do: "report" (exit 0, valid JSON, and when given, a warning containing the text),
# or "error" (exit 2, one line naming the file or folder)
EXPECT = {
    "truncated-mid-row": ("report", "ends in the middle of a row"),
    "empty-trace": ("report", "has no rows while"),
    "header-only": ("report", "has no rows while"),
    "binary-junk": ("error", "binary data"),
    "not-utf8-name": ("report", None),
    "huge-name": ("report", None),
    "negative-duration": ("report", "missing or negative"),
    "nan-and-text": ("report", "are not numbers"),
    "columns-shuffled": ("report", None),
    "wrong-report-header": ("error", "header is not"),
    "windows-newlines": ("report", None),
    "duplicate-reports": ("report", "is a copy of"),
    "fake-sqlite": ("error", "r.sqlite"),
    "foreign-sqlite": ("error", "r.sqlite"),
    "unrelated-files": ("error", "no nsys stats report"),
    "empty-dir": ("error", "no nsys stats report"),
    "out-of-order-rows": ("report", None),
    "overlapping-ops": ("report", None),
    "one-row-trace": ("report", None),
    "unknown-device": ("report", None),
    "mixed-nsys-versions": ("report", None),
    "zero-length-trace": ("report", None),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("broken")
    names = make(str(FIXTURES / "sync_bound" / "input"), str(out))
    assert set(names) == set(EXPECT), set(names) ^ set(EXPECT)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_broken_input(corpus, name, tmp_path):
    kind, text = EXPECT[name]
    out = tmp_path / "r.json"
    p = subprocess.run(NSX + ["diagnose", str(corpus / name), "--format", "json", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    if kind == "error":
        assert p.returncode == 2, (p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("nsys-expert: error: ")
        assert text in lines[0]
        return
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert {"findings", "facts", "window", "inputs", "not_evaluated", "warnings"} <= set(doc)
    if "gpu_active_pct" in doc["facts"]:
        assert 0 <= doc["facts"]["gpu_active_pct"] <= 100
    if text:
        assert any(text in str(w) for w in doc["warnings"]), doc["warnings"]
    # nothing silently dropped: every file in the folder is an input or named in a warning
    for f in os.listdir(corpus / name):
        assert any(i["path"].endswith(f) for i in doc["inputs"]) or any(f in str(w) for w in doc["warnings"]), f


def test_the_unknown_device_is_named(corpus, tmp_path):
    p = subprocess.run(NSX + ["diagnose", str(corpus / "unknown-device"), "--format", "json"], capture_output=True, text=True)
    doc = json.loads(p.stdout)
    assert doc["facts"]["gpu_count"] == 2   # the ops on device 7 are counted as their own device, not dropped


def test_markdown_escapes_hostile_names(tmp_case):
    """A kernel named with `|` and `<script>` must not break the Markdown tables or inject HTML."""
    d = tmp_case("sync_bound")
    evil = 'evil|kernel<script>alert(1)</script>'
    for f in d.iterdir():
        if f.name.endswith(("_cuda_gpu_trace.csv", "_cuda_gpu_kern_sum.csv")):
            f.write_text(f.read_text().replace("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", evil))
    p = subprocess.run(NSX + ["diagnose", str(d)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    md = p.stdout
    import re
    assert "<script" not in re.sub(r"`[^`\n]*`", "", md)   # only inside code spans, which render literally
    for line in md.splitlines():
        if line.startswith("|") and "evil" in line:
            cells = [c for c in line.replace("\\|", "").split("|")]
            header_cells = 7  # '| # | Name | Total (ms) | Calls | Avg (us) | Share (%) |' splits into 8 parts
            assert len(cells) == header_cells + 1, line
