"""A CSV report with more after a blank line (a console capture) is found without searching every
one-report file (issue 19): the typed read sees a blank line as a row of missing cells, and only then,
or when the typed read fails, is the file searched. Inputs: the real launch_bound GPU trace, cut and
joined as each test says."""
import pytest

from conftest import FIXTURES
from nsys_expert.load import csv_reports

TRACE = FIXTURES / "launch_bound" / "input" / "launch_bound_cuda_gpu_trace.csv"


def _lines():
    text = TRACE.read_bytes().decode("utf-8")
    return text.splitlines(keepends=True)


def _read(path):
    return csv_reports.read_report(csv_reports.sniff(str(path)))


def test_one_report_is_never_searched(tmp_path, monkeypatch):
    p = tmp_path / "t_cuda_gpu_trace.csv"
    p.write_bytes(TRACE.read_bytes())
    monkeypatch.setattr(csv_reports, "_more_after_blank_in", lambda *a: pytest.fail("searched a one-report file"))
    got = _read(p)
    assert not got.sections and got.frame.height == len(_lines()) - 1


def test_rows_after_a_blank_line_make_a_capture(tmp_path):
    """The rows after the blank line parse with the same types: the typed read succeeds, and its
    empty row sends the file to the search, which finds more text after the blank line."""
    lines = _lines()
    p = tmp_path / "t_cuda_gpu_trace.csv"
    p.write_text("".join(lines[:51]) + "\n" + "".join(lines[51:101]))
    assert _read(p).sections


def test_another_report_after_a_blank_line_makes_a_capture(tmp_path):
    lines = _lines()
    p = tmp_path / "t_cuda_gpu_trace.csv"
    p.write_text("".join(lines[:51]) + "\nProcessing [t.sqlite] with [cuda_api_sum.py]...\n\n"
                 + "Time (%),Total Time (ns),Num Calls,Name\n50.0,100,2,cudaLaunchKernel\n")
    assert _read(p).sections


@pytest.mark.parametrize("tail", ["\n", "\n\n\n", "\r\n\r\n"])
def test_blank_lines_at_the_end_are_one_report(tmp_path, tail):
    lines = _lines()
    p = tmp_path / "t_cuda_gpu_trace.csv"
    p.write_text("".join(lines[:101]) + tail, newline="")
    got = _read(p)
    assert not got.sections
    assert got.frame.drop_nulls("start_ns").height == 100
