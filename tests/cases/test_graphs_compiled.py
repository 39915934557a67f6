"""Under CUDA graphs and torch.compile (issue 54, item 6): graph-launched kernels are joined to their graph
launch and cost no launch each, a step a graph replays gets no launch-bound claim, Triton kernels of compiled
regions count as fused (eager-compile quiet, no "compile it"), and a finding about a compiled or graphed run
says so. Pinned on the real fixtures' golden files (test_golden holds them to what the program produces)."""
import json
import re

import polars as pl
import pytest

from conftest import expected_doc, FIXTURES
from nsys_expert.facts import graph
from nsys_expert.facts.names import fused_kernel_expr, kernel_class_expr

# runs whose steps a CUDA graph replays: nsys CSVs (graphs untraced), the SQLite export (whole graph
# executions), torch.profiler (each graph kernel, with its cudaGraphLaunch's correlation id), batch-1 inference
GRAPHED = ["launch_bound_graphed", "launch_bound_graphed_sqlite", "kineto_launch_bound_graphed",
           "pair_infer_graph_fixed_sqlite"]
# compiled models (torch.compile: triton_poi_ / triton_red_ / triton_per_ kernels)
COMPILED = ["pair_block_stack_fixed_sqlite", "pair_hf_llama_fixed_sqlite", "pair_resnet_compile_fixed_sqlite",
            "pair_effnet_compile_fixed_sqlite", "pair_memory_bound_fixed", "pair_memory_bound_fixed_sqlite",
            "recompile_shapes", "recompile_shapes_sqlite"]
LAUNCH_CLAIMS = re.compile(r"(?i)launch overhead|one launch replaces|launches one kernel per|capture the steady-state step")


def _doc(case):
    return expected_doc(case)


def _md(case):
    return (FIXTURES / case / "expected.md").read_text(encoding="utf-8")


def _advice(case):
    """The advice lines of the report's section 8."""
    md = _md(case)
    part = md.split("## 8.", 1)[1].split("\n## ", 1)[0] if "## 8." in md else ""
    return [ln.strip()[2:] for ln in part.splitlines() if ln.strip().startswith("- ")]


@pytest.mark.parametrize("case", GRAPHED)
def test_a_step_a_graph_replays_gets_no_launch_claim(case):
    doc = _doc(case)
    rules = {f["rule"] for f in doc["findings"]}
    assert "launch-bound" not in rules and "eager-compile" not in rules
    for f in doc["findings"]:
        assert not LAUNCH_CLAIMS.search(f["message"]), (f["rule"], f["message"])
    assert not [a for a in _advice(case) if LAUNCH_CLAIMS.search(a)]
    facts = doc["facts"]
    assert facts.get("graph_launch_count", 0) >= 5
    if "gpu_active_pct" in facts:         # a trace that shows the graphs' work: all of it from graph launches
        assert facts["graph_share_of_kernel_pct"] >= 99


def test_graph_kernels_are_joined_to_their_graph_launch_in_the_kineto_trace():
    """torch.profiler records each kernel of a replay with its cudaGraphLaunch's correlation id: every
    kernel of the window is the graph's, a replay is one launch (kernel_small_share_pct counts launches: 0 of
    5 is small, where counting the 1,141 sub-microsecond kernels one by one said 100 %), the gaps between
    them wait on queued work, not on launches, and no step asks for --cuda-graph-trace=node (the kernels
    are in the trace)."""
    facts = _doc("kineto_launch_bound_graphed")["facts"]
    assert facts["graph_kernel_count"] == facts["kernel_count"] == 1141
    assert facts["graph_launch_count"] == facts["iter_count"] == 5
    assert facts["kernel_small_share_pct"] == 0.0 and facts["kernel_small_share_pct_span"] == 100.0
    assert facts["gpu_idle_launch_pct"] == 0.0
    assert "--cuda-graph-trace=node" not in _md("kineto_launch_bound_graphed")


def test_whole_graph_executions_hide_the_kernel_classes():
    """pair_infer_graph_fixed_sqlite (nsys's default --cuda-graph-trace=graph): the graph executions are 99.8 %
    of the kernel work, the one add kernel a step outside them the rest. Its classes are not the step's:
    no memory-bound claim from that one kernel (it said '100 % elementwise: memory-bound'), the class rules
    are not evaluated, and the report asks for --cuda-graph-trace=node."""
    doc = _doc("pair_infer_graph_fixed_sqlite")
    facts = doc["facts"]
    assert facts["graph_share_of_kernel_pct"] > 99 and facts["graph_kernel_count"] == 0
    assert "elementwise_share_of_kernel_pct" not in facts and "matmul_share_of_kernel_pct" not in facts
    assert doc["findings"] == []
    assert {"memory-bound", "compute-bound", "eager-compile"} <= set(doc["not_evaluated"])
    assert "--cuda-graph-trace=node" in _md("pair_infer_graph_fixed_sqlite")


@pytest.mark.parametrize("case", COMPILED)
def test_a_compiled_model_is_not_told_to_compile(case):
    doc = _doc(case)
    assert doc["facts"]["elementwise_fused_share_of_kernel_pct"] >= 10
    assert "eager-compile" not in {f["rule"] for f in doc["findings"]}
    assert not [a for a in _advice(case) if a.startswith(("Compile the model", "Fuse the elementwise chain"))]


