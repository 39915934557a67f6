"""Name classes: which CUDA APIs block, launch or copy; which kernels are NCCL, GEMM or elementwise.

API names are matched after the ``_vNNNN`` suffix is removed (``base_name``), and both the runtime
(``cuda*``) and driver (``cu*``) spellings are listed (input-formats.md 1.6), and HIP's (``hip*``: ROCm
traces from torch.profiler name the same roles so; HTA's MI250 sample launches with ``hipLaunchKernel``
and ``hipExtModuleLaunchKernel``, copies with ``hipMemcpyWithStream``, which returns when the copy is done).
"""
from __future__ import annotations

import re

import polars as pl

from ..load.normalize import VERSION_SUFFIX

# Host blocks until the GPU (or a stream / event) has drained.
SYNC_APIS = {
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize",
}
# Copies and sets that block the host (the non-Async forms).
SYNC_MEM_APIS = {
    "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
    "cudaMemcpyPeer", "cudaMemset", "cudaMemset2D", "cudaMemset3D",
    "cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpy2D", "cuMemcpy3D", "cuMemcpyPeer",
    "cuMemsetD8", "cuMemsetD16", "cuMemsetD32",
    "hipMemcpy", "hipMemcpyWithStream", "hipMemcpy2D", "hipMemcpy3D", "hipMemcpyToSymbol", "hipMemcpyFromSymbol",
    "hipMemcpyPeer", "hipMemcpyHtoD", "hipMemcpyDtoH", "hipMemcpyDtoD", "hipMemset", "hipMemset2D", "hipMemset3D",
    "hipMemsetD8", "hipMemsetD16", "hipMemsetD32",
}
ASYNC_MEM_APIS = {
    "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpy3DAsync", "cudaMemcpyPeerAsync", "cudaMemsetAsync",
    "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync",
    "cuMemcpyAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemsetD8Async",
    "cuMemsetD16Async", "cuMemsetD32Async",
    "hipMemcpyAsync", "hipMemcpy2DAsync", "hipMemcpy3DAsync", "hipMemcpyPeerAsync", "hipMemsetAsync",
    "hipMemcpyToSymbolAsync", "hipMemcpyFromSymbolAsync", "hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync",
    "hipMemcpyDtoDAsync", "hipMemsetD8Async", "hipMemsetD16Async", "hipMemsetD32Async",
}
KERNEL_LAUNCH_APIS = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice",
    "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuLaunchGrid", "cuLaunchGridAsync",
    "cudaGraphLaunch", "cuGraphLaunch",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
    "hipHccModuleLaunchKernel", "hipLaunchCooperativeKernel", "hipExtLaunchMultiKernelMultiDevice", "hipGraphLaunch",
}
GRAPH_LAUNCH_APIS = {"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"}
# Loading kernel code into the context: with CUDA's lazy loading (the default since CUDA 12.2) the first
# use of each library's kernels loads them in the middle of the run, a one-time cost per module
MODULE_LOAD_APIS = {
    "cuLibraryLoadData", "cuLibraryLoadFromFile", "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary", "cudaLibraryLoadData", "cudaLibraryLoadFromFile",
    "hipModuleLoad", "hipModuleLoadData", "hipModuleLoadDataEx",
}
# Device and pinned-host allocator calls (cudaFree waits for the device; the caching allocators of
# PyTorch, JAX, ... keep them out of the steady state).
ALLOC_APIS = {
    "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocManaged", "cudaMallocPitch",
    "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "cudaMalloc3D",
    "cuMemAlloc", "cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocManaged", "cuMemAllocPitch",
    "cuMemAllocHost", "cuMemFreeHost", "cuMemHostAlloc",
    "hipMalloc", "hipFree", "hipMallocAsync", "hipFreeAsync", "hipMallocManaged", "hipMallocPitch",
    "hipHostMalloc", "hipHostFree", "hipExtMallocWithFlags", "hipMalloc3D",
}
# Pinned host memory: a DataLoader with pin_memory=True allocates its buffers (PyTorch's host caching
# allocator, on the pin-memory thread) until its cache is warm. Counted from summaries, they are not device
# allocator churn (issue 56, item 4: 66 cudaHostAlloc calls of such a run were "allocator churn (high)" with
# empty_cache advice); the trace sees where and when they run.
PINNED_HOST_ALLOC_APIS = {
    "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "cuMemAllocHost", "cuMemFreeHost", "cuMemHostAlloc",
    "hipHostMalloc", "hipHostFree",
}
DEVICE_ALLOC_APIS = ALLOC_APIS - PINNED_HOST_ALLOC_APIS


