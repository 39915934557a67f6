"""torch.profiler (Kineto) CPU operators, ROCm traces and per-rank trace folders (issue 33, items 2, 3 and 5)."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import diagnosed
from nsys_expert import report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "fixtures")
SHARED = os.path.join(ROOT, "..", "shared", "cases", "kineto")


def _doc(*paths, lang="en"):
    return diagnosed(*paths, lang=lang)


def _md(path, lang="en"):
    return report.render_markdown(_doc(path, lang=lang), lang)


def _shared(name):
    p = os.path.join(SHARED, f"{name}.pt.trace.json.gz")
    if not os.path.exists(p):
        pytest.skip("needs ../shared")
    return p


def _rules(doc):
    return [f["rule"] for f in doc["findings"]]


def test_sync_bound_names_item_as_the_sync_source():
    doc = _doc(_shared("sync_bound"))
    f = doc["facts"]
    assert f["sync_source_op"] == "aten::item" and f["sync_source_inner_op"] == "aten::_local_scalar_dense"
    assert f["sync_source_api"] == "cudaStreamSynchronize" and f["sync_source_share_pct"] > 95
    sync = next(x for x in doc["findings"] if x["rule"] == "sync-bound")
    assert "`aten::item`" in sync["message"]
    assert any(".item()" in a and "aten::item" in a for a in sync["advice"])
    rows = doc["tables"]["sync_sources"]
    assert rows[0]["op"] == "aten::item" and rows[0]["calls"] == 399   # the first period is warm-up (the kernel-period window)
    # torch.cuda.synchronize() makes cudaDeviceSynchronize outside any operator; it leaves the GPU no idle time
    assert any(r["op"] == "cudaDeviceSynchronize (no operator)" and r["idle_after_ms"] == 0 for r in rows)


def test_healthy_backward_forward_and_optimizer_shares():
    f = _doc(_shared("healthy"))["facts"]
    assert 55 < f["backward_kernel_share_pct"] < 65 and 30 < f["forward_kernel_share_pct"] < 38
    assert 5 < f["optimizer_kernel_share_pct"] < 9
    assert 1.5 < f["backward_forward_ratio"] < 2.0
    assert 4 < f["optimizer_step_ms"] < 7 and f["backward_host_ms_per_step"] > 10


def test_dataloader_time_per_step_and_main_process_loader():
    doc = _doc(os.path.join(FIX, "kineto_dataloader_bound", "input"))
    f = doc["facts"]
    assert 7.5 < f["dataloader_ms_per_step"] < 9 and f["dataloader_in_main_process"] == 1   # ~8 ms planted
    dio = next(x for x in doc["findings"] if x["rule"] == "data-io-bound")
    assert "num_workers=0" in dio["message"]
    assert any("_SingleProcessDataLoaderIter" in a for a in dio["advice"])
    pg = next(x for x in doc["findings"] if x["rule"] == "pageable-memcpy")
    assert f["pageable_copy_op"] == "aten::to" and "`aten::to`" in pg["message"]


def test_cpu_op_table_in_the_report():
    md = _md(_shared("healthy"))
    assert "torch.profiler CPU operators" in md and "| backward (autograd) |" in md
    md_zh = _md(_shared("healthy"), "zh")
    assert "反向传播" in md_zh


def test_rocm_trace_read_named_and_no_nvidia_advice():
    doc = _doc(os.path.join(FIX, "kineto_rocm_mi250", "input"))
    assert doc["facts"]["gpu_vendor"] == "amd"
    assert [g["name"] for g in doc["environment"]["gpus"]][0] == "AMD Radeon Graphics (gfx90a)"
    md = _md(os.path.join(FIX, "kineto_rocm_mi250", "input"))
    for word in ("nsys ", "ncu ", "nvidia-smi", "Nsight Compute", "--trace=osrt"):
        assert word not in md, word
    steps = " ".join(c for s in doc["next_steps"] for c in s["commands"])
    assert "nsys" not in steps and "ncu" not in steps


def test_hip_runtime_calls_have_the_cuda_roles():
    from nsys_expert.facts import names
    assert {"hipStreamSynchronize", "hipDeviceSynchronize"} <= names.SYNC_APIS
    assert "hipMemcpyWithStream" in names.SYNC_MEM_APIS and "hipMemcpyAsync" in names.ASYNC_MEM_APIS
    assert {"hipLaunchKernel", "hipExtModuleLaunchKernel"} <= names.KERNEL_LAUNCH_APIS


def test_rocm_advice_is_platform_aware():
    """host-bound on an AMD run: no nsys command, HIP graphs instead of CUDA graphs."""
    doc = _doc(os.path.join(FIX, "kineto_rocm_mi250", "input"))
    host = next(x for x in doc["findings"] if x["rule"] == "host-bound")
    text = " ".join(host["advice"])
    assert "nsys" not in text and "HIP graph" in text and "with_stack=True" in text


def test_a_rocm_report_names_hip_not_cuda():
    """The report's own words and host-bound's title say HIP on an AMD run, CUDA on an NVIDIA one."""
    rocm = os.path.join(FIX, "kineto_rocm_mi250", "input")
    for lang, words in (("en", ("## 5. HIP API time", "host code outside HIP", "Top 10 GPU kernels",
                                "the CPU works outside HIP")),
                        ("zh", ("HIP API 耗时分布", "HIP 之外的主机代码", "CPU 在 HIP 之外忙碌"))):
        md = _md(rocm, lang)
        for w in words:
            assert w in md, w
        assert "outside CUDA" not in md and "CUDA API" not in md and "CUDA 之外" not in md
    doc = _doc(rocm)
    from nsys_expert.report import html
    assert "HIP API" in html.render_html(doc, None, "en") and "CUDA API" not in html.render_html(doc, None, "en")
    nvidia = _md(os.path.join(FIX, "host_bound", "input"))
    assert "the CPU works outside CUDA" in nvidia and "CUDA API time" in nvidia


def test_not_evaluated_speaks_torch_profiler():
    """A torch.profiler trace is told what it lacks in its own terms (ProfilerStep ranges), not NVTX
    or nsys --trace options; an nsys input keeps the NVTX words."""
    doc = _doc(os.path.join(FIX, "kineto_sync_bound", "input"))
    why = {n["rule"]: " ".join(map(str, n["missing"])) for n in doc["not_evaluated"]}
    assert "ProfilerStep#N" in why["iteration-jitter"] and "ProfilerStep#N" in why["jit-recompilation"]
    assert "torch.profiler does not record" in why["gil-contention"]
    assert not any("NVTX" in str(w) or "--trace" in str(w) for w in why.values())
    nsys = _doc(os.path.join(FIX, "busy_no_nvtx", "input"))
    assert any("NVTX" in str(m) for n in nsys["not_evaluated"] for m in n["missing"])


@pytest.mark.slow   # 6-37 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_straggler_from_per_rank_traces(tmp_path):
    doc = _doc(os.path.join(FIX, "kineto_3rank_straggler", "input"))
    assert doc["facts"]["rank_count"] == 3 and doc["facts"]["straggler_rank"] == "rank2"
    assert "rank-straggler" in _rules(doc)
    # the equal set: the two unchanged ranks alone
    for r in (0, 1):
        shutil.copy(os.path.join(FIX, "kineto_3rank_straggler", "input", f"rank{r}.pt.trace.json.gz"), tmp_path)
    assert "rank-straggler" not in _rules(_doc(str(tmp_path)))


@pytest.mark.slow   # 6-37 s in the fast set on the shared 2-core machine (issue 56, item 14)
def test_ranks_named_by_distributed_info(tmp_path):
    """File names that say no rank: the traces' distributedInfo does."""
    for r in (0, 1, 2):
        shutil.copy(os.path.join(FIX, "kineto_3rank_straggler", "input", f"rank{r}.pt.trace.json.gz"),
                    tmp_path / f"host{7 - r}_worker.pt.trace.json.gz")
    doc = _doc(str(tmp_path))
    assert doc["facts"]["straggler_rank"] == "rank2 (host5_worker)"
    assert [r["rank"] for r in doc["ranks"]] == ["rank0 (host7_worker)", "rank1 (host6_worker)", "rank2 (host5_worker)"]
