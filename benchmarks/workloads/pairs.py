"""Before/after pairs (what a piece of advice really gains) and two patterns the fixtures lacked,
run on a real GPU to make fixtures and to measure each fix.

    python benchmarks/workloads/pairs.py NAME [nsys|kineto|time]

``nsys`` (the default) runs the workload as it is (profile it with ``nsys profile``); ``kineto``
runs it under torch.profiler and writes ``$KINETO_OUT`` (a Chrome trace of 6 steps after 2 wait and
2 warm-up steps, as ``../shared/tools/device/workloads.py`` does); ``time`` runs it bare and prints
the wall time per step (steps 3..N, host clock after a synchronize at both ends) as JSON.

Each step is an NVTX range ``step``. Every ``*_fixed`` workload is its base workload with one piece
of nsys-expert's advice applied, and nothing else changed:

sync_bound / sync_bound_fixed: the shared ``sync_bound`` code (fp32 2048^2 GEMM, ``loss.item()``,
    2 ms of host work, ``torch.cuda.synchronize()`` a step); fixed: the losses stay on the GPU and
    are read once at the end, no per-step synchronize (the 2 ms of host work stays).
dataloader_bound / dataloader_bound_fixed: a ``torch.utils.data.DataLoader`` whose batches take
    ~8 ms of numpy preprocessing each, feeding ~4 ms of bf16 GEMMs; ``num_workers=0`` (the batch
    is made in the training loop); fixed: ``num_workers=4, pin_memory=True``.
memory_bound / memory_bound_fixed: four unfused elementwise passes over a 1 GiB fp32 tensor (the
    shared ``memory_bound``); fixed: the same four ops under ``torch.compile`` (one fused kernel),
    compiled before the first step.
fp32_gemm / fp32_gemm_fixed: fp32 4096^3 matmuls (a SIMT sgemm kernel); fixed:
    ``torch.backends.cuda.matmul.allow_tf32 = True`` (tensor cores).
host_bound / host_bound_fixed: ~3 ms of bf16 GEMMs queued a step, then ~6 ms of per-step bookkeeping in
    plain Python on the launching thread (the GPU idles half the step); fixed: the bookkeeping goes to a
    pool of 4 worker processes (spawned and warm before the first step, results collected at the end).
copy_serial / copy_serial_fixed: each step copies the next 256 MB batch from pinned memory and
    runs ~5 ms of GEMMs on it; the copy is on the compute stream, so they serialise; fixed: the copy
    runs on a side stream, double-buffered, overlapping the previous step's compute.
recompile_shapes: ``torch.compile`` of a small MLP fed a new sequence length every step with
    automatic dynamic shapes off: each step recompiles (Dynamo, Inductor, Triton) while the GPU idles.
contiguous_copies: each step makes ``.contiguous()`` copies of transposed activations and
    ``clone()``s of big tensors around one small matmul: copy kernels fill the GPU.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np
import torch

dev = torch.device("cuda")
nvtx = torch.cuda.nvtx
_hooks: dict = {"step_end": None, "marks": []}


def step_begin():
    _hooks["marks"].append(time.perf_counter())
    nvtx.range_push("step")


def step_end():
    nvtx.range_pop()
    if _hooks["step_end"]:
        _hooks["step_end"]()


def host_work(budget_s: float) -> int:
    """Per-step host bookkeeping in plain Python (metrics dicts, log lines), outside any CUDA call."""
    t_end = time.perf_counter() + budget_s
    n = 0
    while time.perf_counter() < t_end:
        rec = {f"metric_{i}": (i * 17) % 1000 / 7.0 for i in range(64)}
        n += len(json.dumps(rec)) % 7
    return n


# -- sync removed --------------------------------------------------------------------------------
def sync_bound(steps=300, fixed=False):
    a = torch.randn(2048, 2048, device=dev)
    w = torch.randn(2048, 2048, device=dev)
    losses = []
    for _ in range(steps):
        step_begin()
        y = a @ w
        loss = y.square().mean()
        losses.append(loss.detach() if fixed else loss.item())
        time.sleep(0.002)   # as the shared sync_bound: host-side bookkeeping while the GPU waits
        if not fixed:
            torch.cuda.synchronize()
        step_end()
    if fixed:
        losses = torch.stack(losses).tolist()
    torch.cuda.synchronize()


# -- DataLoader workers ---------------------------------------------------------------------------
class Batches(torch.utils.data.Dataset):
    """Each item is a whole batch: ~8 ms of numpy decode/augment of a 1024 x 1024 float32 batch."""
    def __init__(self, n, budget_s=0.008):
        self.n, self.budget_s = n, budget_s
        self.pool = np.random.default_rng(0).standard_normal((8192, 1024), dtype=np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t_end = time.perf_counter() + self.budget_s
        out = np.empty((1024, 1024), dtype=np.float32)
        k = 0
        while True:
            r = (k * 64) % 1024
            src = self.pool[(i * 7 + k) % 128 * 64:][:64]
            c = (src - src.mean(axis=1, keepdims=True)) / (src.std(axis=1, keepdims=True) + 1e-5)
            out[r:r + 64] = np.tanh(c * 1.1) + 0.01 * src[::-1]
            k += 1
            if k * 64 >= 1024 and time.perf_counter() >= t_end:
                return torch.from_numpy(out)


def dataloader_bound(steps=120, fixed=False):
    w_in = torch.randn(1024, 8192, device=dev, dtype=torch.bfloat16) * 0.03
    ws = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(3)]
    kw = dict(num_workers=4, pin_memory=True, prefetch_factor=4, persistent_workers=True) if fixed else {}
    loader = torch.utils.data.DataLoader(Batches(steps), batch_size=None, shuffle=False, **kw)
    acc = torch.zeros((), device=dev)
    it = iter(loader)
    for _ in range(steps):
        step_begin()
        xb = next(it).to(dev, non_blocking=fixed)
        y = torch.relu(xb.to(torch.bfloat16) @ w_in)
        for _ in range(8):                    # 24 GEMMs of 1024 x 8192 x 8192: ~4 ms of GPU work
            for w in ws:
                y = torch.relu(y @ w)
        acc += y.float().mean()
        step_end()
    torch.cuda.synchronize()


# -- fusion ----------------------------------------------------------------------------------------
def _four_passes(x):
    y = x * 2.0
    y = y + 1.0
    y = torch.relu(y)
    return y - 1.0


def memory_bound(steps=60, fixed=False):
    x = torch.randn(256 * 1024 * 1024, device=dev)
    f = torch.compile(_four_passes) if fixed else _four_passes
    if fixed:
        f(x)   # compiled before the first step
        torch.cuda.synchronize()
    for _ in range(steps):
        step_begin()
        x = f(x)
        step_end()
    torch.cuda.synchronize()


# -- tensor cores for an fp32 GEMM ---------------------------------------------------------------
def fp32_gemm(steps=40, fixed=False):
    torch.backends.cuda.matmul.allow_tf32 = fixed
    a = torch.randn(4096, 4096, device=dev)
    b = torch.randn(4096, 4096, device=dev) * (1 / 64)
    for _ in range(steps):
        step_begin()
        for _ in range(4):
            a = torch.tanh(a @ b)
        step_end()
    torch.cuda.synchronize()


# -- copy / compute overlap on two streams -------------------------------------------------------
def copy_serial(steps=40, fixed=False):
    n = 64 * 1024 * 1024                      # 256 MB of fp32 a batch
    host = [torch.randn(n).pin_memory() for _ in range(2)]
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    bufs = [torch.empty(n, device=dev) for _ in range(2)]
    side = torch.cuda.Stream()
    ready = [torch.cuda.Event() for _ in range(2)]
    acc = torch.zeros((), device=dev)
    main = torch.cuda.current_stream()
    if fixed:   # the first batch before the loop
        with torch.cuda.stream(side):
            bufs[0].copy_(host[0], non_blocking=True)
            ready[0].record(side)
    for s in range(steps):
        step_begin()
        cur = s % 2
        if fixed:
            nxt = 1 - cur
            side.wait_stream(main)            # the buffer is free once the step that used it is done
            with torch.cuda.stream(side):
                bufs[nxt].copy_(host[nxt], non_blocking=True)
                ready[nxt].record(side)
            main.wait_event(ready[cur])
        else:
            bufs[cur].copy_(host[cur], non_blocking=True)
        x = bufs[cur][: 4096 * 4096].view(4096, 4096).to(torch.bfloat16)
        for _ in range(40):
            x = x @ w
            x = x * (1 / 64)
        acc += x.float().mean()
        step_end()
    torch.cuda.synchronize()


# -- host work off the launching thread ------------------------------------------------------------
def _bookkeeping(step):
    """Per-step host bookkeeping (module level: the worker processes of the fixed run import it)."""
    return host_work(0.006) + step


def host_bound(steps=150, fixed=False):
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) * 0.01
    pool, pending = None, []
    if fixed:   # worker processes (spawned: no CUDA state), started and warm before the first step
        import multiprocessing as mp
        pool = mp.get_context("spawn").Pool(4)
        pool.map(_bookkeeping, range(8))
    acc = torch.zeros((), device=dev)
    for s in range(steps):
        step_begin()
        y = a
        for _ in range(15):                   # ~3 ms of bf16 GEMMs queued
            y = y @ w
        acc += y.float().mean()
        if fixed:
            pending.append(pool.apply_async(_bookkeeping, (s,)))
        else:
            _bookkeeping(s)                   # ~6 ms of plain Python on the launching thread
        step_end()
    torch.cuda.synchronize()
    if fixed:   # every step's bookkeeping done; the pool's teardown (about a second) is not a step's
        [p.get() for p in pending]
        import atexit
        atexit.register(pool.terminate)


# -- recompilation in the steady state ----------------------------------------------------------
def recompile_shapes(steps=12, fixed=False):
    import torch._dynamo as dynamo
    dynamo.config.automatic_dynamic_shapes = fixed
    for knob in ("recompile_limit", "cache_size_limit"):   # the limit's name changed across releases
        if hasattr(dynamo.config, knob):
            setattr(dynamo.config, knob, 256)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024),
                                torch.nn.LayerNorm(1024)).to(dev)
    f = torch.compile(model, dynamic=True if fixed else False)
    with torch.no_grad():
        for s in range(steps):
            step_begin()
            x = torch.randn(8, 64 + 16 * s, 1024, device=dev)
            y = f(x)
            for _ in range(20):
                y = f(y)
            step_end()
    torch.cuda.synchronize()


# -- copy kernels ----------------------------------------------------------------------------------
def contiguous_copies(steps=40, fixed=False):
    x = torch.randn(64, 512, 4096, device=dev, dtype=torch.bfloat16)    # 256 MiB of activations
    w = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    keep = torch.empty_like(x)
    acc = torch.zeros((), device=dev)
    for _ in range(steps):
        step_begin()
        t = x.transpose(1, 2).contiguous()           # (64, 4096, 512): a strided copy kernel
        u = t.transpose(1, 2).contiguous()           # and back
        v = u.clone()                                # a plain copy
        keep.copy_(v)                                # a device-to-device copy of the same layout
        y = v[:, :64, :64] @ w                       # the only math: one small batched matmul
        acc += y.float().sum()
        step_end()
    torch.cuda.synchronize()


BASE = {f.__name__: f for f in [sync_bound, dataloader_bound, memory_bound, fp32_gemm, copy_serial, host_bound]}
SINGLE = {f.__name__: f for f in [recompile_shapes, contiguous_copies]}
WORKLOADS = {**{k: (f, False) for k, f in BASE.items()}, **{f"{k}_fixed": (f, True) for k, f in BASE.items()},
             **{k: (f, False) for k, f in SINGLE.items()}}


def kineto(fn, fixed):
    from torch.profiler import ProfilerActivity, profile, schedule
    out = os.environ.get("KINETO_OUT", "/tmp/trace.pt.trace.json")
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=2, warmup=2, active=6, repeat=1), record_shapes=True,
                   on_trace_ready=lambda p: p.export_chrome_trace(out))
    _hooks["step_end"] = prof.step
    with prof:
        fn(fixed=fixed)


def timed(name, fn, fixed):
    fn(fixed=fixed)
    torch.cuda.synchronize()
    m = _hooks["marks"]
    t_end = time.perf_counter()
    per = [(b - a) * 1e3 for a, b in zip(m[2:], m[3:] + [t_end])]
    print(json.dumps({"workload": name, "steps": len(m), "ms_per_step_mean": round((t_end - m[2]) * 1e3 / (len(m) - 2), 4),
                      "ms_per_step_median": round(statistics.median(per), 4)}))


if __name__ == "__main__":
    name, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "nsys")
    fn, fixed = WORKLOADS[name]
    torch.manual_seed(0)
    torch.ones(1, device=dev)   # context creation before the first step
    t0 = time.time()
    if mode == "kineto":
        kineto(fn, fixed)
    elif mode == "time":
        timed(name, fn, fixed)
    else:
        fn(fixed=fixed)
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)