def _base(name: str) -> str:
    """Strip the ``_vNNNN`` version suffix and the driver's ``_v2`` suffix."""
    return re.sub(VERSION_SUFFIX, "", name)


def base_expr(col: str = "name") -> pl.Expr:
    return pl.col(col).str.replace(VERSION_SUFFIX, "")


def api_base(api: pl.DataFrame) -> pl.Expr:
    """The API name without its ``_vNNNN`` suffix: the trace's ``base_name`` column (computed once when
    loading) where it has one."""
    return pl.col("base_name") if "base_name" in api.columns else base_expr("name")


def is_in(col: str, names: set[str]) -> pl.Expr:
    return base_expr(col).is_in(sorted(names))


# Kernel classes (case-insensitive regexes over the demangled name).
NCCL_KERNEL = r"(?i)^(void\s+)?(nccl|ncclDevKernel|ncclKernel)|all_?reduce|all_?gather|reduce_?scatter|alltoall|sendrecv|cross_device_reduce"
MATMUL_KERNEL = (r"(?i)^Cijk_|gemm|gemv|nvjet|cutlass|xmma|cublas|matmul|wgmma|hmma|imma|s16816|s1688|h1688|s884|h884|"
                 r"flash|fmha|attention|attn|conv|cudnn|dgrad|wgrad|implicit_gemm|ampere_|hopper_|sm90_xmma|sm80_xmma")
ELEMENTWISE_KERNEL = (r"(?i)elementwise|vectorized|unrolled|reduce_kernel|reduction|reduce|fill|copy|cat_|catarray|"
                      r"index|scatter|gather|softmax|norm|dropout|triton_poi|triton_red|triton_per|adam|sgd|"
                      r"multi_tensor_apply|transpose|permute|cast|where|clamp|relu|gelu|silu|mul|add|sum|mean")
# SIMT GEMMs: named so, or built on the FP32 / FP64 FMA pipes (cuBLAS's xmma kernels without TF32:
# sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...), which xmma alone does not rule out
# layout conversions around convolutions (cuDNN converts NCHW tensors for its NHWC tensor-core kernels and
# back): nchwToNhwcKernel, nhwcToNchwKernel, cudnn::...::nchw2nhwc..., the generic layout-transform kernels
LAYOUT_KERNEL = r"(?i)nchw_?to_?nhwc|nhwc_?to_?nchw|nchw2nhwc|nhwc2nchw|nchw_?to_?nchwc|layout_?transform|convert_?layout|transpose_?nchw|transpose_?nhwc"
# a softmax kernel of an attention written by hand (PyTorch's softmax_warp_* / cunn_SoftMax*), not the
# log-softmax of a loss; fused attention kernels (flash, memory-efficient, cuDNN's SDPA) hold their own softmax
SOFTMAX_KERNEL = r"(?i)softmax"
LOG_SOFTMAX_KERNEL = r"(?i)log_?softmax"
FUSED_ATTENTION_KERNEL = r"(?i)flash|fmha|sdpa|efficient_attention|attention_kernel|mha_"
# convolution kernels (cuDNN's and PyTorch's own), by name: a conv net
CONV_KERNEL = r"(?i)conv(olution|olve|_|[123]d)|dgrad|wgrad|fprop|implicit_gemm|implicit_convolve|winograd|nhwckrsc|nchwkrsc|depthwise"
# kernels of the NCHW layout that have a channels_last counterpart: PyTorch's NCHW batch norm, depthwise
# convolution (conv_depthwise2d: cuDNN takes the channels_last ones), pooling and upsampling, cuDNN's
# *nchw* helpers; a name that says channels_last / nhwc (NHWC_KERNEL) is the other layout's
NCHW_KERNEL = (r"(?i)batch_norm_\w*kernel|conv_depthwise[23]d|nchw|max_pool|avg_pool|adaptive_average_pool|"
               r"adaptive_max_pool|upsample_\w+_out_frame|implicit_convolve_sgemm")
