"""The training loop: forward, backward and optimizer step under bf16 autocast, with callbacks."""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F


@contextlib.contextmanager
def phase(name, enabled=True):
    if enabled:
        torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        if enabled:
            torch.cuda.nvtx.range_pop()


def lm_loss(logits, batch):
    return F.cross_entropy(logits.flatten(0, 1).float(), batch[1].flatten())


def class_loss(logits, batch):
    return F.cross_entropy(logits.float(), batch[1])


class Trainer:
    def __init__(self, model, optimizer, loss_fn, callbacks=(), set_to_none=True, phases=True,
                 split=None, warmup=2):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.callbacks, self.set_to_none, self.phases = list(callbacks), set_to_none, phases
        self.split = split or (lambda b: b)          # host batch -> (inputs, targets)
        self.warmup = warmup

    def fit(self, feed, steps):
        for cb in self.callbacks:
            cb.on_train_start(self)
        it = iter(feed)
        for step in range(-self.warmup, steps):
            batch = self.split(next(it))
            live = step >= 0
            if live:
                for cb in self.callbacks:
                    cb.on_step_start(self, step)
            loss, out = self.train_step(batch)
            if live:
                for cb in self.callbacks:
                    cb.on_step_end(self, step, loss, out, batch)
            elif step == -1:
                torch.cuda.synchronize()
        for cb in self.callbacks:
            cb.on_train_end(self)
        torch.cuda.synchronize()

    def train_step(self, batch):
        with phase("forward", self.phases), torch.autocast("cuda", dtype=torch.bfloat16):
            out = self.model(batch[0])
            loss = self.loss_fn(out, batch)
        with phase("backward", self.phases):
            loss.backward()
        with phase("optimizer", self.phases):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=self.set_to_none)
        return loss, out


def shift_tokens(tokens):
    """Token batch [b, t+1] -> (inputs [b, t], targets [b, t])."""
    return tokens[:, :-1], tokens[:, 1:]