def test_a_compiled_memory_bound_chain_says_it_is_compiled():
    """pair_memory_bound_fixed: the four elementwise passes compiled into one triton_poi_fused kernel. Still
    memory-bound (one pass over 1 GiB), and the finding says the model is compiled instead of 'torch.compile'."""
    for case in ("pair_memory_bound_fixed", "pair_memory_bound_fixed_sqlite"):
        mb = next(f for f in _doc(case)["findings"] if f["rule"] == "memory-bound")
        assert "the model is compiled" in mb["message"]
        advice = _advice(case)
        assert any(a.startswith("The model is already compiled") for a in advice)
        assert not any("torch.compile, or a single custom" in a for a in advice)


def test_triton_kernels_are_elementwise_and_fused_whatever_aten_ops_they_name():
    names = ["triton_poi_fused__native_batch_norm_legit_functional_add_convolution_backward_native_batch_norm_backward_65",
             "triton_poi_fused_add_max_pool2d_with_indices_max_pool2d_with_indices_backward_67",
             "triton_red_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_3",
             "triton_per_fused__scaled_dot_product_flash_attention_backward_0",
             "triton_tem_fused_mm_0", "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc",
             "at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>"]
    got = pl.DataFrame({"name": names}).select(kernel_class_expr("name").alias("c"), fused_kernel_expr("name").alias("f"))
    assert got["c"].to_list() == ["elementwise"] * 4 + ["matmul", "matmul", "elementwise"]
    assert got["f"].to_list() == [True] * 4 + [False] * 3


def test_a_compiled_conv_nets_triton_kernels_are_no_convolutions():
    """ResNet-50 compiled: Inductor names its fused batch-norm / ReLU backward kernels after the
    convolution_backward they sit beside, and its pooling kernels after max_pool2d: they are elementwise work,
    not convolution or NCHW-layout kernels (they made 15 points of 'convolution' and 4 % of 'NCHW kernels')."""
    facts = _doc("pair_resnet_compile_fixed_sqlite")["facts"]
    assert facts["nchw_kernel_share_of_kernel_pct"] == 0.0
    assert facts["conv_share_of_kernel_pct"] < 25 and facts["elementwise_fused_share_of_kernel_pct"] > 50


def test_launch_units_count_a_replay_once():
    """Three kernels of one graph launch (correlation 7) and two launched one by one: three launch units,
    the replay from its first kernel's start to its last's end; the graph's share of the kernel work."""
    k = pl.DataFrame({"start_ns": [0, 3_000, 6_000, 50_000, 60_000], "end_ns": [2_000, 5_000, 8_000, 52_000, 90_000],
                      "corr_id": [7, 7, 7, 8, 9], "kind": ["kernel"] * 5})
    k = k.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
    units, g = graph.launch_units(k, k, pl.Series([7]))
    assert sorted(units["dur_ns"].to_list()) == [2_000, 8_000, 30_000]
    assert g["graph_kernels"] == 3 and g["graph_ns"] == 6_000 and g["work_ns"] == 38_000 and g["whole_ns"] == 0
    units, g = graph.launch_units(k, k, None)        # no API trace: no graph known, each kernel a launch
    assert units.height == 5 and g["graph_kernels"] == 0


def _launch_bound(run, overrides=None):
    from nsys_expert.engine import RuleSet, evaluate, load_packs
    from nsys_expert.facts import FactSet, registry

    packs = load_packs()
    rs = RuleSet.build(packs, select=["launch-bound"], overrides=overrides)
    return [f for f in evaluate(rs, FactSet(run=dict(run)), set(registry.INPUTS)).findings if f.rule == "launch-bound"]


# pair_effnet_compile_fixed_sqlite's facts (the compiled EfficientNet-B0): its GPU waits for launches 19.9 %
EFFNET_COMPILED = {"gpu_active_pct": 70.34, "gpu_idle_pct": 29.66, "gpu_idle_launch_pct": 19.9,
                   "gpu_idle_short_gaps_pct": 23.21, "kernel_small_share_pct": 67.63, "kernel_median_us": 2.752,
                   "kernels_per_iter": 1062.1, "elementwise_fused_share_of_kernel_pct": 57.23}


def test_launch_bound_on_a_compiled_model_says_it_is_compiled():
    """The compiled EfficientNet waits for launches 19.9 % of the window, just under launch-bound's 20: at 15 it
    fires, and its advice is CUDA graphs for the compiled code (mode="reduce-overhead"), never 'fuse with
    torch.compile'."""
    assert _launch_bound(EFFNET_COMPILED) == []
    [f] = _launch_bound(EFFNET_COMPILED, ["launch-bound.min_idle_pct=15"])
    text = " ".join(f.advice)
    assert "already compiled (57.2 %" in text and 'mode="reduce-overhead"' in text
    assert "Fuse the elementwise chain" not in text


def test_launch_bound_is_quiet_where_a_graph_replays_the_step_and_says_the_rest_where_partly():
    """launch_bound's own gaps (the shared case: 95 % of the window waiting for launches): with graphs launching
    all the kernel work it is quiet; with a third of it from graphs (kineto_hta_torchrec_16rank has 30.8 %) it
    fires and says that the rest of the step is to be captured."""
    gaps = {"gpu_active_pct": 4.7, "gpu_idle_pct": 95.3, "gpu_idle_launch_pct": 95.2, "gpu_idle_short_gaps_pct": 95.2,
            "kernel_small_share_pct": 100.0, "kernel_median_us": 0.864, "kernels_per_iter": 200.0}
    assert len(_launch_bound(gaps)) == 1
    assert _launch_bound(dict(gaps, graph_share_of_kernel_pct=100.0)) == []
    [f] = _launch_bound(dict(gaps, graph_share_of_kernel_pct=30.8))
    assert any(a.startswith("30.8 % of the kernel work already runs from CUDA graphs") for a in f.advice)
