"""Pinned host allocations are not device allocator churn (issue 56, item 4): the console text of a run with
pinned DataLoader buffers (66 cudaHostAlloc calls) was "allocator churn (high), 28-85 %" with empty_cache
advice. The real dataloader_bound summaries (150 steps, one cudaHostAlloc of 1.94 ms) with that row grown to
three calls a step of the same length, as a pinned DataLoader's buffers make them until PyTorch's host cache
is warm; the same row as device allocations (cudaMalloc) is churn."""
import shutil

from conftest import FIXTURES
from nsys_expert import config, pipeline

SRC = FIXTURES / "dataloader_bound_summaries" / "input"


def _pinned(tmp_path, name="cudaHostAlloc", calls=450):
    for f in SRC.iterdir():
        shutil.copy(f, tmp_path / f.name)
    api = tmp_path / "dataloader_bound_cuda_api_sum.csv"
    lines = api.read_text(encoding="utf-8").splitlines()
    for i, ln in enumerate(lines):
        if ln.endswith(",cudaHostAlloc"):
            avg = 1943613
            lines[i] = f"0.5,{avg * calls},{calls},{avg}.0,{avg}.0,{avg},{avg},0.0,{name}"
    api.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return pipeline.diagnose(pipeline.Request([str(tmp_path)], config.Settings()))


def test_pinned_host_buffers_are_not_allocator_churn(tmp_path):
    doc = _pinned(tmp_path)
    assert "allocator-churn" not in {f["rule"] for f in doc["findings"]}
    assert doc["facts"]["alloc_calls"] == 12          # cudaMalloc 11 + cudaFree 1: the device allocator's
    assert doc["verdict"]["rule"] == "data-io-bound"


def test_device_allocations_as_many_still_are(tmp_path):
    doc = _pinned(tmp_path, name="cudaMalloc_v2")
    assert "allocator-churn" in {f["rule"] for f in doc["findings"]}
