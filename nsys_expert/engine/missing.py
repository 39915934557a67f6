"""Why a rule was not evaluated, in words and without commands.

The commands that collect what is missing are the report's "Next steps" (scenarios.next_steps, the
one command builder); the reason here only names what is missing. The facts layer writes its reasons
with command hints in parentheses (``needs the cuda_api_trace report (nsys stats -r cuda_api_trace)``,
``needs Nsight Compute data of the top kernels: ncu ...``); they are cut here, and a reason that asks to
export a trace the input already holds is replaced by the true one (CUDA graphs traced as a whole, or a
window with none of that work).
"""
from __future__ import annotations

import re

from ..facts import FactSet, registry

_COMMAND_HINT = re.compile(r"\s*\((?:[^()]*\b(?:nsys|ncu) [^()]*)\)")
_NCU_DATA = "needs Nsight Compute data of the top kernels"
# a torch.profiler trace has no NVTX ranges and no OS runtime trace: what it would need, in its words
_STEPS = "step ranges (ProfilerStep#N: call prof.step() once per step)"
_KINETO = (("NVTX ranges with timestamps or the nvtx_sum report", _STEPS),
           ("NVTX step ranges (profile with --trace=nvtx and mark each step with an NVTX range)", _STEPS),
           ("NVTX ranges with timestamps", _STEPS),
           ("the per-thread OS runtime trace (profile with --trace=osrt: the SQLite export holds it as OSRT_API)",
            "the per-thread OS runtime trace, which torch.profiler does not record"),
           ("the per-thread OS runtime trace", "the per-thread OS runtime trace, which torch.profiler does not record"))


def input_text(name: str) -> str:
    """``the cuda_api_trace report`` (registry.INPUTS without the command in parentheses)."""
    return _COMMAND_HINT.sub("", registry.INPUTS.get(name, name)).strip()


def plain(why: str, fact: str, scope: str, fs: FactSet, held: set[str]) -> str:
    """One reason without commands, true for what the input holds."""
    if why.startswith(_NCU_DATA):
        return _NCU_DATA
    d = registry.lookup(scope, fact)
    traces = [n for n in (d.needs if d else ()) if n.endswith("trace")]
    if why.startswith("only the whole-profile value") and any(t in held for t in traces):
        if fs.run.get("graph_launch_count") or fs.run.get("graph_launch_count_span"):
            return "CUDA graph work is not in the GPU trace"          # the facts' own words for the graph case
        return why.split(";", 1)[0] + "; the GPU trace holds none of this work inside the window"
    return _COMMAND_HINT.sub("", why).strip()


def for_trace(why: str, fs: FactSet) -> str:
    """A reason in the words of the run's profiler: a torch.profiler trace (the only input that says
    its GPUs' maker, facts/platform.py) needs ProfilerStep ranges, not NVTX ranges."""
    if "gpu_vendor" not in fs.run:
        return why
    for nsys_words, kineto_words in _KINETO:
        if nsys_words in why:
            return why.replace(nsys_words, kineto_words)
    return why


def reasons(facts: set[str], fs: FactSet, scope: str, held: set[str]) -> list[str]:
    """One line per distinct reason, for the facts a rule needs and the run lacks."""
    by_reason: dict[str, list[str]] = {}
    for f in sorted(facts):
        why = fs.absent.get(f) or fs.absent.get(f.removesuffix("_span"))
        if not why:
            d = registry.lookup(scope, f)
            why = ("needs " + " or ".join(input_text(n) for n in d.needs)) if d else "unknown fact"
        by_reason.setdefault(for_trace(plain(why, f, scope, fs, held), fs), []).append(f)
    return list(by_reason)
