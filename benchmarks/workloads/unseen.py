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
gil_contention, nvtx_phases, dataloader_healthy, ddp_tiny_batch, small_h2d_copies, cpu_side_math,
    request_queue: see each function's docstring.
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


def gil_contention(steps=8):
    """Two background Python threads run pure-Python loops (a metrics / logging thread gone wrong) while
    the main thread launches the step's work: the main thread waits for the GIL."""
    import threading
    stop = threading.Event()

    def chatter():
        n = 0
        while not stop.is_set():
            for i in range(20000):
                n += i * i

    threads = [threading.Thread(target=chatter, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    x = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    w = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    for _ in range(steps):
        nvtx.range_push("step")
        y = x
        for _ in range(30):
            y = torch.tanh(y @ w)
        nvtx.range_pop()
    torch.cuda.synchronize()
    stop.set()


def nvtx_phases(steps=60):
    """A healthy training step marked with NVTX forward / backward / optimizer ranges and no outer step range."""
    model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(6)]).to(dev, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for _ in range(steps):
        nvtx.range_push("forward")
        loss = model(x).float().square().mean()
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        nvtx.range_pop()
    torch.cuda.synchronize()


class _Items(torch.utils.data.Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        import numpy as np
        a = np.random.default_rng(i).standard_normal((256, 1024), dtype=np.float32)
        return torch.from_numpy(a)


def dataloader_healthy(steps=120):
    """A DataLoader whose 4 workers keep up (~1 ms of numpy per batch) with ~8 ms of GPU work a step,
    pinned memory, non-blocking copies: no data-I/O bottleneck."""
    loader = torch.utils.data.DataLoader(_Items(), batch_size=None, num_workers=4, pin_memory=True,
                                         prefetch_factor=4, persistent_workers=True)
    w = torch.randn(1024, 8192, device=dev, dtype=torch.bfloat16)
    w2 = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    it = iter(loader)
    for _ in range(steps):
        nvtx.range_push("step")
        b = next(it).to(dev, non_blocking=True).to(torch.bfloat16)
        y = b @ w
        for _ in range(40):
            y = torch.relu(y @ w2)
        nvtx.range_pop()
    torch.cuda.synchronize()


def ddp_tiny_batch(steps=40):
    """torchrun --nproc-per-node=2: DDP over a 400 M-parameter bf16 MLP with a batch of 8 rows, so each
    step's gradient all-reduce (0.8 GB) takes far longer than its compute: comm-bound."""
    import os
    import torch.distributed as dist
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    model = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(6)]).to("cuda", torch.bfloat16)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(8, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(steps):
        nvtx.range_push("step")
        ddp(x).float().square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        nvtx.range_pop()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def small_h2d_copies(steps=100):
    """Each step moves a batch held as 200 small CPU tensors (1 KiB each, pageable) to the GPU one by one
    (a dict of per-sample metadata, a list of small arrays), then runs ~1 ms of bf16 matmuls."""
    cpu = [torch.randn(256) for _ in range(200)]
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for _ in range(steps):
        nvtx.range_push("step")
        parts = [t.to(dev) for t in cpu]
        y = torch.stack(parts).sum() * w
        for _ in range(4):
            y = y @ w
        nvtx.range_pop()
    torch.cuda.synchronize()


def cpu_side_math(steps=30):
    """Each step copies a 64 MB result to the host and transforms it with multi-threaded torch CPU ops
    (intra-op threads: OpenMP) before copying it back: the GPU waits while the host computes."""
    w = torch.randn(4096, 4096, device=dev)
    buf = torch.empty(4096, 4096, pin_memory=True)
    for _ in range(steps):
        nvtx.range_push("step")
        y = torch.tanh(w @ w)
        buf.copy_(y)
        z = buf
        for _ in range(4):
            z = torch.tanh(z) * 0.5 + z.abs().sqrt()
        w.copy_(z.to(dev, non_blocking=True))
        nvtx.range_pop()
    torch.cuda.synchronize()


def request_queue(requests=400):
    """An inference loop fed by a producer thread through queue.Queue: a request every ~4 ms, each
    served in ~0.3 ms of GPU work; the serving thread waits on the queue (input-bound)."""
    import queue
    import threading
    q: queue.Queue = queue.Queue()

    def produce():
        for i in range(requests):
            time.sleep(0.004)
            q.put(torch.randn(64, 4096))
        q.put(None)

    threading.Thread(target=produce, daemon=True).start()
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    while (x := q.get()) is not None:
        y = x.to(dev, non_blocking=True).to(torch.bfloat16)
        for _ in range(8):
            y = torch.relu(y @ w)
    torch.cuda.synchronize()


WORKLOADS = {f.__name__: f for f in [cpu_side_math, request_queue, small_h2d_copies, sleepy_host, tiny_inference, checkpoint_spikes, busy_no_nvtx, gil_contention,
                                      nvtx_phases, dataloader_healthy, ddp_tiny_batch]}

if __name__ == "__main__":
    name = sys.argv[1]
    torch.manual_seed(0)
    if not name.startswith("ddp_"):
        torch.ones(1, device=dev)   # context init before the timed part
    t0 = time.time()
    WORKLOADS[name]()
    torch.cuda.synchronize()
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)
