"""Which NVTX range marks the iterations (facts/window.find_iterations)."""
import polars as pl

from nsys_expert.facts import window


def _nvtx(rows):
    return pl.DataFrame(rows, schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "name": pl.String,
                                      "tid": pl.Int64, "level": pl.Int64}, orient="row")


def _steps_with_library_ranges(lib="CCCL:cub::DeviceRadixSort::SortKeys"):
    rows = []
    for i in range(5):
        s = i * 1000
        rows.append((s, s + 900, ":step", 1, 0))
        # a library pushes ranges in its own domain: its stack starts again at level 0
        rows.append((s + 100, s + 200, lib, 1, 0))
        rows.append((s + 300, s + 400, lib, 1, 0))
    return _nvtx(rows)


def test_library_domain_never_marks_iterations():
    name, it = window.find_iterations(_steps_with_library_ranges())
    assert name == "step" and it.height == 5


def test_outermost_repeated_range_wins_over_a_more_frequent_nested_one():
    passed = []
    name, it = window.find_iterations(_steps_with_library_ranges("attention"), passed_over=passed)
    assert name == "step" and it.height == 5
    assert [str(p) for p in passed] == ["'attention' (10 ranges, nested in 'step')"]


def test_iteration_range_option():
    name, it = window.find_iterations(_steps_with_library_ranges("attention"), wanted="attention")
    assert name == "attention" and it.height == 10
    assert window.find_iterations(_steps_with_library_ranges(), wanted="nope") == (None, None)


def test_summary_iteration_skips_library_domains():
    df = pl.DataFrame({"name": ["CCCL:cub::DeviceScan", ":step", "NCCL:ncclAllReduce"], "count": [800, 400, 400],
                       "total_ns": [10.0, 1000.0, 5.0], "med_ns": [0.01, 2.5, 0.01]})
    assert window.iteration_from_summary(df)[:2] == (":step", 400)
