"""Nsight Compute: the CSV loader on every real file, the name join with nsys, the kernel diagnoses.

Values are checked by hand against the text form of the same reports (``*_details.txt``) and the
CSV cells themselves.
"""
import json
import shutil
import subprocess
import sys

import polars as pl
import pytest

from conftest import FIXTURES, SHARED, needs_shared, produced
from nsys_expert import load, pipeline
from nsys_expert.errors import InputError
from nsys_expert.facts import ncu as ncu_facts
from nsys_expert.load import ncu

CASES = SHARED / "cases"
SAMPLES = SHARED / "public-samples"
NSX = [sys.executable, "-m", "nsys_expert"]
KERNEL_RULES = {"kernel-memory-bound", "kernel-compute-bound", "latency-bound", "low-occupancy", "tail-effect",
                "register-pressure", "uncoalesced-access", "bank-conflicts", "tensor-cores-unused", "ncu-guided-analysis"}


def metric(frame, launch, section, label):
    rows = frame.filter((pl.col("launch_id") == launch) & (pl.col("section") == section) & (pl.col("metric") == label))
    assert rows.height == 1, (section, label, rows)
    return rows.row(0, named=True)


# ------------------------------------------------------------------------------------------ loader
@needs_shared
@pytest.mark.parametrize("case", ["compute_bound", "healthy", "launch_bound", "memory_bound", "sync_bound"])
def test_details_pages_of_the_cases(case):
    path = CASES / case / "ncu" / f"{case}_details.csv"
    assert ncu.looks_like(str(path))
    part = ncu.read_ncu(str(path))
    assert part.kind == "ncu-details" and part.version == "ncu-2023+"
    f, rules = part.tables["ncu"], part.tables["ncu_rules"]
    # metric rows are 16 fields against a 20-column header; every one is read
    n_rows = sum(1 for line in path.read_text().splitlines()[1:])
    assert f.height + rules.filter(pl.col("type").is_not_null()).height == n_rows
    # display names (metric rows) and identifiers (rule rows) end up as one identifier
    assert "SpeedOfLight" in f["section"].to_list() and "GPU Speed Of Light Throughput" not in f["section"].to_list()
    assert set(rules["section"]) <= set(ncu.SECTION_IDS.values())
    assert set(rules["type"].unique()) <= {"OPT", "INF", "WRN"}
    assert f["cc"].unique().to_list() == ["9.0"]


@needs_shared
def test_memory_bound_details_values_by_hand():
    """memory_bound_details.txt, first kernel (launch_clamp_scalar): DRAM 87.96 %, 501.73 us, 4.23 TB/s."""
    f = ncu.read_ncu(str(CASES / "memory_bound/ncu/memory_bound_details.csv")).tables["ncu"]
    assert metric(f, 0, "SpeedOfLight", "DRAM Throughput")["value"] == pytest.approx(87.96)
    assert metric(f, 0, "SpeedOfLight", "Compute (SM) Throughput")["value"] == pytest.approx(21.04)
    d = metric(f, 0, "SpeedOfLight", "Duration")
    assert (d["value"], d["unit"], d["text"]) == (pytest.approx(501730.0), "ns", "501.73")
    assert metric(f, 0, "SpeedOfLight", "DRAM Frequency")["value"] == pytest.approx(3.2e9)       # Ghz
    # the same label in two sections, two units: keyed by (section, label)
    assert metric(f, 0, "SpeedOfLight", "Memory Throughput")["unit"] == "%"
    mwa = metric(f, 0, "MemoryWorkloadAnalysis", "Memory Throughput")
    assert (mwa["unit"], mwa["value"]) == ("byte/s", pytest.approx(4.23e12))                     # Tbyte/s
    assert metric(f, 0, "LaunchStats", "Grid Size")["value"] == 262144                            # "262,144"
    assert metric(f, 0, "LaunchStats", "Driver Shared Memory Per Block")["value"] == pytest.approx(1020)  # Kbyte/block
    assert metric(f, 0, "MemoryWorkloadAnalysis", "L2 Persisting Size")["value"] == pytest.approx(11.8e6)  # Mbyte
    text = metric(f, 0, "LaunchStats", "Cluster Scheduling Policy")
    assert text["value"] is None and text["text"] == "PolicySpread"
    assert metric(f, 0, "Occupancy", "Achieved Occupancy")["value"] == pytest.approx(86.02)
    assert f.filter(pl.col("launch_id") == 0)["block_size"][0] == "(128, 1, 1)"


