"""Every fact nsys-expert computes: name, unit, scope, meaning and the inputs it needs.

Rule validation uses this table (unknown fact names are errors, with the closest name suggested),
the report uses the units, and "not evaluated" uses ``needs`` to say what to export.
Names follow ``subject_measure_unit``; ``_pct`` is 0-100 and, unless said otherwise, a share of the
analysis window's wall time.

A fact group can declare its facts beside its code instead (a module-level ``FACTS`` list of
``declare.fact`` entries, as ``phase_work.py`` does): list the module in ``DECLARING_GROUPS`` and splice
its list into the table where its facts belong (``_declared``); ``tests/test_fact_declarations.py``
fails on a fact a group puts that no one declared.

Past ~400 lines on purpose: the table of every fact, one line each (data), and the few functions that read it.
"""
from __future__ import annotations

from ..notes import Note
from . import phase_work
from .declare import Fact, fact

# the fact group modules that declare their facts beside their code (a module-level FACTS list);
# each one's list is spliced into the table below where its facts belong
DECLARING_GROUPS = (phase_work,)

# input ids -> how a user gets them
INPUTS = {i: str(Note("input." + i)) for i in (
    "gpu_trace", "api_trace", "nvtx_trace", "kern_sum", "api_sum", "mem_time_sum", "mem_size_sum", "nvtx_sum",
    "nvtx_pushpop_sum", "osrt_sum", "osrt_trace", "kern_exec_sum", "nvtx_gpu_proj_sum", "gpu_sum", "ranks",
    "gpu_metrics", "cpu_trace", "ncu")}   # each input's words: notes/codes.py ("input.<id>")

# inputs a profile has only when the user opted in at collection time (a costly option): a rule that
# requires one of them is left out of "not evaluated" when it is missing (engine.evaluate)
OPT_IN_INPUTS = {"gpu_metrics"}
# inputs only NVIDIA's tools record (Nsight Compute, nsys's GPU metrics and OS runtime trace): on an AMD
# run (gpu_vendor amd, a ROCm torch.profiler trace) a rule that lacks only these cannot be helped by
# collecting more, so it is left out of "not evaluated" and no command asks for them
NVIDIA_ONLY_INPUTS = {"ncu", "gpu_metrics", "osrt_trace", "osrt_sum"}

# what a user exports for each input: the nsys stats report name (others: how it is collected)
_OTHER_NAMES = {"osrt_trace": "SQLite export with --trace=osrt", "ranks": "several ranks",
                "ncu": "ncu --csv --page details", "gpu_metrics": "SQLite export with --gpu-metrics-devices=all"}


def user_name(input_id: str, lang: str = "en") -> str:
    """The name a user knows an input by: ``gpu_trace`` -> ``cuda_gpu_trace`` (the nsys stats report)."""
    import re

    m = re.search(r"nsys stats -r (\w+)", INPUTS.get(input_id, ""))
    if m:
        return m.group(1)
    other = _OTHER_NAMES.get(input_id)
    return text_in(lang, "input:" + input_id, other) if other else input_id


_f = fact   # the central table's short name for a declaration (declare.fact)


def _declared(module, scope: str = "run") -> list[Fact]:
    """The facts of ``scope`` a group module declares beside its code (its ``FACTS`` list), checked:
    each a :class:`Fact` needing known inputs, named once."""
    facts = list(module.FACTS)
    for f in facts:
        if not isinstance(f, Fact) or not f.needs or set(f.needs) - set(INPUTS):
            raise ValueError(f"{module.__name__}.FACTS: bad declaration {f!r} (declare.fact with inputs from INPUTS)")
    names = [f.name for f in facts]
    if len(set(names)) != len(names):
        raise ValueError(f"{module.__name__}.FACTS declares a name twice")
    return [f for f in facts if f.scope == scope]


