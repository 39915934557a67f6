"""Four planted patterns (named issue16.py when the fixtures were made), profiled on a real GPU to make the fixtures
``fixtures/overlapped_copies``, ``fixtures/library_nvtx``, ``fixtures/dataloader_wait`` and
``fixtures/allocator_churn`` (each fixture's README says how and what was measured).

    python benchmarks/workloads/planted_patterns.py NAME [--steps N]

overlapped_copies: every step copies a 256 MiB pinned host buffer to the GPU with ``non_blocking=True``
    on a side stream while the default stream runs bf16 8192^3 GEMMs; the GEMM count per step is chosen
    at start-up (timed with CUDA events) so that the copy lasts ~45 % of the GEMM time. Double-buffered:
    the default stream reads the previous step's buffer after waiting on its copy event, the side stream
    refills a buffer only after the default stream has read it. The host waits at the end of each step
    for the previous step's last kernel (so it runs one step ahead, never idling the GPU): the GPU is
    ~100 % busy and the copies are hidden under the GEMMs.
library_nvtx: every step sorts a 16 Mi-element float tensor and then sorts the resulting indices
    (its inverse permutation), two ``torch.sort`` calls backed by CUB's device-wide radix sort; CCCL's own
    NVTX range ``cub::DeviceRadixSort`` (domain ``CCCL``) then nests twice inside each ``step``: twice as
    frequent as it. No NVTX range other than ``step`` is emitted by this script. The host reads the
    running sum back at the end of each step (as a logged loss would).
dataloader_wait: a ``torch.utils.data.DataLoader`` with 2 worker processes whose dataset spends ~16 ms of
    numpy work per batch (decode + augment stand-in); the training loop does ~1 ms of GPU work per batch,
    so the launching thread blocks in the DataLoader's queue (``poll`` / ``read`` on the worker pipe) and
    the GPU idles. No NVTX range inside ``step``: only the OS runtime trace shows the wait.
allocator_churn: ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` (set here before torch is imported): a small bf16
    MLP training step (forward, backward, SGD) whose every temporary is a fresh ``cudaMalloc`` and every
    release a ``cudaFree``, inside every step.

Each step is an NVTX range ``step`` (torch.cuda.nvtx.range_push / range_pop).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] == "allocator_churn":
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"   # before torch (and its allocator) starts

import numpy as np  # noqa: E402
import torch  # noqa: E402

nvtx = torch.cuda.nvtx


def overlapped_copies(steps: int):
    dev = torch.device("cuda")
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16) * 0.01
    elems = 128 * 1024 * 1024                                   # 256 MiB of bf16
    host = [torch.randn(elems).to(torch.bfloat16).pin_memory() for _ in range(2)]
    buf = [torch.empty(elems, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    side = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    # start-up: time one copy and one GEMM to size the step (copy ~45 % of the step's GEMM time)
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    for _ in range(2):
        e0.record(); buf[0].copy_(host[0], non_blocking=True); e1.record(); c = a @ b; e2.record()
        torch.cuda.synchronize()
    t_copy, t_gemm = e0.elapsed_time(e1), e1.elapsed_time(e2)
    k = max(2, round(t_copy / (0.45 * t_gemm)))
    print(f"overlapped_copies: copy {t_copy:.2f} ms, GEMM {t_gemm:.2f} ms, {k} GEMMs per step", file=sys.stderr)
    copied = [torch.cuda.Event() for _ in range(2)]
    consumed = [torch.cuda.Event() for _ in range(2)]
    for e in consumed:
        e.record(main)
    acc = torch.zeros((), device=dev)
    acc += buf[0][:4096].float().sum()                      # load the read-back kernels now, not in step 2
    a = c * 0.0001 + 0.5
    torch.cuda.synchronize()
    done = None
    for s in range(steps):
        nvtx.range_push("step")
        c = a @ b                                           # queue compute first: the copy lands under it
        with torch.cuda.stream(side):
            side.wait_event(consumed[s % 2])                # buffer read by the default stream already
            buf[s % 2].copy_(host[s % 2], non_blocking=True)
            copied[s % 2].record(side)
        if s > 0:
            main.wait_event(copied[(s - 1) % 2])            # last step's data has arrived (long ago)
            acc += buf[(s - 1) % 2][:4096].float().sum()
            consumed[(s - 1) % 2].record(main)
        for _ in range(k - 1):
            c = a @ b
        a = c * 0.0001 + 0.5                                # keep values bounded; the GEMMs depend on each other
        if done is not None:
            done.synchronize()                              # host stays one step ahead (this step is queued)
        done = torch.cuda.Event()
        done.record(main)
        nvtx.range_pop()
    torch.cuda.synchronize()
    return float(acc)


def library_nvtx(steps: int):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand(16 * 1024 * 1024, device=dev, generator=g)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    acc = torch.zeros((), device=dev)
    total = 0.0
    for s in range(steps):
        nvtx.range_push("step")
        y = (w @ w).float()                                 # a little dense work around the library calls
        vals, idx = torch.sort(x)                           # CUB radix sort (pairs)
        _, inv = torch.sort(idx)                            # inverse permutation: a second CUB radix sort
        acc += vals[-1] + y[0, 0] + inv[0].float()
        x = torch.rand(x.shape, device=dev, generator=g)
        total = float(acc)                                  # per-step host read-back (a logged loss)
        nvtx.range_pop()
    torch.cuda.synchronize()
    return total


class SlowDataset(torch.utils.data.Dataset):
    """Each item is one batch built by ~ms of numpy work in the worker process (decode/augment stand-in)."""

    def __init__(self, n: int, work_ms: float, rows: int = 512, cols: int = 1024):
        self.n, self.work_s, self.rows, self.cols = n, work_ms / 1e3, rows, cols

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        raw = rng.standard_normal((self.rows, self.cols), dtype=np.float32)
        t_end = time.perf_counter() + self.work_s
        out = raw
        while True:                                          # at least one pass, then until the budget is spent
            out = np.tanh((raw - raw.mean(axis=1, keepdims=True)) / (raw.std(axis=1, keepdims=True) + 1e-5))
            out = np.round(out * 127.0) / 127.0
            if time.perf_counter() >= t_end:
                return torch.from_numpy(out)


def dataloader_wait(steps: int, work_ms: float = 16.0, workers: int = 2):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    w_in = torch.randn(1024, 4096, device=dev, dtype=torch.bfloat16) * 0.03
    ws = [torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(3)]
    loader = torch.utils.data.DataLoader(SlowDataset(steps, work_ms), batch_size=None, shuffle=False,
                                         num_workers=workers, pin_memory=False)
    acc = torch.zeros((), device=dev)
    it = iter(loader)
    for s in range(steps):
        nvtx.range_push("step")
        xb = next(it)                                       # blocks on the workers' queue
        y = torch.relu(xb.to(dev).to(torch.bfloat16) @ w_in)
        for w in ws:
            y = torch.relu(y @ w)
        acc += y.float().mean()
        nvtx.range_pop()
    torch.cuda.synchronize()
    return float(acc)


def allocator_churn(steps: int):
    assert os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096),
                                torch.nn.GELU(), torch.nn.Linear(4096, 1024)).to(dev, torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    t = torch.randn(2048, 1024, device=dev, dtype=torch.bfloat16)
    for s in range(steps):
        nvtx.range_push("step")
        loss = torch.nn.functional.mse_loss(model(x).float(), t.float())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)                      # gradients freed and allocated again each step
        nvtx.range_pop()
    torch.cuda.synchronize()
    return float(loss)


WORKLOADS = {"overlapped_copies": (overlapped_copies, 40), "library_nvtx": (library_nvtx, 60),
             "dataloader_wait": (dataloader_wait, 120), "allocator_churn": (allocator_churn, 100)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=None)
    a = ap.parse_args(argv)
    fn, default_steps = WORKLOADS[a.workload]
    steps = a.steps or default_steps
    torch.ones(1, device="cuda")          # context creation before the timed loop
    t0 = time.time()
    fn(steps)
    dt = time.time() - t0
    print(f"{a.workload}: {steps} steps in {dt:.2f}s ({dt / steps * 1e3:.1f} ms/step)", file=sys.stderr)


if __name__ == "__main__":
    main()