@needs_shared
def test_rule_rows():
    rules = ncu.read_ncu(str(CASES / "memory_bound/ncu/memory_bound_details.csv")).tables["ncu_rules"]
    r = rules.filter((pl.col("launch_id") == 0) & (pl.col("rule") == "MemoryL2Compression")).row(0, named=True)
    assert (r["section"], r["type"], r["speedup_type"], r["speedup_pct"]) == (
        "MemoryWorkloadAnalysis_Chart", "OPT", "global", pytest.approx(30.16))
    assert r["description"].startswith("Out of the 1073809792.0 bytes")
    inf = rules.filter((pl.col("launch_id") == 0) & (pl.col("rule") == "SOLBottleneck")).row(0, named=True)
    assert inf["type"] == "INF" and inf["speedup_pct"] is None


@needs_shared
@pytest.mark.parametrize("case", ["compute_bound", "healthy", "launch_bound", "memory_bound", "sync_bound"])
def test_raw_pages_of_the_cases(case):
    part = ncu.read_ncu(str(CASES / case / "ncu" / f"{case}_raw.csv"))
    assert part.kind == "ncu-raw" and set(part.tables) == {"ncu_raw"}
    f = part.tables["ncu_raw"]
    assert f["section"].null_count() == f.height
    assert part.meta["ncu_device"] == ["NVIDIA H200"]


