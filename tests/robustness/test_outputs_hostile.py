"""Outputs that could harm (issue 18, classes 1 and 9), on inputs derived from the real fixtures:
``-o`` never overwrites an input (a CSV, the SQLite, a symlink to one) and writes atomically; an
escape sequence in a file name is shown, never obeyed by the terminal; a right-to-left override or a
zero-width character in a kernel name is shown as an escape in the Markdown and the HTML."""
from __future__ import annotations

import hashlib
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conftest import FIXTURES  # noqa: E402

HIDDEN = ("\u202e", "\u200b", "\x1b")


class Ran:
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def run(*args):
    """The command line, in process (click's runner keeps stdout and stderr apart)."""
    from click.testing import CliRunner

    from nsys_expert.cli import main

    return Ran(CliRunner().invoke(main, [str(a) for a in args]))


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def one_error_line(p, *words):
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture
def csv_case(tmp_path):
    dst = tmp_path / "launch_bound"
    shutil.copytree(FIXTURES / "launch_bound" / "input", dst)
    return dst


@pytest.fixture
def sqlite_case(tmp_path):
    src = next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite"))
    dst = tmp_path / "sq"
    dst.mkdir()
    shutil.copy(src, dst / src.name)
    return dst / src.name


def test_o_refuses_a_csv_of_the_input_folder(csv_case):
    target = csv_case / "launch_bound_cuda_gpu_trace.csv"
    before = digest(target)
    p = run("diagnose", csv_case, "-o", target)
    one_error_line(p, "launch_bound_cuda_gpu_trace.csv", "one of the inputs")
    assert digest(target) == before


def test_o_refuses_the_sqlite_and_a_symlink_to_it(sqlite_case, tmp_path):
    before = digest(sqlite_case)
    one_error_line(run("diagnose", sqlite_case, "-o", sqlite_case, "--format", "json"), "one of the inputs")
    link = tmp_path / "report.md"
    os.symlink(sqlite_case, link)
    one_error_line(run("diagnose", sqlite_case, "-o", link), "report.md", "one of the inputs")
    assert digest(sqlite_case) == before and os.path.islink(link)
    assert sorted(os.listdir(sqlite_case.parent)) == [sqlite_case.name]   # nothing written beside it


def test_diff_o_refuses_either_side(csv_case, tmp_path):
    target = csv_case / "launch_bound_cuda_api_sum.csv"
    before = digest(target)
    one_error_line(run("diff", FIXTURES / "sync_bound" / "input", csv_case, "-o", target), "one of the inputs")
    assert digest(target) == before


def test_o_writes_atomically_and_says_so(csv_case, tmp_path):
    out = tmp_path / "out" / "report.md"
    out.parent.mkdir()
    out.write_text("# nsys-expert diagnosis\n\nold report\n")   # an earlier report (issue 35: only those are replaced)
    p = run("diagnose", csv_case, "-o", out)
    assert p.returncode == 0 and p.stdout == ""
    assert p.stderr.strip() == f"nsys-expert: wrote {out}"
    assert out.read_text().startswith("# nsys-expert diagnosis")
    assert os.listdir(out.parent) == ["report.md"]          # no temporary file left behind


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path):
    from nsys_expert.cli.options import write_output

    out = tmp_path / "report.md"
    out.write_text("# nsys-expert diagnosis, old report\n")
    with pytest.raises(UnicodeEncodeError):      # fails half-way through writing the temporary file
        write_output(str(out), "# new\n" + "x" * 100_000 + "\udc80")
    assert out.read_text() == "# nsys-expert diagnosis, old report\n" and os.listdir(tmp_path) == ["report.md"]


def test_escape_sequences_in_a_file_name_are_shown_not_obeyed(csv_case, tmp_path):
    bad = tmp_path / "prof\x1b]0;pwned\x07\x1b[2J"
    p = run("diagnose", bad)
    one_error_line(p, "\\x1b]0;pwned\\x07\\x1b[2J")
    assert not any(c in p.stderr for c in ("\x1b", "\x07"))
    out = tmp_path / "r\x1b[31m.md"
    p = run("diagnose", csv_case, "-o", out)
    assert p.returncode == 0 and "\x1b" not in p.stderr and "r\\x1b[31m.md" in p.stderr
    p = run("diagnose", csv_case, "--format", "jsn\x1b[2J")
    assert p.returncode == 2 and "\x1b" not in p.stderr


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_rtl_override_and_zero_width_in_kernel_names_are_escaped(csv_case, tmp_path, fmt):
    # the real kernel name, with a right-to-left override, a zero-width space and an escape in it
    for f in csv_case.glob("*.csv"):
        text = f.read_text(encoding="utf-8")
        f.write_text(text.replace("vectorized_elementwise_kernel", "vectorized\u202elenrek\u200b_elementwise\x1b[1m"),
                     encoding="utf-8")
    out = tmp_path / f"r.{fmt}"
    p = run("diagnose", csv_case, "--format", fmt, "-o", out)
    assert p.returncode == 0, p.stderr
    text = out.read_text(encoding="utf-8")
    assert not any(c in text for c in HIDDEN)
    assert "vectorized\\u202elenrek\\u200b" in text and "\\x1b[1m" in text


def test_textsafe_keeps_plain_text_and_chinese():
    from nsys_expert.textsafe import one_line, visible

    s = "GPU 活跃时间占比 4.7 %（占窗口）\n| `a` |\tb"
    assert visible(s) == s
    assert one_line("a\nb\u2066c") == "a\\x0ab\\u2066c"
