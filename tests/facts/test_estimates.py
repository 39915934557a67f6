"""No estimate shown as a measurement (issue 30, item 3): the summary tier's iteration must span what
it claims, a capped estimate is a bound and is said to be one, and a summed time longer than the
iterations is no share of them. Built from real summary fixtures; each test fails on 3cb0fc3."""
from __future__ import annotations

import json
import re
import shutil

from conftest import FIXTURES
from nsys_expert import pipeline, report
from nsys_expert.facts import registry

SUMS = FIXTURES / "sync_bound_summaries" / "input"


def _diagnose(path):
    doc = pipeline.diagnose(pipeline.Request([str(path)]))
    return doc, report.render_markdown(doc, "en")


def _with_inner_range(tmp_path, instances=4000, each_ns=25_000):
    """The real summaries with only nvtx_sum for ranges, plus a short range repeated far more often
    than the step (a layer, a kernel wrapper): what a console-only user often has."""
    d = tmp_path / "in"
    shutil.copytree(SUMS, d)
    for name in ("sync_bound_nvtx_gpu_proj_sum.csv", "sync_bound_nvtx_pushpop_sum.csv"):
        (d / name).unlink()
    nvtx = d / "sync_bound_nvtx_sum.csv"
    total = instances * each_ns
    nvtx.write_text(nvtx.read_text().rstrip("\n") +
                    f"\n0.1,{total},{instances},{each_ns}.0,{each_ns}.0,{each_ns - 500},{each_ns + 900},120.0,PushPop,:layer\n")
    return d


def test_a_short_range_repeated_most_is_not_the_iteration(tmp_path):
    doc, md = _diagnose(_with_inner_range(tmp_path))
    f = doc["facts"]
    assert f["iter_est_count"] == 400 and 2.5 < f["iter_est_median_ms"] < 2.7   # the step, not the layer
    assert f["gpu_active_est_pct"] < 50 and doc["verdict"]["rule"] == "sync-bound"
    assert "100.0 %" not in md.split("## ")[0]


def test_a_capped_estimate_is_a_bound_in_words(tmp_path):
    doc, md = _diagnose(FIXTURES / "memory_bound_summaries" / "input")
    v = doc["verdict"]
    assert doc["facts"]["gpu_work_to_iter_pct"] >= 100
    assert v["gpu_active_basis"] == "bound" and v["gpu_work_to_iter_pct"] == doc["facts"]["gpu_work_to_iter_pct"]
    head = md.split("\n## ")[0]
    assert not re.search(r"busy 100(\.0)? %", head)


def test_summed_times_longer_than_the_iterations_are_no_share(tmp_path):
    d = tmp_path / "in"
    shutil.copytree(SUMS, d)
    api = d / "sync_bound_cuda_api_sum.csv"
    rows = api.read_text().splitlines()
    head, body = rows[0], rows[1:]
    cols = head.split(",")
    it, tt = cols.index("Total Time (ns)"), cols.index("Name")
    out = [head]
    for r in body:   # the sync calls summed over many threads: 100 x their time
        c = r.split(",")
        if c[tt] == "cudaStreamSynchronize":
            c[it] = str(int(float(c[it])) * 100_000)
        out.append(",".join(c))
    api.write_text("\n".join(out) + "\n")
    doc, _ = _diagnose(d)
    assert "sync_wait_share_est_pct" not in doc["facts"]
    assert "longer than all the iterations together" in str(doc["facts_absent"]["sync_wait_share_est_pct"])
    assert 0 < doc["facts"]["launch_api_share_est_pct"] < 100   # the other shares are still there
    assert "gpu_work_to_iter_pct" in registry.RUN_FACTS
