"""Trainer callbacks: what a training code base hangs on its loop (logging, timing, memory, metrics)."""
from __future__ import annotations

import collections
import gc
import json
import time

import numpy as np
import torch


class Callback:
    def on_train_start(self, trainer):
        pass

    def on_step_start(self, trainer, step):
        pass

    def on_step_end(self, trainer, step, loss, output, batch):
        pass

    def on_train_end(self, trainer):
        pass


class NvtxSteps(Callback):
    """An NVTX range ``step`` around each training step (what a profiling user adds); ``step_hook``
    (torch.profiler's ``step`` when a trace is recorded) is called after each."""
    step_hook = None

    def on_step_start(self, trainer, step):
        torch.cuda.nvtx.range_push("step")

    def on_step_end(self, trainer, step, loss, output, batch):
        torch.cuda.nvtx.range_pop()
        if NvtxSteps.step_hook:
            NvtxSteps.step_hook()


class LossLogger(Callback):
    """Logs the loss. ``every=1`` reads it every step (``.item()``: a blocking read); otherwise the losses
    are summed on the GPU and read every ``every`` steps."""

    def __init__(self, every=1):
        self.every, self.history, self._acc = every, [], None

    def on_step_end(self, trainer, step, loss, output, batch):
        if self.every == 1:
            self.history.append(loss.item())
            return
        self._acc = loss.detach() if self._acc is None else self._acc + loss.detach()
        if (step + 1) % self.every == 0:
            self.history.append(self._acc.item() / self.every)
            self._acc = None


class StepTimer(Callback):
    """Times each step and writes a log record. ``events=False``: ``torch.cuda.synchronize()`` then the
    host clock every step, and the record formatted right away; ``events=True``: CUDA events, read
    every ``every`` steps."""

    def __init__(self, events=False, every=50, record_fields=400):
        self.events, self.every, self.fields = events, every, record_fields
        self.records, self._pending, self._t0 = [], [], None

    def on_step_start(self, trainer, step):
        if self.events:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._pending.append([step, ev, None])
        else:
            self._t0 = time.perf_counter()

    def on_step_end(self, trainer, step, loss, output, batch):
        if self.events:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._pending[-1][2] = ev
            if (step + 1) % self.every == 0:
                self._flush()
            return
        torch.cuda.synchronize()
        ms = (time.perf_counter() - self._t0) * 1e3
        self._write(step, ms)

    def on_train_end(self, trainer):
        if self.events:
            self._flush()

    def _flush(self):
        self._pending[-1][2].synchronize()
        for step, a, b in self._pending:
            self._write(step, a.elapsed_time(b))
        self._pending = []

    def _write(self, step, ms):
        rec = {"step": step, "ms": ms}
        rec.update({f"param_group_{i}": {"lr": 1e-3 * (1 + i % 3), "wd": 0.01} for i in range(self.fields)})
        self.records.append(json.dumps(rec, sort_keys=True))


class MemoryJanitor(Callback):
    """Frees cached GPU memory after every step (``torch.cuda.empty_cache()``), as code that once ran
    out of memory does."""

    def __init__(self, enabled=True):
        self.enabled = enabled

    def on_step_end(self, trainer, step, loss, output, batch):
        if self.enabled:
            torch.cuda.empty_cache()


class Metrics(Callback):
    """Accuracy and confidence of each batch. ``on_gpu=False``: the outputs are copied to the host every
    step (``.cpu()``) and scored with numpy; ``on_gpu=True``: scored on the GPU, read at the end."""

    def __init__(self, on_gpu=False):
        self.on_gpu, self.acc, self._sum, self._n = on_gpu, [], None, 0

    def on_step_end(self, trainer, step, loss, output, batch):
        logits, target = output.detach().flatten(0, -2), batch[1].flatten()
        if self.on_gpu:
            correct = (logits.argmax(-1) == target).float().mean()
            self._sum = correct if self._sum is None else self._sum + correct
            self._n += 1
            return
        probs = logits.float().softmax(-1).cpu().numpy()
        self.acc.append(float((probs.argmax(-1) == target.cpu().numpy()).mean()))

    def on_train_end(self, trainer):
        if self.on_gpu and self._sum is not None:
            self.acc.append(self._sum.item() / self._n)


class SampleLog(Callback):
    """Keeps a record per sample (loss bucket, step) for later analysis: many small Python objects that
    live on, so the garbage collector runs full collections over the whole heap now and then."""

    def __init__(self, per_step=50000, keep=250000):
        self.per_step, self.rows = per_step, collections.deque(maxlen=keep)

    def on_step_end(self, trainer, step, loss, output, batch):
        self.rows.extend((step, i, {"bucket": i % 7}) for i in range(self.per_step))


class FreezeHeap(Callback):
    """``gc.freeze()`` once the start-up objects exist: the collector no longer walks them."""

    def on_train_start(self, trainer):
        gc.collect()
        gc.freeze()


def batch_stats(x: np.ndarray) -> dict:
    return {"mean": float(x.mean()), "std": float(x.std())}
