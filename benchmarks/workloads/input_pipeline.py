"""Two planted host-side bottlenecks, profiled on a real GPU to make the fixtures
``fixtures/dataloader_bound`` and ``fixtures/host_bound`` (see fixtures/README.md).

    python benchmarks/workloads/input_pipeline.py dataloader_bound [--steps N] [--host-ms MS]
    python benchmarks/workloads/input_pipeline.py host_bound       [--steps N] [--host-ms MS]

dataloader_bound: every step loads its batch in the training loop (no DataLoader workers): inside an
    NVTX range ``load_batch`` the host spends ~8 ms in numpy preprocessing (normalise, augment,
    quantise a 1024 x 1024 batch), then copies the batch to the GPU from pageable memory; the GPU then runs a few bf16
    matmuls (~2 ms) and idles while the host loads the next batch.
host_bound: the same matmuls, fed by data already on the GPU, but every step the host spends ~6 ms
    in pure Python outside CUDA (per-step bookkeeping: building metric dicts, formatting log
    lines); no data range, no synchronisation: the GPU idles because nothing is queued.

Each step is an NVTX range ``step`` (nsys-expert finds the iterations with it). Host work is busy
work for a fixed time budget (no sleep), so it costs CPU time like real preprocessing does.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

nvtx = torch.cuda.nvtx


def numpy_preprocess(pool: np.ndarray, step: int, budget_s: float, rows: int = 1024, chunk: int = 64) -> np.ndarray:
    """Decode + augment a batch on the CPU, sample block by sample block (normalise, augment, quantise),
    going round the batch again until the time budget is spent (at least one full pass)."""
    t_end = time.perf_counter() + budget_s
    out = np.empty((rows, pool.shape[1]), dtype=np.float32)
    i = 0
    while True:
        r = (i * chunk) % rows
        src = pool[(step * 7 + i) % (len(pool) // chunk) * chunk:][:chunk]
        c = (src - src.mean(axis=1, keepdims=True)) / (src.std(axis=1, keepdims=True) + 1e-5)
        c = np.tanh(c * 1.1) + 0.01 * src[::-1]
        out[r:r + chunk] = np.round(c * 127.0) / 127.0
        i += 1
        if i * chunk >= rows and time.perf_counter() >= t_end:
            return out


def python_bookkeeping(step: int, budget_s: float) -> int:
    """Per-step host work in plain Python (metrics dicts, log formatting), outside any CUDA call."""
    t_end = time.perf_counter() + budget_s
    n = 0
    while time.perf_counter() < t_end:
        rec = {f"metric_{i}": (step * 31 + i * 17) % 1000 / 7.0 for i in range(64)}
        line = json.dumps(rec, sort_keys=True)
        n += sum(ord(c) for c in line[:256]) % 7
    return n


def model(dev):
    torch.manual_seed(0)
    w_in = torch.randn(1024, 8192, device=dev, dtype=torch.bfloat16) * 0.03
    ws = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(4)]
    return w_in, ws


def forward(x, w_in, ws):
    y = torch.relu(x.to(torch.bfloat16) @ w_in)
    for w in ws:
        y = torch.relu(y @ w)
    return y


def dataloader_bound(steps: int, host_ms: float):
    dev = torch.device("cuda")
    w_in, ws = model(dev)
    pool = np.random.default_rng(0).standard_normal((8192, 1024), dtype=np.float32)  # the "dataset"
    acc = torch.zeros((), device=dev)
    for s in range(steps):
        nvtx.range_push("step")
        nvtx.range_push("load_batch")
        batch = numpy_preprocess(pool, s, host_ms / 1e3)
        xb = torch.from_numpy(batch).to(dev)          # pageable host memory: a staged, blocking copy
        nvtx.range_pop()
        nvtx.range_push("compute")
        acc += forward(xb, w_in, ws).float().mean()
        nvtx.range_pop()
        nvtx.range_pop()
    torch.cuda.synchronize()
    return float(acc)


def host_bound(steps: int, host_ms: float):
    dev = torch.device("cuda")
    w_in, ws = model(dev)
    xb = torch.randn(1024, 1024, device=dev)
    acc = torch.zeros((), device=dev)
    total = 0
    for s in range(steps):
        nvtx.range_push("step")
        total += python_bookkeeping(s, host_ms / 1e3)   # the GPU has nothing queued meanwhile
        acc += forward(xb, w_in, ws).float().mean()
        nvtx.range_pop()
    torch.cuda.synchronize()
    return float(acc) + total * 0.0


WORKLOADS = {"dataloader_bound": (dataloader_bound, 8.0), "host_bound": (host_bound, 6.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--host-ms", type=float, default=None, help="host work per step (ms)")
    a = ap.parse_args(argv)
    fn, default_ms = WORKLOADS[a.workload]
    torch.ones(1, device="cuda")          # context creation before the timed loop
    t0 = time.time()
    fn(a.steps, a.host_ms if a.host_ms is not None else default_ms)
    dt = time.time() - t0
    print(f"{a.workload}: {a.steps} steps in {dt:.2f}s ({dt / a.steps * 1e3:.1f} ms/step)", file=sys.stderr)


if __name__ == "__main__":
    main()