NHWC_KERNEL = r"(?i)channels_?last|nhwc"
SIMT_GEMM = r"(?i)simt|sgemm|dgemm|_ffma|_dfma"
# a tensor-core GEMM that reads its operands one or two elements at a time (CUTLASS's and cuBLAS's
# ``..._align1`` / ``..._align2`` kernels): a row length (K, N, a leading dimension) that is not a multiple
# of 8 bf16 / fp16 elements (16 bytes), so the library falls back from its aligned (TMA / wgmma on sm90)
# kernels; fp64 kernels (align1 is 8 bytes there) and convolutions (3 input channels are normal) apart
MISALIGNED_GEMM = r"(?i)_align[abc]?[12]([^0-9]|$)"
MISALIGNED_GEMM_EXCLUDE = r"(?i)d884|dmma|dgemm|_f64|fp64|_dfma"
# elementwise kernels a compiler already fused (torch.compile's Triton kernels, nvFuser): a chain in one pass
FUSED_KERNEL = r"(?i)^triton_(poi|red|per)_|nvfuser|^kernel_cuda_fused|CudaCodeGen"
# Inductor's generated kernels: pointwise, reduction and persistent-reduction kernels are elementwise work
# whatever aten ops their names list (``triton_poi_fused_..._convolution_backward_...`` is the elementwise
# part around a convolution, never the convolution; ``..._max_pool2d_with_indices_...`` no NCHW pooling
# kernel); its template kernels (``triton_tem_fused_mm_...``, convolutions, flex attention) are GEMMs
TRITON_ELEMENTWISE = r"(?i)^triton_(poi|red|per)_"
TRITON_TEMPLATE = r"(?i)^triton_tem_"


def _copy_kernel_regex() -> str:
    """The copy-kernel name table (copy_kernels.yaml, beside this module) as one regex."""
    import pathlib

    import yaml

    table = yaml.safe_load((pathlib.Path(__file__).with_name("copy_kernels.yaml")).read_text(encoding="utf-8"))
    return "(?i)" + "|".join(f"(?:{p['re']})" for p in table["patterns"])


# kernels that only copy on the device (.contiguous(), .clone(), torch.cat): copies, not computation
COPY_KERNEL = _copy_kernel_regex()
TENSOR_CORE_HINT = r"(?i)tf32|1688|16816|884|tensorop|wgmma|gmma|hmma|imma|dmma|nvjet|bf16|f16|fp16|fp8|e4m3|e5m2"

# NVTX ranges that mark host-side input work (design.md: data / load / batch / dataloader / input)
DATA_RANGE = r"(?i)(^|[^a-z])(data|dataload|dataloader|load|loading|batch|input|inputs|prefetch|fetch|collate|read|preprocess)([^a-z]|$)|dataloader|data_?load"
# a range named for data that is communication: TorchRec's sparse_data_dist (the input features' all-to-all
# between ranks), c10d collectives; the idle time in it is the network's, not the input pipeline's
COMM_RANGE = r"(?i)(^|[^a-z])(dist|all_?to_?all|all_?reduce|all_?gather|reduce_?scatter|nccl|broadcast)([^a-z]|$)"


def data_range_expr(col: str = "name") -> pl.Expr:
    """An NVTX (or torch.profiler) range of the input pipeline: named for data, not for communication."""
    n = pl.col(col)
    return n.str.contains(DATA_RANGE) & ~n.str.contains(COMM_RANGE)


