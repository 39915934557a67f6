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