@needs_shared
def test_memory_bound_raw_values_by_hand():
    """The units row scales each column: us, Gbyte, a thousands separator, byte/cycle kept as printed."""
    f = ncu.read_ncu(str(CASES / "memory_bound/ncu/memory_bound_raw.csv")).tables["ncu_raw"].filter(pl.col("launch_id") == 0)
    by = {r["metric"]: r for r in f.iter_rows(named=True)}
    assert (by["gpu__time_duration.sum"]["value"], by["gpu__time_duration.sum"]["unit"]) == (pytest.approx(501728.0), "ns")
    assert by["dram__bytes_read.sum"]["value"] == pytest.approx(1.073786e9)
    assert by["launch__grid_size"]["value"] == 262144
    assert by["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"]["value"] == pytest.approx(87.955272, abs=1e-3)
    assert by["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]["value"] == pytest.approx(106.675282)
    assert by["dram__bytes.sum.peak_sustained"]["unit"] == "Kbyte/cycle"


@needs_shared
@pytest.mark.parametrize("case", ["compute_bound", "memory_bound", "sync_bound"])
def test_text_page_is_recognised_not_read(case):
    path = str(CASES / case / "ncu" / f"{case}_details.txt")
    assert ncu.looks_like(path)
    part = ncu.read_ncu(path)
    assert part.tables == {} and "--csv --page details" in str(part.warnings[0])


@needs_shared
def test_llm_perf_opt_rtx5090_thousands_separators_and_na():
    part = ncu.read_ncu(str(SAMPLES / "llm-perf-opt__ncu_kernel0001_details.csv"))
    f = part.tables["ncu"]
    assert part.meta["ncu_compute_capability"] == ["12.0"]
    assert metric(f, 0, "SpeedOfLight", "Elapsed Cycles")["value"] == 13485                      # "13,485"
    assert metric(f, 0, "SpeedOfLight", "SM Active Cycles")["value"] == pytest.approx(9495.42)   # "9,495.42"
    assert metric(f, 0, "SpeedOfLight", "DRAM Frequency")["value"] == pytest.approx(13.72e9)
    na = metric(f, 0, "Command line profiler metrics", "flop_count_hp.sum")
    assert na["value"] is None and na["text"] == "n/a"
    # --metrics rows keep the raw metric name, and hold the same number as the section label
    raw = metric(f, 0, "Command line profiler metrics", "dram__throughput.avg.pct_of_peak_sustained_elapsed")
    assert raw["value"] == metric(f, 0, "SpeedOfLight", "DRAM Throughput")["value"] == pytest.approx(19.66)


@needs_shared
@pytest.mark.parametrize("name", ["llm-perf-opt__ncu_kernel0001_metrics.csv", "llm-perf-opt__ncu_kernel0001_section_Occupancy.csv",
                                  "llm-perf-opt__ncu_kernel0001_section_SpeedOfLight_RooflineChart.csv",
                                  "llm-perf-opt__ncu_kernel0009_details.csv", "llm-perf-opt__ncu_kernel0013_details.csv"])
def test_other_llm_perf_opt_files(name):
    part = ncu.read_ncu(str(SAMPLES / name))
    assert part.tables["ncu"].height > 0 and part.tables["ncu"]["launch_id"].unique().to_list() == [0]


@needs_shared
def test_superbench_live_run_with_prof_lines_and_base_units():
    path = str(SAMPLES / "superbenchmark__cublaslt_ncu.log")
    assert ncu.looks_like(path)
    part = ncu.read_ncu(path)
    f = part.tables["ncu"]
    assert metric(f, 0, "SpeedOfLight", "DRAM Frequency")["value"] == pytest.approx(3995313115.40)   # hz
    assert metric(f, 0, "SpeedOfLight", "Duration")["value"] == 406240                              # ns
    assert metric(f, 0, "SpeedOfLight", "Compute (SM) Throughput")["value"] == pytest.approx(23.59)
    assert part.meta["ncu_compute_capability"] == ["10.0"]
    assert any("application's own stdout" in str(w) for w in part.warnings)


@needs_shared
def test_permission_failure_names_the_fix():
    path = str(SAMPLES / "gpu-profiling-cuda-kernels__ncu_output.txt")
    assert ncu.looks_like(path)
    with pytest.raises(InputError) as e:
        ncu.read_ncu(path)
    line = e.value.line()
    assert "ERR_NVGPUCTRPERM" in line and "NVreg_RestrictProfilingToAdminUsers=0" in line and "SYS_ADMIN" in line
    p = subprocess.run(NSX + ["diagnose", path], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "ERR_NVGPUCTRPERM" in p.stderr


@needs_shared
@pytest.mark.parametrize("name", ["SOURCES.md", "ALCFBeginnersGuide__polaris_02_profiling__nsys2024.2.3.md",
                                  "llm-perf-opt__nsys_allstage_summary_cuda_gpu_kern_sum.csv",
                                  "llm-perf-opt__ncu_list-sections_2025.1.1.txt"])
def test_not_ncu(name):
    assert not ncu.looks_like(str(SAMPLES / name))


HEADER_2023 = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
               '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
               '"Rule Description","Estimated Speedup Type","Estimated Speedup"')


def test_old_column_sets_and_per_value_units(tmp_path):
    """2020 (Kernel Time, no launch columns), 2022 (15 columns, no rules); usecond / msecond, Kbyte / Mbyte, hz."""
    old = tmp_path / "old.csv"
    old.write_text(
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name",'
        '"Metric Name","Metric Unit","Metric Value"\n'
        '"0","1","a.out","h","k(float*)","2020-Apr-07 17:01:05","1","7","GPU Speed Of Light","SOL SM","%","45.5"\n'
        '"0","1","a.out","h","k(float*)","2020-Apr-07 17:01:05","1","7","GPU Speed Of Light","Duration","usecond","12.5"\n'
        '"1","1","a.out","h","k(float*)","2020-Apr-07 17:01:06","1","7","GPU Speed Of Light","Duration","msecond","1.25"\n'
        '"0","1","a.out","h","k(float*)","2020-Apr-07 17:01:05","1","7","GPU Speed Of Light","Memory Frequency","cycle/second","877000000"\n')
    part = ncu.read_ncu(str(old))
    f = part.tables["ncu"]
    assert part.version == "ncu-2020" and "ncu_rules" not in part.tables
    assert metric(f, 0, "SpeedOfLight", "SOL SM")["value"] == 45.5
    assert metric(f, 0, "SpeedOfLight", "Duration")["value"] == 12500
    assert metric(f, 1, "SpeedOfLight", "Duration")["value"] == 1_250_000
    assert metric(f, 0, "SpeedOfLight", "Memory Frequency")["unit"] == "Hz"
    mid = tmp_path / "mid.csv"
    mid.write_text(
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device",'
        '"CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","Memory Workload Analysis","Memory Throughput","Gbyte/second","1,215.5"\n'
        '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","Launch Statistics","Shared Memory Configuration Size","Kbyte","167.94"\n'
        '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","Launch Statistics","Dynamic Shared Memory Per Block","Mbyte/block","0.05"\n'
        '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","GPU Speed Of Light Throughput","SM Frequency","hz","1410000000"\n')
    part = ncu.read_ncu(str(mid))
    f = part.tables["ncu"]
    assert part.version == "ncu-2022"
    assert metric(f, 0, "MemoryWorkloadAnalysis", "Memory Throughput")["value"] == pytest.approx(1.2155e12)
    assert metric(f, 0, "LaunchStats", "Shared Memory Configuration Size")["value"] == pytest.approx(167940)
    assert metric(f, 0, "LaunchStats", "Dynamic Shared Memory Per Block")["value"] == pytest.approx(50000)
    assert metric(f, 0, "SpeedOfLight", "SM Frequency")["value"] == 1.41e9


def test_european_decimal_commas(tmp_path):
    p = tmp_path / "eu.csv"
    p.write_text(HEADER_2023 + "\n"
                 '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","GPU Speed Of Light Throughput","DRAM Throughput","%","87,96",\n'
                 '"0","1","p","h","k","1","7","(256, 1, 1)","(80, 1, 1)","0","8.0","GPU Speed Of Light Throughput","Elapsed Cycles","cycle","1.234.567",\n')
    f = ncu.read_ncu(str(p)).tables["ncu"]
    assert metric(f, 0, "SpeedOfLight", "DRAM Throughput")["value"] == pytest.approx(87.96)
    assert metric(f, 0, "SpeedOfLight", "Elapsed Cycles")["value"] == 1234567


def test_other_ncu_errors_are_one_line(tmp_path):
    p = tmp_path / "fail.log"
    p.write_text("==PROF== Connected to process 1 (/usr/bin/python3)\n==ERROR== The application returned an error code (1).\n")
    with pytest.raises(InputError) as e:
        ncu.read_ncu(str(p))
    assert "application returned an error code" in e.value.line()
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER_2023 + "\n")
    with pytest.raises(InputError, match="no data rows"):
        ncu.read_ncu(str(empty))


