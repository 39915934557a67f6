"""Planted bottlenecks in shapes the other fixtures lack, profiled on a real GPU to check that the
diagnosis generalises (fixtures/README.md says what each became).

    python benchmarks/workloads/unseen.py NAME

sleepy_host: no NVTX. Each step the GPU runs ~1 ms of bf16 matmuls; the host then sleeps 9 ms (a
    stand-in for waiting on a socket or a queue), so the GPU idles ~90 % of the time; the host makes
    no CUDA call while it waits.
tiny_inference: no NVTX. Batch-1 inference of a 6-layer MLP (512 wide), each request's answer read
    back with ``.cpu()`` (a small device-to-host copy that synchronises): many ~5 us kernels, a sync
    per request.
checkpoint_spikes: NVTX ``step`` ranges. Compute-bound bf16 matmuls (~8 ms a step); every 10th step
    the 1 GiB of weights is copied to pageable host memory (a checkpoint), ~100+ ms of copy in a
    500 ms run.
busy_no_nvtx: no NVTX. A healthy bf16 matmul loop (the GPU always has queued work, one sync at the
    end): the no-bottleneck control without iteration markers.
"""
from __future__ import annotations

import sys
import time

import torch

dev = torch.device("cuda")
nvtx = torch.cuda.nvtx


def sleepy_host(steps=150):
    a = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    w = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    for _ in range(steps):
        y = a
        for _ in range(20):
            y = y @ w
        time.sleep(0.009)
    torch.cuda.synchronize()


def tiny_inference(requests=3000):
    layers = [torch.nn.Linear(512, 512).to(dev) for _ in range(6)]
    out = []
    with torch.no_grad():
        for _ in range(requests):
            x = torch.randn(1, 512, device=dev)
            for lin in layers:
                x = torch.relu(lin(x))
            out.append(x.argmax().cpu())
    torch.cuda.synchronize()


def checkpoint_spikes(steps=60):
    ws = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) for _ in range(8)]   # 1 GiB
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for s in range(steps):
        nvtx.range_push("step")
        y = x
        for w in ws[:2]:
            y = y @ w
        if s % 10 == 9:
            saved = [w.cpu() for w in ws]   # pageable host memory, one copy per tensor
            del saved
        nvtx.range_pop()
    torch.cuda.synchronize()


def busy_no_nvtx(steps=300):
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    y = a
    for _ in range(steps):
        y = (y @ w).tanh_()
    torch.cuda.synchronize()


WORKLOADS = {f.__name__: f for f in [sleepy_host, tiny_inference, checkpoint_spikes, busy_no_nvtx]}

if __name__ == "__main__":
    name = sys.argv[1]
    torch.manual_seed(0)
    torch.ones(1, device=dev)   # context init before the timed part
    t0 = time.time()
    WORKLOADS[name]()
    torch.cuda.synchronize()
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)
