"""Data: synthetic token and image batches made on the host, and the ways they reach the GPU."""
from __future__ import annotations

import numpy as np
import torch


class TokenBatches(torch.utils.data.Dataset):
    """Each item is a whole batch of token ids (int64), made on the host with numpy."""

    def __init__(self, steps, batch, seq, vocab, seed=0):
        self.steps, self.batch, self.seq, self.vocab = steps, batch, seq, vocab
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        tokens = self.rng.integers(0, self.vocab, size=(self.batch, self.seq + 1))
        return torch.from_numpy(tokens)


class VariableTokenBatches(torch.utils.data.Dataset):
    """Token batches of varying length (documents batched by length, no packing): each item is
    [batch, t + 1] with t drawn from ``lengths``."""

    def __init__(self, steps, batch, lengths, vocab, seed=0):
        self.steps, self.batch, self.lengths, self.vocab = steps, batch, list(lengths), vocab
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        t = int(self.rng.choice(self.lengths))
        return torch.from_numpy(self.rng.integers(0, self.vocab, size=(self.batch, t + 1)))


class GpuTokenCache:
    """A token corpus kept resident on the GPU (so that sampling never waits for the host), sized to
    the memory the device has left beyond ``leave_bytes``."""

    def __init__(self, leave_bytes, device):
        free, _ = torch.cuda.mem_get_info(device)
        n = max(free - int(leave_bytes), 1 << 20) // 4
        self.tokens = torch.empty(n, dtype=torch.int32, device=device)
        self.nbytes = n * 4


class TokenIndex:
    """A tokenizer-style index built at start-up: ``n`` small dicts (id, text, frequency) that live for
    the whole run."""

    def __init__(self, n):
        self.entries = [{"id": i, "text": f"tok{i}", "freq": (i * 7919) % 1000} for i in range(n)]
        self.by_text = {e["text"]: e for e in self.entries}


class ImageBatches(torch.utils.data.Dataset):
    """Each item is a batch of float32 images (pageable host memory), normalised with numpy."""

    def __init__(self, steps, batch, size, classes=100, seed=0, work_rounds=0):
        self.steps, self.batch, self.size, self.classes = steps, batch, size, classes
        self.rng, self.work_rounds = np.random.default_rng(seed), work_rounds
        self.base = self.rng.standard_normal((batch, 3, size, size), dtype=np.float32)

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        x = np.roll(self.base, i, axis=-1)
        for _ in range(self.work_rounds):          # decode / augment work
            x = (x - x.mean(axis=(2, 3), keepdims=True)) / (x.std(axis=(2, 3), keepdims=True) + 1e-5)
            x = np.tanh(x * 1.01)
        labels = (np.arange(self.batch) + i) % self.classes
        return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(labels)


def loader(dataset, workers=0, pin=False):
    kw = dict(num_workers=workers, pin_memory=pin)
    if workers:
        kw.update(prefetch_factor=4, persistent_workers=True)
    return torch.utils.data.DataLoader(dataset, batch_size=None, shuffle=False, **kw)


class DeviceFeed:
    """Moves each host batch to the GPU. ``prefetch=False``: a plain ``.to(device)`` on the compute
    stream when the batch is needed. ``prefetch=True``: pinned batches copied one step ahead on a side
    stream with ``non_blocking=True``."""

    def __init__(self, batches, device, prefetch=False):
        self.batches, self.device, self.prefetch = batches, device, prefetch

    def __iter__(self):
        if not self.prefetch:
            for batch in self.batches:
                yield to_device(batch, self.device)
            return
        stream = torch.cuda.Stream()
        it = iter(self.batches)
        nxt = self._copy_async(next(it, None), stream)
        while nxt is not None:
            torch.cuda.current_stream().wait_stream(stream)
            cur = nxt
            for t in _tensors(cur):
                t.record_stream(torch.cuda.current_stream())
            nxt = self._copy_async(next(it, None), stream)
            yield cur

    def _copy_async(self, batch, stream):
        if batch is None:
            return None
        with torch.cuda.stream(stream):
            return to_device(batch, self.device, non_blocking=True)


def _tensors(batch):
    return batch if isinstance(batch, (tuple, list)) else (batch,)


def to_device(batch, device, non_blocking=False):
    if isinstance(batch, (tuple, list)):
        return type(batch)(t.to(device, non_blocking=non_blocking) for t in batch)
    return batch.to(device, non_blocking=non_blocking)
