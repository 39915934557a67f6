"""The CSV benchmark's big case is a consistent profile (issue 34): every per-event CSV tiled, each
kernel with its one launch call, NVTX ranges with their own ids, summaries' totals scaled."""
import sys

import polars as pl

from conftest import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_diagnose  # noqa: E402


def test_tiles_keep_each_operation_matched_to_its_one_call(tmp_path):
    trace, rows = bench_diagnose.tile(str(FIXTURES / "launch_bound" / "input"), 3, str(tmp_path))
    g = pl.read_csv(trace)
    a = pl.read_csv(next(tmp_path.glob("*_cuda_api_trace.csv")))
    n = pl.read_csv(next(tmp_path.glob("*_nvtx_pushpop_trace.csv")))
    one = pl.read_csv(next((FIXTURES / "launch_bound" / "input").glob("*_cuda_gpu_trace.csv")))
    assert rows == g.height == 3 * one.height
    assert g["CorrId"].n_unique() == g.height and a["CorrID"].n_unique() == a.height
    assert g.join(a, left_on="CorrId", right_on="CorrID").height == g.height   # every kernel has its call
    launch = g.join(a, left_on="CorrId", right_on="CorrID")
    assert (launch["Start (ns)_right"] <= launch["Start (ns)"]).all()          # launched before it ran
    assert n["RangeId"].n_unique() == n.height
    assert (n["RangeStack"] == ":" + n["RangeId"].cast(pl.String)).all()
    s = pl.read_csv(next(tmp_path.glob("*_cuda_api_sum.csv")))
    s1 = pl.read_csv(next((FIXTURES / "launch_bound" / "input").glob("*_cuda_api_sum.csv")))
    assert s["Num Calls"].to_list() == [3 * c for c in s1["Num Calls"]]
