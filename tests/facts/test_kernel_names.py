"""Kernel classes by name, on names taken from real profiles (fixtures/pair_fp32_gemm*, h100_2gpu)."""
import polars as pl
import pytest

from nsys_expert.facts.names import simt_gemm_expr

SIMT = ["sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(T1::Params)"]
TENSOR = ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
          "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
          "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4"]


@pytest.mark.parametrize("name,simt", [(n, True) for n in SIMT] + [(n, False) for n in TENSOR])
def test_simt_gemm_by_name(name, simt):
    # cuBLAS's xmma kernels on the FP32 FMA pipe (_ffma_) are SIMT: xmma alone is no tensor-core marker
    assert pl.DataFrame({"name": [name]}).select(simt_gemm_expr())["name"][0] is simt


# GEMMs built for misaligned operands (issue 54): names from fixtures/pair_vocab_align_sqlite (an LM head of
# 50,257 outputs), kineto_hta_torchrec_16rank and console_gcn_paddle_2021; the aligned ones from
# pair_vocab_align_fixed_sqlite and the fixtures above
MISALIGNED = ["void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(T1::Params)",
              "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1>(T1::Params)",
              "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1::Params)",
              "cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_32x10_nn_align2"]
ALIGNED = ["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT", "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4",
           "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x10_nn_align8",
           "void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(T1::Params)",   # SIMT: align1 is its own
           "cutlass_80_tensorop_d884gemm_64x64_16x3_nn_align1",                               # fp64: 8 bytes
           "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"]


@pytest.mark.parametrize("name,bad", [(n, True) for n in MISALIGNED] + [(n, False) for n in ALIGNED])
def test_misaligned_gemm_by_name(name, bad):
    from nsys_expert.facts.names import misaligned_gemm_expr
    assert pl.DataFrame({"name": [name]}).select(misaligned_gemm_expr())["name"][0] is bad


@pytest.mark.parametrize("name,fill", [
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, std::array<char *, (unsigned long)1>>(int, T2, T3)", True),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1> >(int, T2, T3)", True),
    # Triton's autotuner clears the L2 with an int buffer (fixtures/recompile_shapes): no gradient
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<int>, std::array<char *, (unsigned long)1>>(int, T2, T3)", False),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, std::array<char *, (unsigned long)3>>(int, T2, T3)", False)])
def test_zero_fill_kernel_by_name(name, fill):
    from nsys_expert.facts.phase_work import INT_FILL_KERNEL, ZERO_FILL_KERNEL
    n = pl.col("name")
    got = pl.DataFrame({"name": [name]}).select(n.str.contains(ZERO_FILL_KERNEL) & ~n.str.contains(INT_FILL_KERNEL))["name"][0]
    assert got is fill
