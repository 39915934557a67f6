"""The scenarios: each builds a model, a feed and a trainer (or a decoding loop) from the modules of
this application. ``NAME_fixed`` differs from ``NAME`` by one piece of advice.

Planted where (the line a finding should name):
- moe_mask: ``models.py`` ``MoELayer._dispatch_by_mask``, ``tokens = flat[mask]`` (and the two mask
  indexes after it): a nonzero and a device-to-host sync per expert per layer, forward and backward;
  fixed: ``capacity_factor=1.25`` (fixed-capacity dispatch with ``topk`` / ``index_add_``, no sync).
- step_timer: ``callbacks.py`` ``StepTimer.on_step_end``, ``torch.cuda.synchronize()`` then a JSON log
  record of the step's time made on the host every step; fixed: CUDA events, read every 50 steps.
- janitor: ``callbacks.py`` ``MemoryJanitor.on_step_end``, ``torch.cuda.empty_cache()`` every step;
  fixed: the janitor disabled.
- zero_grad: ``trainer.py`` ``Trainer.train_step``, ``zero_grad(set_to_none=False)`` on a 258-tensor
  model with the default (for-each) AdamW; fixed: ``set_to_none=True``.
- cudnn_bench: a conv net of odd widths (channels_last, bf16) with ``cudnn.benchmark`` off (the
  default); fixed: ``torch.backends.cudnn.benchmark = True``.
- vocab_align: an LM head of 50,257 outputs (GPT-2's vocabulary); fixed: padded to 50,304 (a multiple
  of 64).
- pageable_input: 50 MB image batches from DataLoader workers in pageable memory, copied with a plain
  ``.to(device)`` on the compute stream when needed (``data.py`` ``DeviceFeed``); fixed: ``pin_memory``
  and a ``non_blocking`` copy one step ahead on a side stream.
- kv_cat: decoding (batch 32, 768-token prompt, 256 new tokens) with a key / value cache grown by
  ``torch.cat`` each token (``decode.py`` ``CatCache.update``); fixed: a preallocated static cache.
- gc_pause: a 2 M-object index built at start-up and 20 k per-sample records kept each step
  (``callbacks.py`` ``SampleLog``): the collector's full collections walk the whole heap; fixed:
  ``gc.freeze()`` after start-up (``FreezeHeap``).
- host_after_sync: a ``StepTimer`` sync each step, then the next image batch made with numpy on the
  training thread (``DataLoader(num_workers=0)``, ``data.py`` ``ImageBatches.__getitem__``); fixed:
  ``num_workers=4, pin_memory=True`` (the sync stays).
- loss_callback: ``callbacks.py`` ``LossLogger.on_step_end``, ``loss.item()`` every step.
- conv_nchw: ``build_conv`` makes the conv net in the default NCHW layout (cuDNN converts layouts).
- hand_attention: ``models.py`` ``HandAttention.forward``, attention written out by hand.
- metrics_cpu: ``callbacks.py`` ``Metrics.on_step_end``, ``.cpu()`` of the logits every step.
- mem_pressure: a GPU-resident uint8 image store (``data.GpuImageStore``) sized to leave the step's
  measured peak plus ``MEM_MARGIN`` (0 %) and 64 MB free, and crops converted to float one sample at a time
  (``data.CropFeed``, ``per_sample=True``): the small tensors fill the caching allocator's small pool,
  whose cached blocks cannot serve the step's large activations; the allocator runs out, frees its cache
  (``cudaFree``, a device sync) and allocates again, every step; fixed: the uint8 crops stacked and
  converted as one batch. mem_expand: the same; fixed: ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
- doc_pad (issue 54, written after batch-per-sample, to test it on code it was not built on): documents of a
  GPU-resident corpus padded into each batch one at a time (``data.py`` ``DocumentCorpus.batches``: a slice,
  ``F.pad`` and ``.long()`` per document, 256 a batch); fixed: one gather and one ``torch.where`` per batch.
- cudnn_net: a net of ``vision.py`` (``CUDNN_NET``: the one ``cudnn_sweep.py`` found the most gain on)
  with ``cudnn.benchmark`` off; fixed: on.
- compile_mlp / compile_encoder: the MLP language model / an SDPA encoder in eager mode; fixed:
  ``torch.compile(model)``.
- compile_loss: compile_mlp's model and loss (cross-entropy over the fp32 logits) in eager mode; fixed: the
  loss function compiled (``torch.compile(lm_loss)``), the model left eager.
- vocab_pad: an SDPA encoder with a vocabulary of 32,001 (a pad token added to 32,000); fixed: the
  embedding and head padded to 32,064.
- zero_grad_moe: the fixed-capacity MoE model with ``zero_grad(set_to_none=False)`` and for-each
  AdamW; fixed: ``set_to_none=True``.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

import callbacks as cb
import data
import models
from trainer import Trainer, class_loss, lm_loss, shift_tokens

dev = torch.device("cuda")


def steps(default):
    return int(os.environ.get("STEPS", default))


def adamw(model, **kw):
    return torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)


def token_feed(n, batch, seq, vocab):
    return data.DeviceFeed(data.loader(data.TokenBatches(n + 4, batch, seq, vocab)), dev)


def gpu_images(n, batch, size, classes=100):
    x = torch.randn(batch, 3, size, size, device=dev).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (batch,), device=dev)
    return [(x, y)] * (n + 4)


def build_conv(channels_last=True):
    model = models.ConvNet().to(dev)
    return model.to(memory_format=torch.channels_last) if channels_last else model


def lm_run(model, n, batch, seq, vocab, extra=(), **trainer_kw):
    callbacks = [cb.NvtxSteps(), *extra]
    trainer = Trainer(model, adamw(model, fused=True), lm_loss, callbacks, split=shift_tokens, **trainer_kw)
    trainer.fit(token_feed(n, batch, seq, vocab), n)


def conv_run(model, feed, n, extra=(), optimizer=None):
    trainer = Trainer(model, optimizer or adamw(model, fused=True), class_loss, [cb.NvtxSteps(), *extra])
    trainer.fit(feed, n)


def moe_mask(fixed):
    model = models.MoEModel(capacity_factor=1.25 if fixed else None).to(dev)
    lm_run(model, steps(20), 8, 512, 8192, [cb.LossLogger(every=20)])


def step_timer(fixed):
    model = models.MLPLanguageModel(32768, d=1024, layers=4).to(dev)
    lm_run(model, steps(30), 16, 512, 32768, [cb.StepTimer(events=fixed)])


def janitor(fixed):
    model = models.MLPLanguageModel(32768, d=1024, layers=4).to(dev)
    lm_run(model, steps(30), 16, 512, 32768, [cb.MemoryJanitor(enabled=not fixed)])


def zero_grad(fixed):
    model = models.DeepMLP(d=256, layers=64).to(dev)
    x = torch.randn(256, 256, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    trainer = Trainer(model, adamw(model), class_loss, [cb.NvtxSteps()], set_to_none=fixed)
    trainer.fit([(x, y)] * 200, steps(40))


def cudnn_bench(fixed):
    torch.backends.cudnn.benchmark = fixed
    n = steps(30)
    conv_run(build_conv(), gpu_images(n, 128, 128), n)


def vocab_align(fixed):
    vocab = 50304 if fixed else 50257
    model = models.MLPLanguageModel(vocab, d=1024, layers=1).to(dev)
    lm_run(model, steps(40), 8, 512, 50257)


def pageable_input(fixed):
    torch.backends.cudnn.benchmark = True
    n = steps(40)
    batches = data.loader(data.ImageBatches(n + 4, 256, 128), workers=4, pin=fixed)
    conv_run(build_conv(), data.DeviceFeed(batches, dev, prefetch=fixed), n)


def host_after_sync(fixed):
    torch.backends.cudnn.benchmark = True
    n = steps(40)
    batches = data.loader(data.ImageBatches(n + 4, 64, 96, work_rounds=1), workers=4 if fixed else 0, pin=fixed)
    conv_run(build_conv(), data.DeviceFeed(batches, dev), n, [cb.StepTimer()])


def gc_pause(fixed):
    index = data.TokenIndex(2_000_000)          # start-up objects that live for the whole run
    model = models.DeepMLP(d=512, layers=16).to(dev)
    x = torch.randn(1024, 512, device=dev)
    y = torch.randint(0, 10, (1024,), device=dev)
    extra = [cb.FreezeHeap()] if fixed else []
    trainer = Trainer(model, adamw(model, fused=True), class_loss, [*extra, cb.NvtxSteps(), cb.SampleLog()])
    trainer.fit([(x, y)] * 400, steps(60))
    return index


def kv_cat(fixed):
    from decode import Decoder, generate
    model = Decoder().to(dev, torch.bfloat16).eval()
    prompt = torch.randint(0, 32000, (32, 768), device=dev)
    generate(model, prompt[:, :64], 8, static=fixed)          # warm-up
    torch.cuda.synchronize()

    def mark(what, i):
        if what == "begin":
            torch.cuda.nvtx.range_push("decode_step")
        else:
            torch.cuda.nvtx.range_pop()
            if cb.NvtxSteps.step_hook:
                cb.NvtxSteps.step_hook()
    generate(model, prompt, steps(256), static=fixed, on_token=mark)
    torch.cuda.synchronize()


def loss_callback(fixed):
    model = models.MLPLanguageModel(32768, d=1024, layers=4).to(dev)
    lm_run(model, steps(40), 4, 512, 32768, [cb.LossLogger(every=20 if fixed else 1)])


def conv_nchw(fixed):
    torch.backends.cudnn.benchmark = True
    n = steps(30)
    x, y = gpu_images(n, 128, 128)[0]
    if not fixed:
        x = x.contiguous()
    conv_run(build_conv(channels_last=fixed), [(x, y)] * (n + 4), n)


def hand_attention(fixed):
    model = models.Encoder(d=1024, heads=16, layers=4).to(dev)
    if fixed:
        for blk in model.blocks:
            blk.attn = models.SdpaAttention(1024, 16).to(dev)
    lm_run(model, steps(30), 4, 1024, 8192)


def metrics_cpu(fixed):
    torch.backends.cudnn.benchmark = True
    n = steps(40)
    conv_run(build_conv(), gpu_images(n, 128, 112), n, [cb.Metrics(on_gpu=fixed)])


ALLOC_CONF = {"mem_expand_fixed": "expandable_segments:True"}   # set before CUDA starts (run.py)


def sdpa_encoder(d=1024, heads=16, layers=4, vocab=8192):
    model = models.Encoder(d=d, heads=heads, layers=layers, vocab=vocab)
    for blk in model.blocks:
        blk.attn = models.SdpaAttention(d, heads)
    return model.to(dev)


def mem_pressure(fixed):
    """A GPU-resident uint8 image store sized to leave the step's measured peak plus ``MEM_MARGIN`` (0 %) and 64 MB
    free; each batch's crops are converted one sample at a time (``CropFeed(per_sample=True)``)."""
    torch.backends.cudnn.benchmark = True
    model = build_conv()
    optimizer = adamw(model, fused=True)
    trainer = Trainer(model, optimizer, class_loss, [cb.NvtxSteps()])
    batch, crop = 1024, 160
    probe = data.GpuImageStore(1 << 62, dev)            # the smallest store, to measure the step's peak
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    for b in data.CropFeed(probe, 2, batch, crop):
        trainer.train_step(b)
    need = torch.cuda.max_memory_allocated() - base
    del probe
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    margin = float(os.environ.get("MEM_MARGIN", "1.0"))
    store = data.GpuImageStore(need * margin + (64 << 20), dev)
    n = steps(30)
    trainer.fit(data.CropFeed(store, n + 4, batch, crop, per_sample=not fixed), n)
    stats = torch.cuda.memory_stats()
    print(f"mem_pressure: store {store.count} images, step need {need / 2**30:.2f} GiB, "
          f"alloc retries {stats.get('num_alloc_retries')}, ooms {stats.get('num_ooms')}", file=sys.stderr)