# -------------------------------------------------------------------------------------- name join
@pytest.mark.parametrize("nsys, ncu_name", [
    ("std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, "
     "(bool)0, (bool)1, (bool)1, (bool)0, (int)7, (bool)0, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const "
     "__nv_bfloat16>, cublasGemvTensorStridedBatched<const __nv_bfloat16>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>>(T13)",
     "enable_if<!T7, void>::type kernel<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, 0, 1, 1, 0, 7, 0, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const __nv_bfloat16>, cublasGemvTensorStridedBatched<const "
     "__nv_bfloat16>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>>(T13)"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>(T1::Params)",
     "void Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>(Params)"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
     "cutlass::arch::Sm80, (bool)1, (int)64, (int)64, (int)64, (bool)1, (bool)1>::Params)",
     "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(AttentionKernel<bfloat16_t, Sm80, 1, 64, 64, 64, 1, 1>::Params)"),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::launch_clamp_scalar(at::TensorIteratorBase &, "
     "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::[lambda() (instance 1)]::operator ()() const::[lambda() "
     "(instance 7)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)",
     "void vectorized_elementwise_kernel<4, unnamed>::launch_clamp_scalar(TensorIteratorBase &, c10::Scalar, c10::Scalar, "
     "detail::ClampLimits)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::"
     "[lambda(float) (instance 1)], array<char *, 2>>(int, T2, T3)"),
])
def test_normalized_names_agree(nsys, ncu_name):
    assert ncu_facts.norm_name(nsys) == ncu_facts.norm_name(ncu_name)


def test_normalized_names_keep_template_values_apart():
    a = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>, std::array<char *, (unsigned long)2>>(int, T2, T3)"
    b = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, std::array<char *, (unsigned long)1>>(int, T2, T3)"
    assert ncu_facts.norm_name(a) != ncu_facts.norm_name(b)
    assert ncu_facts.base_name(a) == ncu_facts.base_name(b) == "vectorized_elementwise_kernel"
    assert ncu_facts.base_name("_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT0_") == "vectorized_elementwise_kernel"
    assert ncu_facts.base_name("_Z9vectorAddPKfS0_Pfi") == "vectorAdd"


