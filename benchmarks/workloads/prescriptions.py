"""Before/after pairs for code-level prescriptions (issue 46), and long real profiles for the speed
benchmarks (issue 47), run on a real GPU to make fixtures and to measure each fix.

    python benchmarks/workloads/prescriptions.py NAME [nsys|kineto]

Each step is an NVTX range ``step`` (``pairs.py``'s convention); training steps hold the nested
ranges ``forward``, ``backward`` and ``optimizer`` as users annotate them. Every ``*_fixed`` workload is
its base workload with one piece of advice applied and nothing else changed. The measured gain of a
pair is ``../shared/tools/check/step_time.py`` on the two SQLite exports (the end of the GPU work each
step launched, mean from the third step).

optimizer / optimizer_fixed: a 48-block MLP (Linear, LayerNorm, GELU; 192 parameter tensors) trained
    with ``AdamW(foreach=False)``: one small kernel per parameter per operation, ~2,000 a step in the
    ``optimizer`` range; fixed: ``AdamW(fused=True)``.
resnet_layout / resnet_layout_fixed: torchvision ResNet-50, bf16 autocast, batch 128, the default NCHW
    layout (cuDNN converts layouts around its tensor-core convolutions); fixed: ``channels_last`` for
    the model and the input.
d2h_metric / d2h_metric_fixed: a classifier whose 8192 x 512 fp32 softmax (16 MB) is copied to the
    host every step (``.cpu().numpy()``: pageable, an implicit sync) for numpy metrics (accuracy,
    entropy); fixed: the metrics computed on the GPU and read once at the end.
checkpoint / checkpoint_fixed / checkpoint_rare: a 1 GiB bf16 model (8 x 8192^2) saved with
    ``torch.save(model.state_dict())`` every 5 steps, between the step ranges; fixed: an asynchronous
    checkpoint (a pinned copy on a side stream, the file written by a thread); rare: every 25 steps.
loader_between / loader_between_fixed: a ``DataLoader(num_workers=0)`` whose batches take ~8 ms of
    numpy each, fetched outside the annotated training step (only the step is an NVTX range);
    fixed: ``num_workers=8, pin_memory=True`` and a ``non_blocking`` copy.
hf_llama / hf_llama_fixed: a transformers ``LlamaForCausalLM`` (random weights from a config: 8 layers,
    hidden 1024, seq 512, batch 8) trained eagerly in bf16 autocast with fused AdamW; fixed:
    ``torch.compile(model)`` (compiled before the first step).
block_stack / block_stack_fixed: a plain stack of 8 RMSNorm + SwiGLU blocks (dim 2048, 8 x 1024 tokens,
    bf16 autocast); fixed: ``torch.compile``.
infer_graph / infer_graph_fixed: batch-1 inference of a small decoder (8 layers, dim 512, 64 tokens),
    weights uploaded from the host; fixed: the forward captured once in a CUDA graph and replayed.
infer_nonvtx: ``infer_graph`` without any NVTX range (the steady state must be found from the kernels).
decode_generate: transformers ``generate()`` at batch 1, 6 requests x 128 new tokens of a 16-layer Llama
    (an NVTX range ``request`` each): 500 k+ kernels (issue 47's long profile).
llama_autograd: ``hf_llama`` profiled with ``--pytorch=autograd-nvtx`` (the playbook's template B).
multistream: 4 streams of GEMM + elementwise chains a step, joined by events.
effnet_layout / effnet_layout_fixed: torchvision EfficientNet-B0, bf16 autocast, batch 128, NCHW (PyTorch's
    NCHW batch-norm and depthwise-convolution kernels, few conversions); fixed: ``channels_last``.
resnet_compile / resnet_compile_fixed: ResNet-50 in channels_last (``resnet_layout_fixed``'s code); fixed:
    also ``torch.compile(model)``, compiled before the first measured step.
effnet_compile / effnet_compile_fixed: EfficientNet-B0 in channels_last (``effnet_layout_fixed``'s code);
    fixed: also ``torch.compile(model)``.
hand_attention / hand_attention_fixed: 8 pre-norm transformer blocks (dim 1024, 16 heads, 4 x 2048 tokens, bf16)
    whose attention is written by hand (scores, causal mask, softmax, dropout, weighted sum); fixed:
    ``F.scaled_dot_product_attention`` (flash attention).
loss_item / loss_item_fixed: 8 SwiGLU blocks (dim 1024, 2 x 512 tokens) whose loss is read with ``.item()`` every
    step; fixed: the losses summed on the GPU and read every 20 steps.
"""
from __future__ import annotations

import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pairs import Batches, kineto, step_begin, step_end  # noqa: E402  (kineto: the same Chrome-trace schedule)

