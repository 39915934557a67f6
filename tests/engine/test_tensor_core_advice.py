"""The tensor-core advice fits the GPU: TF32 / bf16 need compute capability 8.0 (Ampere) or later; a
V100 (7.0) gets fp16 autocast. The compute capability comes from the input when it says it."""
from conftest import FIXTURES, diagnosed


def _fp32(case):
    doc = diagnosed(FIXTURES / case / "input")
    return doc, next(f for f in doc["findings"] if f["rule"] == "fp32-gemm-without-tensor-cores")


def test_a_v100_is_told_fp16_not_tf32():
    doc, f = _fp32("kineto_hta_ddp_v100")       # a real HTA trace: Tesla V100-SXM2-32GB, computeMajor 7
    assert doc["facts"]["gpu_compute_capability"] == 7.0
    text = " ".join(f["advice"])
    assert "float16" in text and "GradScaler" in text and "compute capability 7.0" in text
    assert "allow_tf32" not in text and "bfloat16" not in text


def test_ampere_and_later_or_unknown_keep_tf32():
    doc, f = _fp32("pair_fp32_gemm_sqlite")     # H200: TARGET_INFO_GPU says 9.0
    assert doc["facts"]["gpu_compute_capability"] == 9.0
    assert any("allow_tf32" in a for a in f["advice"]) and not any("GradScaler" in a for a in f["advice"])
    doc, f = _fp32("pair_fp32_gemm")            # CSVs name no compute capability: the current GPUs' advice
    assert "gpu_compute_capability" not in doc["facts"]
    assert any("allow_tf32" in a for a in f["advice"])


def test_compute_capability_readings():
    from nsys_expert.facts.platform import _cc

    assert [_cc(v) for v in ("9.0", 8.6, "sm_90", 90, "7.5", None, True, "x", 0)] == \
        [9.0, 8.6, 9.0, 9.0, 7.5, None, None, None, None]


def test_a_range_named_for_data_that_is_communication_is_not_input_work():
    """TorchRec's `## sparse_data_dist ##` is the input features' all-to-all between ranks: the idle time
    in it is the network's; the real TorchRec trace's idle was called data-io-bound (42 %) before."""
    import polars as pl

    from nsys_expert.facts.names import data_range_expr

    names = ["## sparse_data_dist ##", "DataLoader.__next__", "enumerate(DataLoader)#_SingleProcessDataLoaderIter",
             "load_batch", "nccl:all_to_all", "data_all_gather", "step"]
    got = pl.DataFrame({"name": names}).filter(data_range_expr())["name"].to_list()
    assert got == ["DataLoader.__next__", "enumerate(DataLoader)#_SingleProcessDataLoaderIter", "load_batch"]
    doc = diagnosed(FIXTURES / "kineto_hta_torchrec_16rank" / "input")
    assert "data-io-bound" not in [f["rule"] for f in doc["findings"]]
    assert doc["facts"]["data_range_share_pct"] < 5