@needs_shared
def test_join_picks_the_right_template_instance(tmp_path):
    """llm-perf-opt: ncu's short gemv name matches the nsys (int)7 instance (24.9 %), not the (int)6 one (10.7 %)."""
    shutil.copy(SAMPLES / "llm-perf-opt__nsys_allstage_summary_cuda_gpu_kern_sum.csv", tmp_path)
    shutil.copy(SAMPLES / "llm-perf-opt__ncu_kernel0001_details.csv", tmp_path)
    from nsys_expert import facts
    fs = facts.compute(load.load_paths([str(tmp_path)]))
    k = [k for k in fs.kernels if "ncu_name" in k]
    assert len(k) == 1 and k[0]["nsys_matched"] is True and k[0]["nsys_match"] == "normalized name"
    assert k[0]["name"].startswith("std::enable_if<!T7, void>::type internal::gemvx::kernel<")
    assert "(int)7" in k[0]["name"] and k[0]["time_share_pct"] == pytest.approx(24.9, abs=0.1)
    assert k[0]["count"] == 329035 and k[0]["dram_throughput_pct"] == pytest.approx(19.66)
    assert not [str(w) for w in fs.warnings if "not found in the nsys data" in str(w)]


@needs_shared
def test_unmatched_ncu_kernels_are_kept_and_named(tmp_path):
    shutil.copy(CASES / "memory_bound/memory_bound_cuda_gpu_kern_sum.csv", tmp_path)
    shutil.copy(CASES / "sync_bound/ncu/sync_bound_details.csv", tmp_path)   # another run's kernels
    from nsys_expert import facts
    fs = facts.compute(load.load_paths([str(tmp_path)]))
    ncu_kernels = [k for k in fs.kernels if "ncu_name" in k]
    assert len(ncu_kernels) == 3 and not any(k["nsys_matched"] for k in ncu_kernels)
    assert any(k["name"].startswith("void cutlass::Kernel2<cutlass_80_simt_sgemm") for k in ncu_kernels)
    warn = [str(w) for w in fs.warnings if "not found in the nsys data" in str(w)]
    assert len(warn) == 1 and warn[0].startswith("3 ncu kernel(s) not found in the nsys data: Kernel2")


# ------------------------------------------------------------------------------------ diagnoses
def kernel_findings(doc, rule=None, category=None):
    return [f for f in doc["findings"] if f["scope"].get("kernel")
            and (rule is None or f["rule"] == rule) and (category is None or f["category"] == category)]