dev = torch.device("cuda")
nvtx = torch.cuda.nvtx
BF16 = dict(device_type="cuda", dtype=torch.bfloat16)


class Phase:
    """An NVTX range of a phase nested in the step (``forward``, ``backward``, ``optimizer``)."""
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        nvtx.range_push(self.name)

    def __exit__(self, *exc):
        nvtx.range_pop()


def train_step(model, opt, batch, loss_fn):
    with Phase("forward"), torch.autocast(**BF16):
        loss = loss_fn(model, batch)
    with Phase("backward"):
        loss.backward()
    with Phase("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)
    return loss


def _mse(model, x):
    return model(x).float().square().mean()


# -- fused optimizer -------------------------------------------------------------------------------
def optimizer(steps=30, fixed=False):
    blocks = []
    for _ in range(48):
        blocks += [nn.Linear(768, 768), nn.LayerNorm(768), nn.GELU()]
    model = nn.Sequential(*blocks).to(dev)
    kw = {"fused": True} if fixed else {"foreach": False}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)
    x = torch.randn(512, 768, device=dev)
    _train(model, opt, x, _mse, steps, False)


# -- channels_last ----------------------------------------------------------------------------------
def resnet_layout(steps=25, fixed=False):
    import torchvision
    model = torchvision.models.resnet50().to(dev)
    x = torch.randn(128, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (128,), device=dev)
    if fixed:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, opt, x, lambda m, b: F.cross_entropy(m(b), y), steps, False)


# -- a per-step device-to-host copy for host-side metrics -------------------------------------------
def d2h_metric(steps=40, fixed=False):
    model = nn.Sequential(nn.Linear(1024, 8192), nn.GELU(), nn.Linear(8192, 8192), nn.GELU(),
                          nn.Linear(8192, 8192), nn.GELU(), nn.Linear(8192, 512)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(8192, 1024, device=dev)
    labels = torch.randint(0, 512, (8192,), device=dev)
    labels_np = labels.cpu().numpy()
    correct, ent_sum = (torch.zeros((), device=dev), torch.zeros((), device=dev)) if fixed else (0, 0.0)
    for _ in range(steps):
        step_begin()
        with Phase("forward"), torch.autocast(**BF16):
            logits = model(x)
            loss = F.cross_entropy(logits.float(), labels)
        with Phase("backward"):
            loss.backward()
        with Phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        with Phase("metrics"):
            probs = logits.detach().float().softmax(-1)            # 8192 x 512 fp32: 16 MB
            if fixed:
                correct += (probs.argmax(1) == labels).sum()
                ent_sum += -(probs * torch.log(probs + 1e-9)).sum(1).mean()
            else:
                p = probs.cpu().numpy()                            # pageable D2H, waits for the step
                correct += int((p.argmax(1) == labels_np).sum())
                ent_sum += float(-(p * np.log(p + 1e-9)).sum(1).mean())
                top5 = np.argpartition(-p, 5, axis=1)[:, :5]
                ent_sum += 0.0 * float((top5 == labels_np[:, None]).any(1).mean())
        step_end()
    if fixed:
        correct, ent_sum = int(correct), float(ent_sum)
    torch.cuda.synchronize()


# -- checkpoints --------------------------------------------------------------------------------------
def _big_model():
    model = nn.Sequential(*[nn.Linear(8192, 8192, bias=False) for _ in range(8)]).to(dev, torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6, foreach=True)
    x = torch.randn(4096, 8192, device=dev, dtype=torch.bfloat16)
    return model, opt, x


class AsyncCheckpoint:
    """A pinned copy of the weights on a side stream, written to disk by a thread; the next optimizer
    step waits for the copy (not for the write)."""
    def __init__(self, model, path):
        self.path, self.model = path, model
        self.pinned = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for k, v in model.state_dict().items()}
        self.side, self.done = torch.cuda.Stream(), None
        self.pool, self.pending = ThreadPoolExecutor(1), None

    def save(self):
        if self.pending is not None:
            self.pending.result()                 # the pinned buffers are free again
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            for k, v in self.model.state_dict().items():
                self.pinned[k].copy_(v, non_blocking=True)
            self.done = torch.cuda.Event()
            self.done.record(self.side)
        ev = self.done
        self.pending = self.pool.submit(lambda: (ev.synchronize(), torch.save(self.pinned, self.path)))

    def before_update(self):
        if self.done is not None:
            torch.cuda.current_stream().wait_event(self.done)

    def close(self):
        if self.pending is not None:
            self.pending.result()


