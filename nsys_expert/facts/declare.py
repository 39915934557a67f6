"""What a fact is, and how a fact group declares the facts it puts (issue 49, item 3).

A fact group module lists its facts beside its code, in a module-level ``FACTS`` list of
:func:`fact` entries (name, unit, doc, the inputs that can supply it, scope); ``registry.py`` collects
the lists of the modules in its ``DECLARING_GROUPS``. ``INPUTS`` names every input a fact can need and how a
user gets it. This module imports nothing of the package, so a group can declare its facts (and name
an input in an absent fact's reason) without an import circle through the registry.
"""
from __future__ import annotations

from dataclasses import dataclass

# input ids -> how a user gets them
INPUTS = {
    "gpu_trace": "the cuda_gpu_trace report (nsys stats -r cuda_gpu_trace)",
    "api_trace": "the cuda_api_trace report (nsys stats -r cuda_api_trace)",
    "nvtx_trace": "NVTX ranges with timestamps (nsys stats -r nvtx_pushpop_trace; profile with --trace=nvtx and mark each step with an NVTX range)",
    "kern_sum": "the cuda_gpu_kern_sum report (nsys stats -r cuda_gpu_kern_sum)",
    "api_sum": "the cuda_api_sum report (nsys stats -r cuda_api_sum)",
    "mem_time_sum": "the cuda_gpu_mem_time_sum report (nsys stats -r cuda_gpu_mem_time_sum)",
    "mem_size_sum": "the cuda_gpu_mem_size_sum report (nsys stats -r cuda_gpu_mem_size_sum)",
    "nvtx_sum": "the nvtx_sum report (nsys stats -r nvtx_sum)",
    "nvtx_pushpop_sum": "the nvtx_pushpop_sum report (nsys stats -r nvtx_pushpop_sum)",
    "osrt_sum": "the osrt_sum report (nsys stats -r osrt_sum; profile with --trace=osrt)",
    "osrt_trace": "the per-thread OS runtime trace (profile with --trace=osrt: the SQLite export holds it as OSRT_API)",
    "kern_exec_sum": "the cuda_kern_exec_sum report (nsys stats -r cuda_kern_exec_sum)",
    "nvtx_gpu_proj_sum": "the nvtx_gpu_proj_sum report (nsys stats -r nvtx_gpu_proj_sum)",
    "gpu_sum": "the cuda_gpu_sum report (nsys stats -r cuda_gpu_sum)",
    "ranks": "several ranks of one job (per-rank CSV sets or SQLite files, or one export with several processes)",
    "gpu_metrics": "GPU metrics samples (nsys profile --gpu-metrics-devices=all, then nsys export --type sqlite)",
    "cpu_trace": "torch.profiler's CPU operators (a Kineto trace recorded with ProfilerActivity.CPU)",
    "ncu": "an Nsight Compute CSV of the hot kernels (ncu --set full ... then ncu -i X.ncu-rep --csv --page details)",
}


@dataclass(frozen=True)
class Fact:
    name: str
    unit: str
    scope: str
    doc: str
    needs: tuple[str, ...]       # alternatives: any one of these inputs can supply the fact


def fact(name: str, unit: str, doc: str, needs=("gpu_trace",), scope: str = "run") -> Fact:
    """One fact: ``needs`` lists alternatives (any one of these inputs can supply it)."""
    return Fact(name, unit, scope, doc, tuple(needs))