@needs_shared
def test_memory_bound_with_ncu(tmp_path):
    """Done-when: a kernel-scope memory-bound finding citing DRAM throughput >= 80, ranked by GPU-time share."""
    doc = produced("memory_bound_ncu")[0]
    found = kernel_findings(doc, "kernel-memory-bound")
    assert len(found) == 1             # one finding for the three kernels (combine: kernels), the add kernel first
    others = [s for s in found[0]["supporting"] if s["rule"] == "kernel-memory-bound"]
    assert len(others) == 2 and all(s["estimated_gain_pct"] < found[0]["estimated_gain_pct"] for s in others)
    ev = {e["fact"]: e for e in found[0]["evidence"]}
    assert ev["dram_throughput_pct"]["value"] == pytest.approx(87.75) and ev["dram_throughput_pct"]["threshold"] == 70
    assert ev["dram_throughput_pct"]["source"] == "memory_bound_details.csv"
    assert ev["time_share_pct"]["value"] == pytest.approx(50.2, abs=0.1)   # the add kernel: 2 of 4 passes
    assert "CUDAFunctorOnSelf_add" in found[0]["scope"]["kernel"]
    assert others[0]["estimated_gain_pct"] == pytest.approx(12.4, abs=0.1)  # 50 % of kernel time before 25 %
    assert doc["findings"][0]["rule"] == "kernel-memory-bound"              # measured, it folds in the system finding
    assert "memory-bound" in [s["rule"] for s in found[0]["supporting"]]
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    check = subprocess.run([sys.executable, str(SHARED / "tools/check/findings.py"), str(report),
                            "has:memory-bound@kernel", "evidence:memory-bound:dram:80"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_without_ncu_the_kernel_rules_say_what_to_run(tmp_case):
    case = tmp_case("memory_bound_ncu")
    shutil.rmtree(case / "ncu")
    doc = pipeline.diagnose(pipeline.Request([str(case)]))
    assert not kernel_findings(doc)
    ne = {n["rule"]: n for n in doc["not_evaluated"]}
    assert KERNEL_RULES <= set(ne)
    assert [str(m) for m in ne["kernel-memory-bound"]["missing"]] == ["needs Nsight Compute data of the top kernels"]  # the command: next steps
    assert "dram_throughput_pct" in ne["kernel-memory-bound"]["facts"]
    step = next(s for s in doc["next_steps"] if s["need"] == "Nsight Compute metrics")
    assert "kernel-memory-bound" in step["rules"]
    assert step["commands"][0].startswith("ncu --set full --target-processes all "
                                          "--kernel-name 'regex:^vectorized_elementwise_kernel$' ")
    assert "--launch-skip 4 --launch-count 15" in step["commands"][0]   # 4 matching launches before the window; 5 x 3 kernels
    assert step["commands"][1].endswith("--csv --page details > ncu_kernel_details.csv")


def test_sync_bound_sgemm_leaves_tensor_cores_idle():
    doc = produced("sync_bound_ncu")[0]
    found = kernel_findings(doc, "tensor-cores-unused")
    assert len(found) == 1 and "cutlass_80_simt_sgemm" in found[0]["scope"]["kernel"]
    ev = {e["fact"]: e["value"] for e in found[0]["evidence"]}
    assert ev["tensor_pipe_active_pct"] == 0 and ev["time_share_pct"] > 90
    # the faster GEMM replayed on the iteration: the host's critical path leaves 9.3 % (docs/gains.md), medium
    assert found[0]["severity"] == "medium" and found[0]["estimated_gain_pct"] == 9.3
    assert "bank-conflicts" in [s["rule"] for s in found[0]["supporting"]]   # a library SIMT kernel: replaced, not patched
    assert doc["findings"][0]["category"] == "sync-bound"   # the system bottleneck still leads


def test_compute_bound_has_no_kernel_memory_bound():
    doc = produced("compute_bound_ncu")[0]
    assert not kernel_findings(doc, category="memory-bound")
    gemm = kernel_findings(doc, "kernel-compute-bound")
    assert len(gemm) == 1 and gemm[0]["scope"]["kernel"].startswith("nvjet_sm90")
    assert not kernel_findings(doc, "tensor-cores-unused")


@needs_shared
@pytest.mark.parametrize("path", sorted(str(p) for p in CASES.glob("*/ncu/*.csv"))
                         + sorted(str(p) for p in SAMPLES.glob("llm-perf-opt__ncu_*.csv"))
                         + [str(SAMPLES / "superbenchmark__cublaslt_ncu.log")])
def test_each_ncu_file_diagnoses_alone(path):
    doc = pipeline.diagnose(pipeline.Request([path]))
    assert any("without nsys kernel data" in str(w) for w in doc["warnings"])
    for f in kernel_findings(doc):        # a finding names a gain unless it says there is nothing to fix
        assert (f["estimated_gain_pct"] is not None) == (f["rule"] != "kernel-compute-bound"), f["rule"]


@needs_shared
def test_ncu_only_cli_exit_0(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run(NSX + ["diagnose", str(CASES / "memory_bound/ncu/memory_bound_details.csv"), "--format", "json",
                              "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    f = kernel_findings(doc, "kernel-memory-bound")
    assert len(f) == 1 and "unknown share of GPU time" in f[0]["message"]
    assert [s["rule"] for s in f[0]["supporting"]].count("kernel-memory-bound") == 2


def test_fixture_inputs_are_the_shared_files():
    for case in ("compute_bound", "memory_bound", "sync_bound"):
        assert sorted(p.name for p in (FIXTURES / f"{case}_ncu/input/ncu").iterdir()) == [f"{case}_details.csv", f"{case}_raw.csv"]
