"""Which GPU maker's platform made the run: ``gpu_vendor`` (``nvidia`` / ``amd``).

Only a torch.profiler trace can come from either (load/kineto.py reads ROCm traces: ``hip*`` runtime
calls, ``Cijk_*`` / RCCL kernels); nsys and Nsight Compute inputs are NVIDIA's by their format, and the
fact stays absent for them (the pack's ``nvidia-gpu`` condition holds when it is absent). Advice that
names NVIDIA-only tools (nsys, ncu, nvidia-smi, NVLink) is given under that condition only.

``gpu_compute_capability``: the lowest CUDA compute capability of the run's GPUs (``7.0`` a V100, ``8.0``
an A100, ``9.0`` an H100 / H200), from the SQLite export's TARGET_INFO_GPU, a torch.profiler trace's
``deviceProperties`` or Nsight Compute; absent when no input says it (CSV and console text do not).
What a GPU can do depends on it: TF32 and bf16 tensor cores need 8.0 or later.
"""
from __future__ import annotations

from .base import Context
from .declare import fact, group


def compute(ctx: Context) -> None:
    vendor = ctx.prof.meta.get("gpu_vendor")
    if vendor in ("nvidia", "amd"):
        src = ctx.prof.source_name("gpu_trace") or ctx.prof.source_name("api_trace") or ctx.prof.source_name("cpu_trace")
        ctx.fs.put("gpu_vendor", vendor, src)
    if vendor == "amd":
        return
    ccs = [_cc(g.get("cc")) for g in ctx.prof.meta.get("gpus") or []]
    ccs += [_cc(c) for c in ctx.prof.meta.get("ncu_compute_capability") or []]
    ccs = [c for c in ccs if c is not None]
    if ccs:
        src = (ctx.prof.source_name("gpu_trace") or ctx.prof.source_name("ncu") or ctx.prof.source_name("api_trace")
               or ctx.prof.source_name("cpu_trace"))
        ctx.fs.put("gpu_compute_capability", min(ccs), src)


def _cc(v) -> float | None:
    """``"9.0"`` / ``9.0`` / ``"sm_90"`` / ``90`` -> 9.0 (None when it does not read as one)."""
    if isinstance(v, bool) or v is None:
        return None
    s = str(v).strip().lower().removeprefix("sm_")
    try:
        x = float(s)
    except ValueError:
        return None
    if "." not in s and x >= 10 and x.is_integer():     # "90" (sm_90) is 9.0
        x = x / 10
    return x if 1.0 <= x < 20 else None


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gpu_vendor", "", "the GPUs' maker as a torch.profiler trace says it: nvidia (CUDA runtime calls) or amd (ROCm: hip* calls); absent for nsys inputs, which are NVIDIA's", ("gpu_trace", "api_trace")),
    fact("gpu_compute_capability", "", "the lowest CUDA compute capability of the run's GPUs (7.0 V100, 8.0 A100, 9.0 H100 / H200), from the SQLite export, a torch.profiler trace or Nsight Compute; absent when the inputs do not say it (CSV, console text)", ("gpu_trace", "ncu")),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("platform", compute, reads=("input:*",), puts=(FACTS,)),
]
