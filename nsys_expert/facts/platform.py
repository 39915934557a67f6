"""Which GPU maker's platform made the run: ``gpu_vendor`` (``nvidia`` / ``amd``).

Only a torch.profiler trace can come from either (load/kineto.py reads ROCm traces: ``hip*`` runtime
calls, ``Cijk_*`` / RCCL kernels); nsys and Nsight Compute inputs are NVIDIA's by their format, and the
fact stays absent for them (the pack's ``nvidia-gpu`` condition holds when it is absent). Advice that
names NVIDIA-only tools (nsys, ncu, nvidia-smi, NVLink) is given under that condition only.
"""
from __future__ import annotations

from .base import Context


def compute(ctx: Context) -> None:
    vendor = ctx.prof.meta.get("gpu_vendor")
    if vendor in ("nvidia", "amd"):
        src = ctx.prof.source_name("gpu_trace") or ctx.prof.source_name("api_trace") or ctx.prof.source_name("cpu_trace")
        ctx.fs.put("gpu_vendor", vendor, src)