def mem_expand(fixed):
    """mem_pressure's per-sample crops; fixed: the same code with ``expandable_segments`` (ALLOC_CONF)."""
    mem_pressure(False)


def cudnn_net(fixed):
    import vision
    torch.backends.cudnn.benchmark = fixed
    model, x, y = vision.build(os.environ.get("CUDNN_NET", "unet"), dev)
    loss = (lambda out, b: F.mse_loss(out.float(), b[1])) if x.shape == y.shape else class_loss
    n = steps(30)
    trainer = Trainer(model, adamw(model, fused=True), loss, [cb.NvtxSteps()])
    trainer.fit([(x, y)] * (n + 4), n)


def compile_mlp(fixed):
    model = models.MLPLanguageModel(32768, d=1024, layers=4).to(dev)
    lm_run(torch.compile(model) if fixed else model, steps(30), 16, 512, 32768)


def compile_encoder(fixed):
    model = sdpa_encoder()
    lm_run(torch.compile(model) if fixed else model, steps(30), 8, 1024, 8192)


def compile_loss(fixed):
    model = models.MLPLanguageModel(32768, d=1024, layers=4).to(dev)
    n = steps(30)
    trainer = Trainer(model, adamw(model, fused=True), torch.compile(lm_loss) if fixed else lm_loss, [cb.NvtxSteps()],
                      split=shift_tokens)
    trainer.fit(token_feed(n, 16, 512, 32768), n)


