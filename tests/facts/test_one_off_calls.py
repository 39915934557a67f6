"""One start-up call is not a steady state, and under 1 ms of GPU work is too little to judge, for summary
inputs too. Built on two real `nsys profile --stats=true` logs of one-batch GCN inference
(fixtures/console_gcn_torch_startup, fixtures/console_gcn_paddle_2021: their README.md has the numbers
checked by hand); every test fails on a4e2f15 (memcpy-bound / allocator-churn at medium from one call,
launch-bound at medium on 0.4 ms of GPU work)."""
from __future__ import annotations

import polars as pl
import pytest

from conftest import FIXTURES
from nsys_expert import config, pipeline, report

TORCH = FIXTURES / "console_gcn_torch_startup" / "input"
PADDLE = FIXTURES / "console_gcn_paddle_2021" / "input"


def _diagnose(path, lang="en"):
    doc = pipeline.diagnose(pipeline.Request([str(path)], config.Settings(lang=lang)))
    return doc, report.render_markdown(doc, lang)


def test_one_off_rows_from_the_max_column():
    from nsys_expert.facts import api_oneoff

    rows = pl.DataFrame({
        "name": ["cudaMemcpyAsync", "cudaFree", "cudaStreamIsCapturing_v10000", "cudaLaunchKernel", "cudaDeviceSynchronize"],
        "total_ns": [929_629_185, 422_289_647, 125_606_630, 1_012_603, 397_508_096],
        "count": [105, 3, 4, 69, 1],
        "med_ns": [5_000.0, 74_223_282.0, 1_230.0, 4_810.0, 397_508_096.0],
        "max_ns": [929_052_953, 348_065_785, 125_603_480, 637_033, 397_508_096]})
    # torch's log: GPU work 0.43 ms; the copy call (929 ms, median 5 us) cannot be a wait for it
    off = api_oneoff.one_off_ns(rows, gpu_work=432_415.0).to_list()
    assert off == [929_052_953, 0, 125_603_480, 0, 397_508_096]   # cudaFree: median 74 ms; launch: 0.64 ms < 1 ms
    # healthy_summaries: one cudaDeviceSynchronize of 398 ms waits for 1,408 ms of GPU work: steady state
    assert api_oneoff.one_off_ns(rows, gpu_work=1_408_387_426.0).to_list()[4] == 0
    assert api_oneoff.one_off_ns(rows, gpu_work=None).to_list()[:1] == [0]   # GPU work unknown: a copy may be a wait
    # the 2020-2021 console has no Med column: the mean of the other calls stands in (paddle's cudaMalloc: 9.5 us)
    old = pl.DataFrame({"name": ["cudaMalloc", "cudaFree"], "total_ns": [1_709_124_966, 780_254_116],
                        "count": [195, 6], "max_ns": [1_707_272_594, 598_464_963]})
    assert api_oneoff.one_off_ns(old, gpu_work=714_990.0).to_list() == [1_707_272_594, 0]   # frees: 36 ms each besides


def test_torch_startup_copy_call_is_start_up_not_copying():
    doc, md = _diagnose(TORCH)
    f = doc["facts"]
    assert f["api_one_off_top_call"] == "cudaMemcpyAsync" and f["api_one_off_top_ms"] == pytest.approx(929.053, abs=1e-3)
    assert f["api_one_off_ms"] == pytest.approx(1054.656, abs=1e-3)            # + cudaStreamIsCapturing 125.6 ms
    assert f["memcpy_api_ms"] == pytest.approx(0.5914, abs=1e-4)               # 576,232 + 15,150 ns
    assert f["api_time_memcpy_pct"] < 1 and f["api_time_memcpy_pct_span"] == pytest.approx(62.80, abs=0.01)
    assert "memcpy-bound" not in [x["rule"] for x in doc["findings"]]
    assert "host is blocked in copies" not in md


def test_paddle_context_creation_is_not_allocator_churn():
    doc, md = _diagnose(PADDLE)
    f = doc["facts"]
    assert f["api_one_off_top_call"] == "cudaMalloc" and f["api_one_off_top_ms"] == pytest.approx(1707.273, abs=1e-3)
    assert f["free_calls_per_alloc"] == pytest.approx(6 / 196, abs=1e-4)       # 6 cudaFree, 195 cudaMalloc + 1 cudaHostAlloc
    assert f["alloc_api_ms"] == pytest.approx(782.106, abs=1e-3)               # the 1.7 s call left out
    assert "allocator-churn" not in [x["rule"] for x in doc["findings"]]
    assert "allocates and frees device memory" not in md


def test_real_churn_still_fires_from_the_api_summary():
    doc, _ = _diagnose(FIXTURES / "allocator_churn_api_sum" / "input")
    assert doc["facts"]["free_calls_per_alloc"] == pytest.approx(3017 / 3025, abs=1e-4)
    [churn] = [x for x in doc["findings"] if x["rule"] == "allocator-churn"]
    assert churn["severity"] == "medium"


@pytest.mark.parametrize("path,work_ms", [(TORCH, 0.4324), (PADDLE, 0.715)])
def test_too_little_work_from_the_summaries(path, work_ms):
    doc, md = _diagnose(path)
    assert doc["facts"]["gpu_work_ms"] == pytest.approx(work_ms, abs=1e-4)    # kernels + copies, by hand
    assert doc["too_little_work"] == {"gpu_busy_ms": work_ms, "min_gpu_busy_ms": 1.0}
    assert doc["verdict"]["state"] == "undetermined" and doc["verdict"]["reason"] == "too_little_work"
    assert all(x["severity"] in ("info", "low") for x in doc["findings"])
    assert md.splitlines()[2].startswith(f"**Verdict (undetermined):** Too little GPU work to judge: the summary "
                                         f"reports hold only {work_ms:.3g} ms of kernels and copies")
    zh = _diagnose(path, "zh")[1]
    assert "Too little" not in zh and f"只有 {work_ms:.3g} ms 的 kernel 与拷贝" in zh
