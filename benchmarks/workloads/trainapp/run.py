"""Run one scenario of the application: ``python run.py NAME[_fixed] [nsys|kineto]``.

``nsys``: run as it is (profile it with ``nsys profile``). ``kineto``: under torch.profiler with
``with_stack=True`` and ``record_shapes=True``, ``schedule(wait=1, warmup=1, active=ACTIVE)`` (4 by
default), the trace written by ``on_trace_ready`` to ``$KINETO_OUT``; ``PROFILE_MEMORY=1``: with ``profile_memory=True``.
"""
from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callbacks  # noqa: E402
import scenarios  # noqa: E402


def main(argv):
    name, mode = argv[1], (argv[2] if len(argv) > 2 else "nsys")
    fixed = name.endswith("_fixed")
    fn = getattr(scenarios, name.removesuffix("_fixed"))
    conf = scenarios.ALLOC_CONF.get(name)
    if conf:                              # the allocator reads it when CUDA starts
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf
    torch.manual_seed(0)
    torch.ones(1, device="cuda")          # context creation before the first step
    t0 = time.time()
    if mode == "kineto":
        from torch.profiler import ProfilerActivity, profile, schedule
        out = os.environ.get("KINETO_OUT", f"/tmp/{name}.pt.trace.json")
        active = int(os.environ.get("ACTIVE", 4))
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
                       record_shapes=True, with_stack=True,
                       profile_memory=os.environ.get("PROFILE_MEMORY") == "1",
                       on_trace_ready=lambda p: p.export_chrome_trace(out))
        callbacks.NvtxSteps.step_hook = prof.step
        with prof:
            fn(fixed)
    else:
        fn(fixed)
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
