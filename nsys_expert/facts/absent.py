"""Why each registered run fact is missing (for "not evaluated")."""
from __future__ import annotations

from . import registry
from .base import Context


def compute(ctx: Context) -> None:
    """Say why each registered run fact is missing (for 'not evaluated')."""
    fs, prof = ctx.fs, ctx.prof
    have_tables = set(prof.tables)
    for name, f in registry.RUN_FACTS.items():
        if name in fs.run or name in fs.absent:
            continue
        if not any(n in have_tables for n in f.needs):
            fs.absent[name] = "needs " + " or ".join(registry.INPUTS.get(n, n) for n in f.needs)
        elif f"{name}_span" in fs.run:
            traces = [registry.INPUTS.get(n, n) for n in f.needs if n.endswith("trace")]
            fs.absent[name] = (f"only the whole-profile value is known from the summary reports "
                               f"({name}_span = {fs.run[name + '_span']})"
                               + (f"; export {' and '.join(traces)} for the steady-state value" if traces else ""))
        elif f.needs == ("nvtx_trace",) and "nvtx_trace" in have_tables and (
                fs.window is None or fs.window.iterations is None or fs.window.iterations.height < 2):
            fs.absent[name] = ("no repeated top-level NVTX range marks the iterations: wrap each step in one "
                               "(torch.cuda.nvtx.range_push('step') ... range_pop())")
        else:
            fs.absent[name] = ("needs " + " or ".join(registry.INPUTS.get(n, n) for n in f.needs if n not in have_tables)
                               if any(n not in have_tables for n in f.needs) else "not computable from these inputs")
