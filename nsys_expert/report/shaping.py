"""What the report shows and what it leaves out (issue 48): whether anything was recorded, the advice
worth listing, the warnings worth saying, the copy table's memory kinds in the report's language."""
from __future__ import annotations

import os

from ..load import Profile

PROFILE_AGAIN = "nsys profile --trace=cuda,nvtx,osrt -o prof python train.py"
# a torch.profiler trace is profiled again with torch.profiler: this writes torch_profiler_steps.py (a schedule
# that records six steps after the start-up), not an nsys flag (issue 56, item 10)
PROFILE_AGAIN_TORCH = "nsys-expert command quick --out-dir ."
MIN_KERNEL_ADVICE_GAIN_PCT = 0.5


def recorded(prof: Profile) -> str:
    """``nothing``: every table read has no rows; ``no_gpu_work``: no kernel, copy or memset in any GPU
    table; else ``some`` (issue 48, item 6: an empty recording says so in its verdict, not in a warning)."""
    t = prof.tables
    if t and all(x.height == 0 for x in t.values()):
        return "nothing"
    gpu = [n for n in ("gpu_trace", "kern_sum", "mem_time_sum", "gpu_sum") if n in t]
    if gpu and all(t[n].height == 0 for n in gpu):
        return "no_gpu_work"
    return "some"


def memkind(v, L) -> str:
    """'Device→Pinned' in the report's language (L["mem_kinds"]: zh), the arrow kept."""
    kinds = (L or {}).get("mem_kinds") if hasattr(L, "get") else None
    if isinstance(v, str) and all(part in ("Unknown", "") for part in v.split("→")):
        return "–"      # nsys names no memory kind (unified-memory migrations): not 'Unknown→Unknown' (issue 56, item 11)
    if not kinds or not isinstance(v, str):
        return "–" if v is None else str(v)
    return "→".join(kinds.get(part, part) for part in v.split("→"))


def actionable(findings: list) -> list:
    """The findings (``diagnosis.Ranked``) whose advice the report lists: not a kernel's whose gain is known
    and under MIN_KERNEL_ADVICE_GAIN_PCT of the window (ncu advice for a kernel at 0.05 % of it;
    launch_bound's tail-effect once the critical path caps it at 0): the finding stays, its advice is noise."""
    return [f for f in findings if f.advice and not (
        f.scope and isinstance(f.estimated_gain_pct, (int, float))
        and f.estimated_gain_pct < MIN_KERNEL_ADVICE_GAIN_PCT)]


def twin_read(warning, inputs: list[dict]) -> bool:
    """A warning that X.txt is the text form of an ncu report while X.csv (or X_details.csv ...) was read."""
    if getattr(warning, "code", None) != "load.ncu_text_form":
        return False
    name = str(warning.fields["file"])
    stem = os.path.splitext(name)[0]
    return any(os.path.basename(str(i.get("path", ""))).startswith(stem) and
               str(i.get("path", "")).endswith((".csv", ".csv.gz")) for i in inputs)