def checkpoint(steps=30, fixed=False, every=5):
    model, opt, x = _big_model()
    path = "/tmp/ckpt_presc.pt"
    ck = AsyncCheckpoint(model, path) if fixed else None
    for s in range(steps):
        step_begin()
        with Phase("forward"):
            loss = model(x).float().square().mean()
        with Phase("backward"):
            loss.backward()
        with Phase("optimizer"):
            if ck:
                ck.before_update()
            opt.step()
            opt.zero_grad(set_to_none=True)
        step_end()
        if (s + 1) % every == 0:
            if ck:
                ck.save()
            else:
                torch.save(model.state_dict(), path)
    if ck:
        ck.close()
    torch.cuda.synchronize()


def checkpoint_rare(steps=30, fixed=False):
    checkpoint(steps, fixed=False, every=25)


# -- DataLoader outside the annotated step ------------------------------------------------------------
def loader_between(steps=100, fixed=False):
    w_in = torch.randn(1024, 8192, device=dev, dtype=torch.bfloat16) * 0.03
    ws = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(3)]
    kw = dict(num_workers=8, pin_memory=True, prefetch_factor=4, persistent_workers=True) if fixed else {}
    loader = torch.utils.data.DataLoader(Batches(steps), batch_size=None, shuffle=False, **kw)
    acc = torch.zeros((), device=dev)
    for xb in loader:                         # the batch is made here, outside the step range
        step_begin()
        xb = xb.to(dev, non_blocking=fixed)
        y = torch.relu(xb.to(torch.bfloat16) @ w_in)
        for _ in range(8):                    # 24 GEMMs of 1024 x 8192 x 8192: ~4 ms of GPU work
            for w in ws:
                y = torch.relu(y @ w)
        acc += y.float().mean()
        step_end()
    torch.cuda.synchronize()


# -- a real HF model, eager vs compiled --------------------------------------------------------------------
def _llama(layers=8, hidden=1024, inter=2816, heads=16):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=heads, vocab_size=32000, max_position_embeddings=2048)
    return LlamaForCausalLM(cfg).to(dev)


def hf_llama(steps=25, fixed=False):
    model = _llama()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, 32000, (8, 512), device=dev)

    def loss_fn(m, b):
        return m(input_ids=b, labels=b).loss
    _train(model, opt, ids, loss_fn, steps, fixed)   # fixed: compiled (and warm) before the first step


def llama_autograd(steps=12, fixed=False):
    hf_llama(steps, fixed=False)


# -- a plain RMSNorm + SwiGLU stack -------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.w


class SwiGLUBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.norm, self.gate, self.up, self.down = RMSNorm(d), nn.Linear(d, h, bias=False), nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)

    def forward(self, x):
        y = self.norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def block_stack(steps=30, fixed=False):
    model = nn.Sequential(*[SwiGLUBlock(2048, 5632) for _ in range(8)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    x = torch.randn(8, 1024, 2048, device=dev)
    _train(model, opt, x, _mse, steps, fixed)


def _train(model, opt, x, loss, steps, compiled):
    """``steps`` NVTX steps of ``train_step``; ``compiled``: ``torch.compile(model)`` first, compiled by two
    steps outside the NVTX steps."""
    if compiled:
        model = torch.compile(model)
        for _ in range(2):
            train_step(model, opt, x, loss)
        torch.cuda.synchronize()
    for _ in range(steps):
        step_begin()
        train_step(model, opt, x, loss)
        step_end()
    torch.cuda.synchronize()


# -- batch-1 inference, CUDA graph ----------------------------------------------------------------------
class Attn(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.out, self.norm = heads, nn.Linear(d, 3 * d), nn.Linear(d, d), RMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.norm2 = RMSNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.out(a)
        return x + self.mlp(self.norm2(x))


def _decoder():
    model = nn.Sequential(*[Attn(512, 8) for _ in range(8)], nn.Linear(512, 8192))   # built on the host
    return model.to(dev).eval()                                                    # one copy per tensor


def infer_graph(steps=300, fixed=False, annotate=True):
    model = _decoder()
    x = torch.randn(1, 64, 512, device=dev)
    out = None
    with torch.inference_mode():
        if fixed:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = model(x)
        acc = torch.zeros((), device=dev)
        for _ in range(steps):
            if annotate:
                step_begin()
            if fixed:
                g.replay()
                y = out
            else:
                y = model(x)
            acc += y[0, -1, 0]
            if annotate:
                step_end()
    torch.cuda.synchronize()


def infer_nonvtx(steps=300, fixed=False):
    infer_graph(steps, fixed=False, annotate=False)


# -- long profiles for the speed benchmarks ------------------------------------------------------------------
def decode_generate(requests=6, fixed=False):
    model = _llama(layers=16).eval()
    ids = torch.randint(3, 32000, (1, 32), device=dev)
    with torch.inference_mode():
        for r in range(requests):
            nvtx.range_push("request")
            model.generate(ids, max_new_tokens=128, min_new_tokens=128, do_sample=False, pad_token_id=0)
            nvtx.range_pop()
    torch.cuda.synchronize()


def multistream(steps=40, fixed=False):
    streams = [torch.cuda.Stream() for _ in range(4)]
    xs = [torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    w = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16) * 0.02
    main = torch.cuda.current_stream()
    for _ in range(steps):
        step_begin()
        done = []
        for st, x in zip(streams, xs):
            st.wait_stream(main)
            with torch.cuda.stream(st):
                y = x
                for _ in range(20):
                    y = torch.tanh(y @ w) * 1.01 + 0.01
                ev = torch.cuda.Event()
                ev.record(st)
                done.append(ev)
        for ev in done:
            main.wait_event(ev)
        step_end()
    torch.cuda.synchronize()


# -- torch.compile on conv nets, and channels_last on a second conv net ---------------------------------
def _conv_train(arch, batch, steps, channels_last, compiled):
    """A torchvision classifier trained in bf16 autocast with SGD; ``compiled``: ``torch.compile(model)``,
    compiled (two steps) before the first measured step."""
    import torchvision
    model = getattr(torchvision.models, arch)().to(dev)
    x = torch.randn(batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def loss(m, b):
        return F.cross_entropy(m(b), y)
    _train(model, opt, x, loss, steps, compiled)


def resnet_compile(steps=25, fixed=False):
    """ResNet-50 in channels_last (resnet_layout_fixed's run); fixed: also ``torch.compile``."""
    _conv_train("resnet50", 128, steps, True, fixed)


def effnet_layout(steps=25, fixed=False):
    """EfficientNet-B0, batch 128, NCHW; fixed: ``channels_last`` for the model and the input."""
    _conv_train("efficientnet_b0", 128, steps, fixed, False)


def effnet_compile(steps=25, fixed=False):
    """EfficientNet-B0 in channels_last (effnet_layout_fixed's run); fixed: also ``torch.compile``."""
    _conv_train("efficientnet_b0", 128, steps, True, fixed)


# -- attention written by hand -------------------------------------------------------------------------
class HandAttnBlock(nn.Module):
    """A pre-norm transformer block whose attention is written out (scores, causal mask, softmax, dropout,
    weighted sum), as many models still do; ``sdpa``: ``F.scaled_dot_product_attention`` instead."""

    def __init__(self, d, heads, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1)
        else:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
            a = F.dropout(F.softmax(s, dim=-1), p=0.1) @ v
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


def hand_attention(steps=20, fixed=False):
    """8 blocks, dim 1024, 16 heads, 4 x 2048 tokens, bf16 autocast, fused AdamW; the attention by hand;
    fixed: ``F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1)`` (flash attention)."""
    model = nn.Sequential(*[HandAttnBlock(1024, 16, fixed) for _ in range(8)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    x = torch.randn(4, 2048, 1024, device=dev)
    _train(model, opt, x, _mse, steps, False)


# -- the loss read every step for logging --------------------------------------------------------------
def loss_item(steps=60, fixed=False):
    """8 RMSNorm + SwiGLU blocks (dim 1024, 2 x 512 tokens, bf16, fused AdamW) whose loss is read with
    ``loss.item()`` after every step for a log line (a sync: the GPU's queue drains each step); fixed: the
    losses summed on the GPU and read once every 20 steps."""
    model = nn.Sequential(*[SwiGLUBlock(1024, 2816) for _ in range(8)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    x = torch.randn(2, 512, 1024, device=dev)
    total, logged = torch.zeros((), device=dev), []
    for i in range(steps):
        step_begin()
        loss = train_step(model, opt, x, _mse)
        if fixed:
            total += loss.detach()
            if (i + 1) % 20 == 0:
                logged.append(total.item() / 20)
                total.zero_()
        else:
            logged.append(loss.item())
        step_end()
    torch.cuda.synchronize()


BASE = [optimizer, resnet_layout, d2h_metric, checkpoint, loader_between, hf_llama, block_stack, infer_graph,
        resnet_compile, effnet_layout, effnet_compile, hand_attention, loss_item]
SINGLE = [checkpoint_rare, infer_nonvtx, decode_generate, llama_autograd, multistream]
WORKLOADS = {**{f.__name__: (f, False) for f in BASE}, **{f"{f.__name__}_fixed": (f, True) for f in BASE},
             **{f.__name__: (f, False) for f in SINGLE}}


if __name__ == "__main__":
    name, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "nsys")
    fn, fixed = WORKLOADS[name]
    torch.manual_seed(0)
    if name != "infer_nonvtx":
        torch.ones(1, device=dev)   # context creation before the first step
    t0 = time.time()
    if mode == "kineto":
        kineto(fn, fixed)
    else:
        fn(fixed=fixed)
    print(f"{name} done in {time.time() - t0:.2f}s", file=sys.stderr)