LIBRARY_DOMAINS = ("NCCL:", "cuBLAS:", "cuDNN:", "cuBLASLt:", "CUDA:", "nvtx:", "NVTX:", "CCCL:", "cub::", "thrust::",
                   "DALI:", "cuFFT:", "cuSPARSE:", "cuSOLVER:", "NVSHMEM:")


def kernel_class_expr(col: str = "name") -> pl.Expr:
    """nccl / matmul / elementwise / other."""
    n = pl.col(col).cast(pl.String)
    return (pl.when(n.str.contains(TRITON_ELEMENTWISE)).then(pl.lit("elementwise"))
            .when(n.str.contains(TRITON_TEMPLATE)).then(pl.lit("matmul"))
            .when(n.str.contains(NCCL_KERNEL)).then(pl.lit("nccl"))
            .when(n.str.contains(MATMUL_KERNEL)).then(pl.lit("matmul"))
            .when(n.str.contains(ELEMENTWISE_KERNEL)).then(pl.lit("elementwise"))
            .otherwise(pl.lit("other")))


def fused_kernel_expr(col: str = "name") -> pl.Expr:
    return pl.col(col).cast(pl.String).str.contains(FUSED_KERNEL)


def simt_gemm_expr(col: str = "name") -> pl.Expr:
    n = pl.col(col).cast(pl.String)
    return n.str.contains(r"(?i)gemm") & n.str.contains(SIMT_GEMM) & ~n.str.contains(TENSOR_CORE_HINT)


def misaligned_gemm_expr(col: str = "name") -> pl.Expr:
    """A tensor-core GEMM kernel built for operands aligned to one or two elements (``MISALIGNED_GEMM``)."""
    n = pl.col(col).cast(pl.String)
    return (n.str.contains(r"(?i)gemm|cutlass|xmma|nvjet") & n.str.contains(MISALIGNED_GEMM)
            & n.str.contains(TENSOR_CORE_HINT) & ~n.str.contains(MISALIGNED_GEMM_EXCLUDE) & ~n.str.contains(CONV_KERNEL))


def short_kernel_name(name: str, width: int = 90) -> str:
    """A readable kernel name: return type, parameter list and namespaces of template arguments
    dropped, templates nested deeper than one level folded, so that
    ``void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>, ...>(int, T2, T3)``
    reads ``at::native::vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<…>, array<…>>``."""
    s = name.strip().replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    if s.startswith("void "):
        s = s[5:]
    # the parameter list: the last top-level "(...)" (template arguments may hold parentheses too)
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    s = s[:cut]
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<")
            elif depth == 2:
                out.append("<…>")
            continue
        if ch == ">":
            depth = max(0, depth - 1)
            if depth == 0:
                out.append(">")
            continue
        if depth <= 1:
            out.append(ch)
    s = "".join(out)
    head, sep, args = s.partition("<")
    if sep:
        args = re.sub(r"\(\w+\)(?=-?\d)", "", args)                    # (int)4 -> 4
        args = re.sub(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_<])", "", args)  # namespaces inside arguments
        args = re.sub(r"\s+", " ", args)
        s = head + "<" + args
    return s if len(s) <= width else s[: width - 1] + "…"


def matching(df: pl.DataFrame, regex: str, col: str = "name") -> pl.DataFrame:
    """The rows of ``df`` whose ``col`` matches ``regex``: each distinct name tested once, then the rows
    picked by their values (a regex over a million kernel names, one by one, costs a large part of a second)."""
    names = df.select(pl.col(col).unique())
    hits = names.filter(pl.col(col).cast(pl.String).str.contains(regex))
    # the rows kept by their names' values (``is_in`` over categorical codes: ~1 ms a million rows, where a
    # semi-join hashed every row: ~50 ms)
    return df.filter(pl.col(col).is_in(hits[col].cast(pl.String).to_list())) if hits.height else df.clear()
