"""GPU metrics runs for issue 20 (fixtures gpu_metrics_pcie_pinned_sqlite, gpu_metrics_memcpy_pageable_sqlite):
workloads.py (../shared/tools/device/workloads.py, copied beside this file on the GPU machine) launch_bound and
memcpy_bound (fewer steps), and pinned copies. Run by gpu_metrics.sh (nsys profile --gpu-metrics-devices=all)."""
import sys
import time

import torch

import workloads

nvtx = torch.cuda.nvtx
dev = torch.device("cuda")


def memcpy_pinned(steps=20):
    """256 MB pinned H2D and D2H copies back to back, one tiny kernel between: the PCIe link is the limit."""
    host = torch.randn(64 * 1024 * 1024).pin_memory()
    back = torch.empty_like(host).pin_memory()
    d = torch.empty(64 * 1024 * 1024, device=dev)
    for _ in range(steps):
        nvtx.range_push("step")
        d.copy_(host, non_blocking=True)
        d.mul_(2.0)
        back.copy_(d, non_blocking=True)
        nvtx.range_pop()
    torch.cuda.synchronize()


RUNS = {"launch_bound": lambda: workloads.launch_bound(200), "memcpy_bound": lambda: workloads.memcpy_bound(10),
        "memcpy_pinned": memcpy_pinned}

if __name__ == "__main__":
    name = sys.argv[1]
    torch.manual_seed(0)
    torch.ones(1, device=dev)
    t0 = time.time()
    RUNS[name]()
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)