_RUN = [
    _f("window_ms", "ms", "length of the analysis window", ("gpu_trace", "nvtx_trace", "api_trace")),
    _f("startup_s", "s", "time from the first recorded event to the start of the window (start-up, warm-up)",
       ("gpu_trace", "nvtx_trace", "api_trace")),
    _f("gpu_count", "", "GPUs seen in the trace"),
    _f("gpu_vendor", "", "the GPUs' maker as a torch.profiler trace says it: nvidia (CUDA runtime calls) or amd (ROCm: hip* calls); absent for nsys inputs, which are NVIDIA's", ("gpu_trace", "api_trace")),
    _f("gpu_compute_capability", "", "the lowest CUDA compute capability of the run's GPUs (7.0 V100, 8.0 A100, 9.0 H100 / H200), from the SQLite export, a torch.profiler trace or Nsight Compute; absent when the inputs do not say it (CSV, console text)", ("gpu_trace", "ncu")),
    _f("gpu_active_pct", "%", "union of kernel, memcpy and memset intervals per device, as a share of the window (mean over devices)"),
    _f("gpu_idle_pct", "%", "100 - gpu_active_pct"),
    _f("kernel_active_pct", "%", "union of kernel intervals as a share of the window"),
    _f("memcpy_active_pct", "%", "union of memcpy intervals as a share of the window"),
    _f("gpu_idle_gap_count", "", "idle gaps of 10 us or more inside the window"),
    _f("gpu_longest_gap_ms", "ms", "the longest idle gap inside the window"),
    _f("gpu_idle_short_gaps_pct", "%", "idle time in gaps shorter than 100 us, as a share of the window"),
    _f("gpu_idle_long_gaps_pct", "%", "idle time in gaps of 1 ms or more, as a share of the window"),
    _f("gpu_idle_launch_pct", "%", "idle time while the host was submitting work (short gaps, launch overhead)", ("api_trace",)),
    _f("gpu_idle_sync_pct", "%", "idle time after a blocking synchronisation call drained the GPU queue", ("api_trace",)),
    _f("gpu_idle_sync_host_after_pct", "%", "of the idle time after syncs, the part after the sync call had returned, before the host queued more work, as a share of the window", ("api_trace",)),
    _f("gpu_idle_memcpy_pct", "%", "idle time while the host was inside a blocking or pageable copy call", ("api_trace",)),
    _f("gpu_idle_data_pct", "%", "idle time inside NVTX ranges named like input work (data, load, batch, ...)", ("api_trace",)),
    _f("gpu_idle_alloc_pct", "%", "idle time while the host was inside an allocator call (cudaMalloc / cudaFree: cudaFree waits for the device)", ("api_trace",)),
    _f("gpu_idle_wait_pct", "%", "idle time while the launching thread was blocked in an OS call (poll, futex, pthread_cond_wait, recv, read, ...: waiting for data)", ("osrt_trace",)),
    _f("osrt_wait_top_call", "", "the blocking OS call the launching thread spent most GPU idle time in", ("osrt_trace",)),
    _f("osrt_wait_top_calls", "", "calls of it in the window", ("osrt_trace",)),
    _f("osrt_wait_top_share_of_idle_pct", "%", "share of the GPU idle time spent in it by the launching thread", ("osrt_trace",)),
    _f("gpu_idle_sleep_pct", "%", "idle time while the launching threads were blocked and the host slept (clock_nanosleep, nanosleep: time.sleep)", ("osrt_trace",)),
    _f("osrt_sleep_top_call", "", "the sleep call the launching thread spent most GPU idle time in", ("osrt_trace",)),
    _f("osrt_sleep_calls", "", "sleep calls of the launching thread in the window", ("osrt_trace",)),
    _f("osrt_sleep_median_ms", "ms", "median length of those sleep calls", ("osrt_trace",)),
    _f("osrt_sleep_share_of_idle_pct", "%", "share of the GPU idle time the launching thread spent asleep", ("osrt_trace",)),
    _f("memcpy_top_fifth_iters_share_pct", "%", "share of the window's host-device copy time launched in the fifth of the iterations that copy most (near 100: bursts, such as a periodic checkpoint; near 20: every step)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("gpu_idle_gil_pct", "%", "idle time while the launching threads were blocked and one waited for Python's GIL (pthread_cond_timedwait calls of the 5 ms switch interval)", ("osrt_trace",)),
    _f("osrt_gil_calls", "", "pthread_cond_timedwait calls of the launching thread in the window, when they are GIL waits", ("osrt_trace",)),
    _f("osrt_gil_switch_share_pct", "%", "share of the launching thread's pthread_cond_timedwait time in calls of the GIL switch interval (4.5-5.6 ms)", ("osrt_trace",)),
    _f("gpu_idle_host_elim_pct", "%", "without an API trace, host time by elimination: idle share of the window in gaps of 100 us or more minus every CUDA API call of the profile (api_sum, all threads) as a share of it; a lower bound of the idle time the host spent outside CUDA (with the cuda_api_sum report)", ("gpu_trace",)),
    _f("cuda_api_total_ms", "ms", "time in CUDA API calls over the whole profile, all threads (cuda_api_sum)", ("api_sum",)),
    _f("gpu_idle_load_pct", "%", "idle time while the host loaded kernel code (cuLibraryLoadData, cuModuleLoad: CUDA lazy loading on first use)", ("api_trace",)),
    _f("module_loads_steady", "", "kernel-code loads (cuModuleLoad*, cuLibraryLoad*) inside the steady iterations, after the warm-up ones", ("api_trace",)),
    _f("module_loads_per_iter", "", "kernel-code loads per steady iteration", ("api_trace",)),
    _f("module_load_iters_pct", "%", "share of the steady iterations that load kernel code (recurring loads: a JIT compiler at work)", ("api_trace",)),
    _f("module_load_ms_per_iter", "ms", "time in kernel-code load calls per steady iteration", ("api_trace",)),
    _f("gpu_idle_host_pct", "%", "idle time while the host was busy outside CUDA (Python, host work)", ("api_trace",)),
    _f("gpu_idle_other_pct", "%", "idle time although the next operation was already submitted (dependencies)", ("api_trace",)),
    _f("stream_overlap_count", "", "GPU operations in the window that start before the previous one on their stream ended (programmatic dependent launch; not damage)"),
    _f("stream_overlap_share_pct", "%", "stream_overlap_count as a share of the GPU operations in the window"),
    _f("stream_overlap_median_us", "us", "median time an overlapping operation starts before its predecessor on the stream ended"),
    _f("stream_overlap_max_us", "us", "the largest same-stream overlap in the window"),
    _f("stream_overlap_top_kernel", "", "the kernel that most often starts before its predecessor ended (name cut to 160 characters)"),
    _f("kernel_count", "", "kernels in the window (whole profile when there is no trace)", ("gpu_trace", "kern_sum")),
    _f("kernel_median_us", "us", "median kernel duration", ("gpu_trace", "kern_sum")),
    _f("kernel_small_share_pct", "%", "share of kernels shorter than 10 us (by count)", ("gpu_trace", "kern_sum")),
    _f("kernels_per_iter", "", "kernels launched per iteration", ("gpu_trace",)),
    _f("matmul_share_of_kernel_pct", "%", "share of kernel time in GEMM / attention / convolution kernels (by name)", ("gpu_trace", "kern_sum")),
    _f("elementwise_fused_share_of_kernel_pct", "%", "share of kernel time in elementwise kernels a compiler already fused (triton_*_fused_*, nvFuser): fusing gives them nothing more", ("gpu_trace", "kern_sum")),
    _f("elementwise_share_of_kernel_pct", "%", "share of kernel time in elementwise / reduction / normalisation / optimizer kernels (by name)", ("gpu_trace", "kern_sum")),
    _f("layout_convert_share_of_kernel_pct", "%", "share of kernel time in layout-conversion kernels (cuDNN's nchwToNhwc / nhwcToNchw and kin, by name): NCHW tensors converted around NHWC tensor-core convolutions", ("gpu_trace", "kern_sum")),
    _f("simt_gemm_share_of_kernel_pct", "%", "share of kernel time in fp32/fp64 GEMMs on SIMT cores (no tensor cores, by name)", ("gpu_trace", "kern_sum")),
    _f("launch_api_share_pct", "%", "host time inside kernel-launch calls (all threads, union) as a share of the window", ("api_trace", "api_sum")),
    _f("launch_to_kernel_time_ratio", "x", "host time in kernel-launch calls / GPU time in kernels (above 1: the host cannot launch as fast as the GPU runs them)", ("api_trace", "api_sum")),
    _f("sync_api_share_pct", "%", "host time inside blocking sync calls (cuda*/cu*Synchronize, sync memcpy / memset) as a share of the window", ("api_trace", "api_sum")),
    _f("sync_calls_per_iter", "", "blocking sync calls per iteration", ("api_trace",)),
    _f("sync_after_pageable_copy_pct", "%", "share of the window's sync calls made right after a copy call (same thread) whose copy went from pageable host memory to the GPU: PyTorch syncs after each .to('cuda') of an unpinned CPU tensor", ("api_trace", "gpu_trace")),
    _f("sync_gpu_busy_pct", "%", "share of host sync-wait time during which the GPU was busy (waits that cost nothing)", ("api_trace",)),
    _f("graph_launch_count", "", "CUDA graph launches in the window", ("api_trace", "api_sum")),
    _f("memcpy_share_of_busy_pct", "%", "memcpy time as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    _f("memcpy_host_share_of_busy_pct", "%", "host-device copy time (HtoD, DtoH) as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    _f("memcpy_dtod_share_of_busy_pct", "%", "device-to-device / peer copy time as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    _f("copy_kernel_share_of_busy_pct", "%", "copy kernels (direct_copy_kernel, CatArrayBatchedCopy, ...: the name table in facts/copy_kernels.yaml) as a share of GPU busy time", ("gpu_trace", "gpu_sum")),
    _f("copy_kernel_share_of_kernel_pct", "%", "copy kernels as a share of kernel time", ("gpu_trace", "kern_sum")),
    _f("device_copy_share_of_busy_pct", "%", "copies on the device, copy kernels and device-to-device / peer memcpy together, as a share of GPU busy time", ("gpu_trace", "gpu_sum")),
    _f("memcpy_h2d_gbps", "GB/s", "host-to-device copy bandwidth (bytes / copy time)", ("gpu_trace", "mem_time_sum")),
    _f("memcpy_d2h_gbps", "GB/s", "device-to-host copy bandwidth (bytes / copy time)", ("gpu_trace", "mem_time_sum")),
    _f("memcpy_h2d_mb", "MB", "host-to-device bytes copied (10^6 bytes)", ("gpu_trace", "mem_size_sum")),
    _f("memcpy_d2h_mb", "MB", "device-to-host bytes copied (10^6 bytes)", ("gpu_trace", "mem_size_sum")),
    _f("memcpy_exposed_pct", "%", "host-device copy time not overlapped by kernels on the same device, as a share of the window"),
    _f("memcpy_hidden_pct", "%", "share of the host-device copy time overlapped by kernels on the same device (hidden behind compute)"),
    _f("memcpy_pageable_share_pct", "%", "share of host-device copy time that uses pageable (not pinned) host memory", ("gpu_trace",)),
    _f("nccl_kernel_count", "", "NCCL / collective kernels in the window", ("gpu_trace", "kern_sum")),
    _f("nccl_share_of_busy_pct", "%", "NCCL kernel time as a share of GPU busy time", ("gpu_trace", "kern_sum")),
    _f("nccl_overlap_pct", "%", "share of NCCL kernel time overlapped by compute kernels on other streams", ("gpu_trace",)),
    _f("nccl_exposed_pct", "%", "NCCL kernel time not overlapped by compute, as a share of the window", ("gpu_trace",)),
    _f("compute_active_pct", "%", "union of non-NCCL kernel intervals as a share of the window (compute, without communication)"),
    _f("nccl_api_calls", "", "NCCL calls seen as NVTX ranges (NCCL domain)", ("nvtx_trace", "nvtx_sum")),
    _f("iter_count", "", "iterations in the window", ("nvtx_trace",)),
    _f("iter_median_ms", "ms", "median iteration time (start to next start)", ("nvtx_trace",)),
    _f("replay_iterations", "", "iterations replayed on the dependency model (a contiguous run of up to 20 in the middle of the window)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_model_error_pct", "%", "the replayed iterations' time against the measured one (completion to completion), signed: within 25 % or no replay gain is given", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("critical_path_host_pct", "%", "share of the replayed iterations' critical path that is the launching thread's own time (work between CUDA calls, the calls themselves)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("critical_path_gpu_pct", "%", "share of the replayed iterations' critical path that is GPU operations (and the gaps between queued ones)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("critical_path_iter_ms", "ms", "iteration time as replayed on the dependency model (completion to completion)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_remove_syncs_pct", "%", "replayed gain of removing the host syncs (synchronize calls, read-back copies): 1 - replayed / current iteration time", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_pinned_copies_pct", "%", "replayed gain of pinned host buffers and non_blocking copies (pageable copies at the pinned bandwidth)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_copy_overlap_pct", "%", "replayed gain of host-device copies on a side stream, double-buffered", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("memcpy_pinned_saving_pct", "%", "share of the host-device copy time that copies at the GPU's pinned bandwidth (facts/replay.yaml) would save: per direction, time minus bytes / bandwidth (with the cuda_gpu_mem_size_sum report)", ("mem_time_sum", "mem_size_sum")),
    _f("replay_gain_copies_pct", "%", "replayed gain of the copy advice: pinned + non_blocking copies or a side stream, whichever gains more", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_cuda_graphs_pct", "%", "replayed gain of capturing each run of kernel launches in a CUDA graph", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_comm_overlap_pct", "%", "replayed gain of running the NCCL / RCCL collectives on their own stream, overlapped with compute", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_host_offload_pct", "%", "replayed gain of moving the host work segments of 100 us or more to 4 DataLoader workers", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_data_workers_pct", "%", "replayed gain of moving the host work inside NVTX data ranges (without data ranges: all host work segments of 100 us or more) to 4 DataLoader workers", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_fusion_pct", "%", "replayed gain of fusing the unfused elementwise kernels (their time cut by 0.7)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_tensor_cores_pct", "%", "replayed gain of running the SIMT GEMMs on tensor cores (their time cut by 0.85)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("replay_gain_all_pct", "%", "the largest replayed gain of the transformations applied together (never a sum)", ("gpu_trace", "api_trace", "nvtx_trace")),
    _f("iter_max_over_median", "x", "slowest iteration in the window / median", ("nvtx_trace",)),
    _f("first_iter_over_median", "x", "first (warm-up) iteration / median iteration", ("nvtx_trace",)),
    _f("nvtx_top_range_share_pct", "%", "share of the window covered by the most time-consuming NVTX range name", ("nvtx_trace", "nvtx_sum")),
    _f("data_range_share_pct", "%", "share of the window inside NVTX ranges named like input work", ("nvtx_trace", "nvtx_sum")),
    _f("osrt_wait_share_pct", "%", "OS runtime blocking time (poll, waits, sleeps) over the whole profile as a share of the profile span, summed over threads", ("osrt_sum",)),
    _f("osrt_sleep_ms", "ms", "OS runtime time in sleep calls (clock_nanosleep, nanosleep, usleep, sleep), all threads added up", ("osrt_sum",)),
    _f("osrt_blocking_ms", "ms", "OS runtime time in blocking calls (poll, futex, pthread_cond_wait, sem_wait, recv, read, ...), all threads added up", ("osrt_sum",)),
    _f("osrt_io_ms", "ms", "OS runtime time in file I/O calls (read, pread, fread, open, ...) over the whole profile", ("osrt_sum",)),
]
# per phase and between the steps: declared beside their code (facts/phase_work.py FACTS)
_RUN += _declared(phase_work)
# the summary tier (facts/estimates.py): per-iteration estimates from the summary reports, no trace
_NV = ("nvtx_sum", "nvtx_gpu_proj_sum")
_RUN += [
    _f("iter_est_count", "", "instances of the iteration range in the NVTX summary (whole profile)", _NV),
    _f("iter_est_median_ms", "ms", "time per iteration: the larger of the step range's median and its GPU projection's median", _NV),
    _f("gpu_work_per_iter_ms", "ms", "kernel + copy + memset time over the iterations (capped by the projection median): an upper bound", _NV),
    _f("gpu_work_to_iter_pct", "%", "GPU work of the whole profile per iteration / time per iteration, not capped: above 100 the summaries hold more GPU work than iteration time (work outside the iterations or on concurrent streams) and the busy share is a bound, not an estimate", _NV),
    _f("gpu_active_est_pct", "%", "GPU work per iteration / time per iteration, from the summaries (an upper bound)", _NV),
    _f("gpu_idle_est_pct", "%", "100 - gpu_active_est_pct: the GPU is idle at least this share of each iteration", _NV),
    _f("kernel_active_est_pct", "%", "kernel time per iteration / time per iteration, from the summaries", _NV),
    _f("memcpy_active_est_pct", "%", "copy time / iteration time, from the summaries", _NV),
    _f("kernels_per_iter_est", "", "kernels per iteration (whole-profile kernel count / iterations)", _NV),
    _f("sync_calls_per_iter_est", "", "blocking sync calls per iteration (whole profile / iterations)", _NV),
    _f("sync_wait_share_est_pct", "%", "host time in blocking sync calls / iteration time, from the summaries", _NV),
    _f("launch_api_share_est_pct", "%", "host time in kernel-launch calls / iteration time, from the summaries", _NV),
    _f("alloc_calls_per_iter_est", "", "cudaMalloc / cudaFree (and driver, pinned-host) calls per iteration, from the summaries", _NV),
    _f("data_range_share_est_pct", "%", "time in NVTX ranges named like input work / iteration time, from the summaries", _NV),
    _f("launches_per_sync", "", "kernel launch calls per blocking sync call (whole profile)", ("api_sum", "api_trace")),
    _f("sync_calls", "", "blocking sync calls (whole profile)", ("api_sum", "api_trace")),
    _f("alloc_calls", "", "allocator calls: cudaMalloc / cudaFree and their driver and pinned-host forms", ("api_sum", "api_trace")),
    _f("alloc_api_ms", "ms", "host time in allocator calls", ("api_sum", "api_trace")),
    _f("alloc_api_share_pct", "%", "host time inside allocator calls (cudaMalloc / cudaFree, driver and pinned-host forms; union) as a share of the window", ("api_trace",)),
    _f("alloc_calls_window", "", "allocator calls that begin inside the window", ("api_trace",)),
    _f("alloc_calls_per_iter", "", "allocator calls per iteration in the window", ("api_trace",)),
    _f("free_calls_per_iter", "", "cudaFree / cuMemFree calls per iteration (each waits for the device)", ("api_trace",)),
    _f("alloc_api_share_est_pct", "%", "host time in allocator calls / iteration time, from the summaries (start-up included)", _NV),
    _f("gpu_idle_attributed_pct", "%", "idle share of the window that the gap causes attribute (launch, sync, memcpy, data, host)", ("gpu_trace", "nvtx_sum")),
    _f("gpu_idle_unexplained_pct", "%", "idle share of the window no cause attributes (all of it without cuda_api_trace)", ("gpu_trace", "nvtx_sum")),
]
# torch.profiler CPU operators (facts/cpu_ops.py): what nsys does not record
_CPU = ("cpu_trace",)
_RUN += [
    _f("dataloader_share_pct", "%", "share of the window inside the DataLoader's __next__ (enumerate(DataLoader)#... ranges)", _CPU),
    _f("dataloader_ms_per_step", "ms", "time in the DataLoader's __next__ per step (per iteration; per optimizer step or batch without iterations)", _CPU),
    _f("dataloader_in_main_process", "", "1 when the batches are made in the main process (_SingleProcessDataLoaderIter: num_workers=0), 0 when they come from worker processes", _CPU),
    _f("optimizer_step_share_pct", "%", "share of the window inside Optimizer.step ranges (host time)", _CPU),
    _f("optimizer_step_ms", "ms", "host time in Optimizer.step per step", _CPU),
    _f("backward_host_ms_per_step", "ms", "host time in the autograd engine's backward operators (evaluate_function) per step", _CPU),
    _f("backward_kernel_share_pct", "%", "share of the window's kernel time launched from the backward pass (autograd evaluate_function operators)", _CPU),
    _f("forward_kernel_share_pct", "%", "share of the window's kernel time launched outside the backward pass, the optimizer step and the DataLoader (forward pass, loss, the rest)", _CPU),
    _f("optimizer_kernel_share_pct", "%", "share of the window's kernel time launched from Optimizer.step", _CPU),
    _f("backward_forward_ratio", "x", "kernel time launched from the backward pass / from the forward pass and the rest (about 2 in a plain training step)", _CPU),
    _f("sync_source_op", "", "the outermost PyTorch operator holding the blocking calls that left the GPU idle longest (aten::item, aten::nonzero, aten::to, ...; 'API (no operator)' for a call made outside any operator: torch.cuda.synchronize())", _CPU),
    _f("sync_source_inner_op", "", "the innermost operator holding those calls (aten::_local_scalar_dense, aten::copy_), when it is not the outermost", _CPU),
    _f("sync_source_api", "", "the blocking runtime call those operators make most (cudaStreamSynchronize, hipMemcpyWithStream, ...)", _CPU),
    _f("sync_source_share_pct", "%", "share of the GPU idle time after blocking calls that follows the calls of sync_source_op (of the host's wait in them when no call left the GPU idle)", _CPU),
    _f("sync_source_calls_per_iter", "", "blocking calls per iteration made inside sync_source_op", _CPU),
    _f("pageable_copy_op", "", "the outermost PyTorch operator issuing most of the copy time to or from pageable host memory (aten::to, aten::copy_, ...)", _CPU),
    _f("pageable_copy_op_calls", "", "copies to or from pageable memory in the window issued inside pageable_copy_op", _CPU),
    _f("pageable_copy_op_share_pct", "%", "share of the window's pageable copy time issued inside pageable_copy_op", _CPU),
]
_RUN += [
    _f("rank_count", "", "ranks (processes with GPU work) in this job", ("ranks",)),
    _f("rank_iter_skew", "x", "slowest rank's median iteration time / the median over ranks", ("ranks",)),
    _f("rank_compute_skew", "x", "most compute per iteration (non-NCCL kernel time) / the median over ranks", ("ranks",)),
    _f("rank_gpu_active_spread_pct", "%", "highest minus lowest GPU-active % over ranks (points)", ("ranks",)),
    _f("rank_nccl_share_spread_pct", "%", "highest minus lowest NCCL share of busy time over ranks (points)", ("ranks",)),
    _f("straggler_last_arrival_pct", "%", "share of the collectives the most often last-arriving rank arrived last at (shortest NCCL kernel: it waited least)", ("ranks",)),
    _f("straggler_rank", "", "the rank that arrives last most often (by compute skew when there are no collectives)", ("ranks",)),
    _f("nccl_last_arrival_pct", "%", "share of the collectives this rank arrived at last (its NCCL kernel was the shortest)", ("ranks",)),
    _f("compute_ms_per_iter", "ms", "non-NCCL kernel time per iteration (per window when there are no iterations)", ("ranks",)),
    # GPU metrics samples (facts/gpu_metrics.py): time-weighted means, % of the GPU's peak, mean over devices
    *(_f(n, "%", d, ("gpu_metrics",)) for n, d in [
        ("gm_sm_active_pct", "SMs active (SM Active / SMs Active metric) over the window"),
        ("gm_sm_issue_pct", "SM instruction issue throughput over the window"),
        ("gm_tensor_active_pct", "tensor pipe active over the window"),
        ("gm_dram_read_pct", "DRAM read bandwidth over the window, % of peak"),
        ("gm_dram_write_pct", "DRAM write bandwidth over the window, % of peak"),
        ("gm_dram_pct", "DRAM bandwidth (read + write) over the window, % of peak"),
        ("gm_pcie_rx_pct", "PCIe receive throughput over the window, % of peak"),
        ("gm_pcie_tx_pct", "PCIe transmit throughput over the window, % of peak"),
        ("gm_nvlink_rx_pct", "NVLink receive throughput over the window, % of peak"),
        ("gm_nvlink_tx_pct", "NVLink transmit throughput over the window, % of peak"),
        ("gm_gr_active_pct", "graphics / compute engine active (GR Active) over the window"),
    ]),
    _f("gm_sm_active_busy_pct", "%", "SMs active while a kernel runs (samples under the kernel union): low means kernels too small to fill the GPU", ("gpu_metrics",)),
    _f("gm_pcie_copy_pct", "%", "PCIe throughput in the copy's own direction while host-device copies run (RX under host-to-device, TX under device-to-host; the higher of the two), % of peak (0 when the window has no host-device copy)", ("gpu_metrics",)),
]
# CUDA API time by class (facts/api_shares.py): from cuda_api_trace over the window, else cuda_api_sum
_API = ("api_trace", "api_sum")
_RUN += [
    _f("api_time_memcpy_pct", "%", "host time in copy calls (cudaMemcpy*, cuMemcpy*, synchronous and Async; memsets left out) as a share of all CUDA API time", _API),
    _f("api_time_sync_pct", "%", "host time in synchronisation calls (cuda*/cu*Synchronize) as a share of all CUDA API time", _API),
    _f("api_time_launch_pct", "%", "host time in kernel and graph launch calls as a share of all CUDA API time", _API),
    _f("api_time_alloc_pct", "%", "host time in allocator calls (cudaMalloc / cudaFree, driver and pinned-host forms) as a share of all CUDA API time", _API),
    _f("api_time_load_pct", "%", "host time in kernel-code loading calls (cuLibraryLoadData, cuModuleLoad*) as a share of all CUDA API time", _API),
    _f("api_time_top_call", "", "the CUDA API call with the most host time", _API),
    _f("api_time_top_call_pct", "%", "its share of all CUDA API time", _API),
    _f("alloc_calls_per_launch", "", "allocator calls per kernel launch call (start-up allocations are a few tens; churn is one or more per few launches)", _API),
    _f("free_calls_per_alloc", "", "calls that free device or pinned memory (cudaFree, cuMemFree, ...) per call that allocates it (cuda_api_sum, whole profile): churn frees what it allocates (about 1); a caching or growing allocator keeps its first-use allocations (a few frees at the end)", ("api_sum",)),
    _f("memcpy_api_ms", "ms", "host time in copy calls, all threads added up", _API),
    _f("memcpy_api_share_pct", "%", "host time inside copy calls (all threads, union) as a share of the window (of the span from cuda_api_sum)", ("api_trace",)),
    _f("api_one_off_ms", "ms", "host time in one-off CUDA API calls (cuda_api_sum: one call that is most of its API's total, 1 ms or more, 100 times the typical call: the context created or code loaded in the first call, start-up), which the API time shares leave out", ("api_sum",)),
    _f("api_one_off_share_pct", "%", "those one-off calls' share of all CUDA API time", ("api_sum",)),
    _f("api_one_off_top_call", "", "the CUDA API whose one-off call is the longest", ("api_sum",)),
    _f("api_one_off_top_ms", "ms", "that call's time", ("api_sum",)),
    _f("gpu_work_ms", "ms", "all the GPU's work in the summaries: kernel + copy + memset time (cuda_gpu_kern_sum + cuda_gpu_mem_time_sum, else cuda_gpu_sum)", ("kern_sum", "gpu_sum")),
    _f("memcpy_api_over_gpu_work_ratio", "x", "host time in copy calls (cuda_api_sum) / all GPU work, kernels + copies + memsets (cuda_gpu_kern_sum + cuda_gpu_mem_time_sum): above 1 the copy calls cannot all be waits for GPU work, the host is blocked in copies while the GPU is idle", ("api_sum",)),
]
# NVTX phases (facts/phases.py): range names mapped to phases (facts/phases.yaml), nesting from the trace or inferred
_NVP = ("nvtx_trace", "nvtx_sum")
_RUN += [
    _f("data_phase_share_of_step_pct", "%", "time in data-loading NVTX ranges nested in a step range as a share of that step's time (nesting inferred from totals and counts without an NVTX trace; one instance each counts)", _NVP),
    _f("data_phase_name", "", "the data-loading range(s) of that step", _NVP),
    _f("data_phase_parent", "", "the step range that holds them", _NVP),
    _f("data_phase_count", "", "instances of the data-loading range(s)", _NVP),
    _f("data_phase_parent_count", "", "instances of the step range", _NVP),
    _f("gpu_idle_data_phase_est_pct", "%", "summaries: the share of the step's time in which the GPU must be idle while the host is in its data-loading ranges: (data time - all GPU work of the profile, cuda_gpu_kern_sum + cuda_gpu_mem_time_sum) / step time, a lower bound", _NVP),
    _f("gpu_idle_data_phase_pct", "%", "a GPU trace and nvtx_sum, no NVTX trace: idle share of the window that must lie inside data-loading ranges, a lower bound (data time in the window, at least its total minus the span outside the window, plus the idle time, minus the window)", ("nvtx_sum",)),
    _f("data_phase_total_ms", "ms", "total time of the largest data-loading range name (nvtx_sum, whole profile)", ("nvtx_sum",)),
]
RUN_FACTS: dict[str, Fact] = {f.name: f for f in _RUN}

_KERNEL = [
    _f("name", "", "kernel name as nsys prints it", ("gpu_trace", "kern_sum"), "kernel"),
    _f("kernel_class", "", "nccl / matmul / elementwise / other (from the name)", ("gpu_trace", "kern_sum"), "kernel"),
    _f("time_share_pct", "%", "share of kernel time in the window", ("gpu_trace", "kern_sum"), "kernel"),
    _f("total_ms", "ms", "total time in the window", ("gpu_trace", "kern_sum"), "kernel"),
    _f("count", "", "instances in the window", ("gpu_trace", "kern_sum"), "kernel"),
    _f("median_us", "us", "median duration", ("gpu_trace", "kern_sum"), "kernel"),
    _f("avg_us", "us", "mean duration", ("gpu_trace", "kern_sum"), "kernel"),
    # GPU metrics under the kernel's launches (facts/gpu_metrics.py)
    *(_f(n, u, d, ("gpu_metrics",), "kernel") for n, u, d in [
        ("gm_sm_active_pct", "%", "SMs active while this kernel runs (GPU metrics samples)"),
        ("gm_sm_issue_pct", "%", "SM issue throughput while this kernel runs"),
        ("gm_tensor_active_pct", "%", "tensor pipe active while this kernel runs"),
        ("gm_dram_pct", "%", "DRAM bandwidth (read + write) while this kernel runs, % of peak"),
        ("gm_verdict", "", "memory / tensor / compute / underfilled / mixed from the samples (ncu's class where ncu measured the kernel)"),
    ]),
    # Nsight Compute (facts/ncu.py): median over the profiled launches of the kernel
    *(_f(n, u, d, ("ncu",), "kernel") for n, u, d in [
        ("nsys_matched", "", "the ncu kernel was found in the nsys data (its share of GPU time is known)"),
        ("nsys_match", "", "how the ncu name was matched to the nsys name: name, normalized name, function name"),
        ("ncu_name", "", "kernel name as Nsight Compute prints it"),
        ("ncu_launches", "", "launches of this kernel profiled by ncu"),
        ("simt_gemm", "", "an FP32/FP64 GEMM on SIMT cores by its name (sgemm / simt, no tensor-core marker)"),
        ("sm_throughput_pct", "%", "Compute (SM) Throughput: SM throughput as a share of peak (SpeedOfLight)"),
        ("memory_throughput_pct", "%", "Memory Throughput: the busiest memory unit (DRAM, L2, L1) as a share of peak"),
        ("dram_throughput_pct", "%", "DRAM Throughput: DRAM bandwidth as a share of peak"),
        ("l1_throughput_pct", "%", "L1/TEX cache throughput as a share of peak"),
        ("l2_throughput_pct", "%", "L2 cache throughput as a share of peak"),
        ("duration_us", "us", "kernel duration under ncu (clocks may differ from the nsys run)"),
        ("dram_bandwidth_gbps", "GB/s", "DRAM bandwidth reached (Memory Workload Analysis: Memory Throughput)"),
        ("l2_hit_rate_pct", "%", "L2 hit rate (healthy > 80 %)"),
        ("l1_hit_rate_pct", "%", "L1/TEX hit rate"),
        ("local_spill_requests", "", "local-memory spilling requests (register spills)"),
        ("achieved_occupancy_pct", "%", "achieved occupancy: resident warps / maximum warps (healthy > 50 %)"),
        ("theoretical_occupancy_pct", "%", "theoretical occupancy allowed by registers, shared memory and block size"),
        ("block_limit_registers", "block", "blocks per SM allowed by the registers"),
        ("block_limit_shared_mem", "block", "blocks per SM allowed by the shared memory"),
        ("block_limit_warps", "block", "blocks per SM allowed by the warps (block size)"),
        ("block_limit_sm", "block", "blocks per SM allowed by the hardware block limit"),
        ("block_limit_barriers", "block", "blocks per SM allowed by the barriers"),
        ("occupancy_limiter", "", "what limits theoretical occupancy: registers, shared_mem, warps, blocks, barriers (joined by + on a tie); none at 100 %"),
        ("registers_per_thread", "", "registers per thread (healthy < 128)"),
        ("shared_mem_per_block_bytes", "byte", "static + dynamic shared memory per block"),
        ("block_size", "", "threads per block"),
        ("grid_size", "", "blocks in the grid"),
        ("waves_per_sm", "", "waves of blocks per SM: grid / (SMs x blocks per SM)"),
        ("sm_count", "", "SMs of the GPU"),
        ("tail_idle_pct", "%", "SM time left idle by the last, incomplete wave of blocks (1 - waves below one wave)"),
        ("bound_class", "", "ncu's SOL class: compute, memory, latency, small-grid or balanced"),
        ("issue_active_pct", "%", "cycles in which a scheduler issued an instruction (One or More Eligible)"),
        ("warp_cycles_per_issue", "cycle", "cycles between two instructions of a warp (Warp Cycles Per Issued Instruction)"),
        ("tensor_pipe_active_pct", "%", "tensor pipe active cycles as a share of peak (raw page)"),
        ("top_stall_reason", "", "the warp stall reason with the most cycles (raw page, else ncu's CPIStall rule)"),
        ("top_stall_pct", "%", "share of the cycles between two instructions spent in the top stall reason"),
        ("shared_bank_conflict_pct", "%", "shared-memory bank conflicts as a share of shared-memory wavefronts (raw page)"),
        ("global_excess_sectors_pct", "%", "excess global-memory sectors (uncoalesced access) as a share of global sectors (raw page)"),
        ("top_pipe", "", "the most utilized pipeline named by ncu's HighPipeUtilization rule"),
        ("top_pipe_pct", "%", "utilization of that pipeline"),
        ("ncu_rules", "", "ncu's own OPT / WRN rule rows: name, type, estimated speedup"),
        ("ncu_opt_count", "", "ncu OPT (optimization) rules that fired"),
        ("ncu_top_rule", "", "the ncu OPT rule with the largest global estimated speedup"),
        ("ncu_top_rule_speedup_pct", "%", "its estimated speedup (global: share of the kernel's runtime); 0 when none fired"),
        ("ncu_top_rule_text", "", "its description"),
        ("ncu_occupancy_speedup_pct", "%", "ncu's estimated speedup from occupancy (AchievedOccupancy, TheoreticalOccupancy)"),
        ("ncu_launch_speedup_pct", "%", "ncu's estimated speedup from the launch configuration (LaunchConfiguration)"),
        ("ncu_uncoalesced_speedup_pct", "%", "ncu's estimated speedup from global access patterns (UncoalescedGlobalAccess, MemoryCacheAccessPattern)"),
        ("ncu_bank_conflict_speedup_pct", "%", "ncu's estimated speedup from shared-memory access (UncoalescedSharedAccess, SharedMemoryConflicts)"),
        ("ncu_stall_speedup_pct", "%", "ncu's estimated speedup from the top warp stall (CPIStall)"),
    ]),
]
KERNEL_FACTS: dict[str, Fact] = {f.name: f for f in _KERNEL}

SCOPES = {"run": RUN_FACTS, "kernel": KERNEL_FACTS}


SPAN_NOTE = "whole profile, start-up included"   # what a ``_span`` fact adds to its window fact's doc


def span_name(name: str) -> str:
    return f"{name}_span"


def lookup(scope: str, name: str) -> Fact | None:
    table = SCOPES.get(scope, {})
    if name in table:
        return table[name]
    if name.endswith("_span") and name[:-5] in table:
        f = table[name[:-5]]
        return Fact(name, f.unit, f.scope, f.doc + f" ({SPAN_NOTE})", f.needs)
    return None


def all_names(scope: str) -> list[str]:
    table = SCOPES.get(scope, {})
    return sorted(list(table) + [span_name(n) for n in table])


def register(scope: str, fact: Fact) -> None:
    """Add a fact (used by later layers, e.g. ncu kernel metrics)."""
    SCOPES.setdefault(scope, {})[fact.name] = fact


# --- the descriptions in other languages -------------------------------------------------------------
# A fact's doc in Chinese (or another language) lives in the gettext catalog
# ``nsys_expert/locale/<lang>/LC_MESSAGES/facts.po``: one entry per fact, its msgctxt the fact's name
# and its msgid the English doc above, so an English doc that changes loses its stale translation (and
# falls back to English) until the catalog is updated; ``tests/test_i18n.py`` lists the facts without
# one. Edit the .po, then ``python -m nsys_expert.report.i18n`` compiles the shipped .mo.
FACTS_DOMAIN = "facts"


def _catalog(lang: str) -> dict[str, str]:
    import gettext
    import os

    if lang not in _CATALOGS:
        locale = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale")
        try:
            cat = gettext.translation(FACTS_DOMAIN, locale, languages=[lang])._catalog   # noqa: SLF001
        except OSError:
            cat = {}
        _CATALOGS[lang] = {k: v for k, v in cat.items() if isinstance(k, str) and "\x04" in k and v}
    return _CATALOGS[lang]


_CATALOGS: dict[str, dict[str, str]] = {}


def text_in(lang: str | None, context: str, english: str) -> str | None:
    """``english`` (the text of ``context``: a fact's name, ``input:<id>``) in ``lang``; ``english``
    itself for English or where the catalog has no entry for exactly this text."""
    if not lang or lang == "en":
        return english
    return _catalog(lang).get(f"{context}\x04{english}", english)


def doc(fact: Fact, lang: str | None = "en") -> str:
    """A fact's description in ``lang`` (English where the catalog lacks it); a ``_span`` fact is its
    window fact's description plus the whole-profile note."""
    if not lang or lang == "en":
        return fact.doc
    base = fact.name.removesuffix("_span")
    note = f" ({SPAN_NOTE})"
    if base != fact.name and fact.doc.endswith(note):
        own = text_in(lang, base, fact.doc[:-len(note)])
        return text_in(lang, "_span", "{doc}" + note).format(doc=own)
    return text_in(lang, fact.name, fact.doc)


def untranslated(lang: str) -> list[str]:
    """``scope:name`` of every registered fact whose description has no ``lang`` text."""
    return [f"{scope}:{f.name}" for scope, table in SCOPES.items() for f in table.values()
            if f"{f.name}\x04{f.doc}" not in _catalog(lang)]
