"""More input never gives a weaker verdict (issue 56, item 8: "a CSV folder with more reports says 'likely
gpu-starved' and leaves launch-bound unevaluated, where its console text alone says 'likely launch-bound'").

The real CSV fixtures, each read three ways: the summary reports alone (what `nsys stats` prints as console
text), the same summaries beside the NVTX and CUDA API traces but no GPU trace (`nsys stats` without
`cuda_gpu_trace`), and the kernel and API summaries beside the NVTX trace alone (no `nvtx_sum`). Without a GPU
trace nothing measures the window the NVTX steps mark, so the summaries stand for it as they do for the whole
profile. Before: launch_bound's full set was "likely gpu-starved" (launch-bound not evaluated: its facts whole-
profile only), memory_bound's "likely no system-level bottleneck" (memory-bound high from its summaries),
memcpy_bound's memcpy-bound low (medium); the kernel + API summaries with the NVTX trace were undetermined ("no
NVTX step ranges in the summary reports")."""
import shutil

import pytest

from conftest import FIXTURES
from nsys_expert import config, pipeline


def _diagnose(case, tmp_path, keep):
    out = tmp_path / case
    out.mkdir(parents=True)
    for f in (FIXTURES / case / "input").glob("*.csv"):
        if keep(f.name):
            shutil.copy(f, out / f.name)
    v = pipeline.diagnose(pipeline.Request([str(out)], config.Settings()))["verdict"]
    return v["state"], v["rule"], v["severity"], v["reason"]


def _summaries(name):
    return name.endswith("_sum.csv")


def _all_but_gpu_trace(name):
    return not name.endswith("cuda_gpu_trace.csv")


@pytest.mark.parametrize("case,verdict", [
    ("launch_bound", ("likely", "launch-bound", "high", None)),
    ("memory_bound", ("likely", "memory-bound", "high", None)),
    ("memcpy_bound", ("likely", "memcpy-bound", "medium", None)),
    ("healthy", ("likely", None, None, "no_finding_bound")),
])
def test_the_traces_beside_the_summaries_keep_their_verdict(case, verdict, tmp_path):
    assert _diagnose(case, tmp_path / "s", _summaries) == verdict          # the summaries alone
    assert _diagnose(case, tmp_path / "t", _all_but_gpu_trace) == verdict  # and with the NVTX and API traces


def test_an_nvtx_trace_gives_the_summaries_their_steps(tmp_path):
    keep = ("launch_bound_cuda_gpu_kern_sum.csv", "launch_bound_cuda_api_sum.csv", "launch_bound_nvtx_pushpop_trace.csv")
    assert _diagnose("launch_bound", tmp_path, lambda n: n in keep) == ("likely", "launch-bound", "high", None)
