"""The big traces' ids are read as 32-bit integers in the typed read itself (issue 34: no 64-bit copy
held, no narrowing pass), and a value past 32 bits still reads, as a 64-bit column, unchanged."""
import polars as pl

from conftest import FIXTURES
from nsys_expert import load
from nsys_expert.load import csv_reports


def _api(tmp_path, corr_last=None):
    src = next((FIXTURES / "launch_bound" / "input").glob("*_cuda_api_trace.csv"))
    lines = src.read_text(encoding="utf-8").splitlines()[:50]
    if corr_last is not None:
        cells = lines[-1].split(",")
        cells[4] = str(corr_last)
        lines[-1] = ",".join(cells)
    p = tmp_path / "run_cuda_api_trace.csv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_ids_are_read_as_32_bit_integers(tmp_path):
    item = csv_reports.read_report(csv_reports.sniff(str(_api(tmp_path))))
    assert item.frame.schema["corr_id"] == pl.Int32 and item.frame.schema["tid"] == pl.Int32
    assert item.frame.schema["start_ns"] == pl.Int64
    assert "thread_name" not in item.frame.columns and "result" not in item.frame.columns


def test_an_id_past_32_bits_is_read_whole(tmp_path):
    p = _api(tmp_path, corr_last=3_000_000_000)
    item = csv_reports.read_report(csv_reports.sniff(str(p)))
    assert item.frame.schema["corr_id"] == pl.Int64 and item.frame["corr_id"][-1] == 3_000_000_000
    assert not item.warnings
    api = load.load_paths([str(p)]).tables["api_trace"]
    assert api["corr_id"].max() == 3_000_000_000 and api.height == 49