def vocab_pad(fixed):
    model = sdpa_encoder(vocab=32064 if fixed else 32001)
    lm_run(model, steps(30), 8, 1024, 32001)


def doc_pad(fixed):
    """Language-model training on documents of a GPU-resident corpus, padded into a batch one document at a
    time (``data.DocumentCorpus.batches``, ``per_document=True``); fixed: one gather and one mask per batch."""
    corpus = data.DocumentCorpus(64 << 20, 8192, dev)
    model = models.MLPLanguageModel(8192, d=768, layers=2).to(dev)
    n = steps(30)
    trainer = Trainer(model, adamw(model, fused=True), lm_loss, [cb.NvtxSteps()], split=shift_tokens)
    trainer.fit(corpus.batches(n + 4, 256, per_document=not fixed), n)


def zero_grad_moe(fixed):
    model = models.MoEModel(capacity_factor=1.25).to(dev)
    trainer = Trainer(model, adamw(model), lm_loss, [cb.NvtxSteps()], split=shift_tokens, set_to_none=fixed)
    trainer.fit(token_feed(steps(30), 8, 256, 8192), steps(30))


NAMES = ["moe_mask", "step_timer", "janitor", "zero_grad", "cudnn_bench", "vocab_align", "pageable_input",
         "host_after_sync", "gc_pause", "kv_cat", "loss_callback", "conv_nchw", "hand_attention", "metrics_cpu",
         "mem_pressure", "mem_expand", "cudnn_net", "compile_mlp", "compile_encoder", "compile_loss", "vocab_pad", "zero_grad_moe", "doc_pad"]
