"""The frictions of a first hour (issue 48, items 4-16): each test is what would have caught one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from nsys_expert import pipeline, report

from conftest import FIXTURES, ROOT

PY = sys.executable


def _cli(*args, cwd=None, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([PY, "-m", "nsys_expert", *args], capture_output=True, text=True, cwd=cwd, env=e,
                          timeout=120)


def _empty_copy(tmp_path, header_only: bool):
    out = tmp_path / "empty"
    out.mkdir()
    for p in (FIXTURES / "launch_bound" / "input").iterdir():
        lines = p.read_text().splitlines()
        text = lines[0] + "\n" if header_only and lines else ""
        (out / p.name).write_text(text)
    return out


@pytest.mark.parametrize("header_only", [False, True])
def test_empty_recording_says_so_in_the_verdict_line(tmp_path, header_only):
    """Item 6: a recording with no rows was a verdict asking to export more reports; the cause was a warning."""
    doc = pipeline.diagnose(pipeline.Request([str(_empty_copy(tmp_path, header_only))]))
    v = doc["verdict"]
    assert (v["state"], v["reason"]) == ("undetermined", "no_rows")
    assert v["next_command"].startswith("nsys profile")
    line = report.render_markdown(doc).splitlines()[2]
    assert "every report read has no rows" in line and "profile again" in line and "Not evaluated" not in line


def test_no_gpu_work_says_so_in_the_verdict_line(tmp_path):
    out = tmp_path / "nogpu"
    shutil.copytree(FIXTURES / "launch_bound" / "input", out)
    for p in out.iterdir():       # the GPU reports empty, the API and NVTX reports kept
        if any(k in p.name for k in ("gpu_trace", "kern_sum", "mem_time_sum", "gpu_sum")):
            p.write_text("")
    v = pipeline.diagnose(pipeline.Request([str(out)]))["verdict"]
    assert (v["state"], v["reason"]) == ("undetermined", "no_gpu_work")
