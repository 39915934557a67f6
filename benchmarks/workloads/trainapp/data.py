"""Data: synthetic token and image batches made on the host, and the ways they reach the GPU."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


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


class GpuImageStore:
    """A uint8 image dataset kept resident on the GPU (decoded once, so that no step waits for the host),
    sized to the memory the device has left beyond ``leave_bytes``; each item is ``3 x size x size``."""

    def __init__(self, leave_bytes, device, size=256):
        free, _ = torch.cuda.mem_get_info(device)
        self.count = max((free - int(leave_bytes)) // (3 * size * size), 64)
        self.images = torch.empty(self.count, 3, size, size, dtype=torch.uint8, device=device)
        self.size = size


class CropFeed:
    """Random crops of the resident images, stacked into a batch on the GPU. ``per_sample=True``: each crop
    is cut and converted to float on its own (a tensor per sample, under 1 MB: the caching allocator's small
    pool) before ``torch.stack``; otherwise the uint8 views are stacked and converted as one batch."""

    def __init__(self, store, steps, batch, crop, classes=100, per_sample=True, seed=0):
        self.store, self.steps, self.batch, self.crop = store, steps, batch, crop
        self.classes, self.per_sample = classes, per_sample
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        s, c = self.store, self.crop
        for _ in range(self.steps):
            idx = self.rng.integers(0, s.count, self.batch)
            yx = self.rng.integers(0, s.size - c + 1, (self.batch, 2))
            views = [s.images[i, :, y:y + c, x:x + c] for i, (y, x) in zip(idx.tolist(), yx.tolist())]
            if self.per_sample:
                x = torch.stack([v.float().div_(255) for v in views])
            else:
                x = torch.stack(views).float().div_(255)
            y = torch.as_tensor(idx % self.classes, device=s.images.device)
            yield x.contiguous(memory_format=torch.channels_last), y


class DocumentCorpus:
    """A tokenised corpus resident on the GPU (int32 ids) with its documents' offsets and lengths; ``batches``
    samples documents into padded ``[batch, max_len + 1]`` int64 batches. ``per_document=True``: each document is
    sliced, padded (``F.pad``) and widened on its own before ``torch.stack``; otherwise one gather for the whole
    batch and one mask (``torch.where``)."""

    PAD = 0

    def __init__(self, n_tokens, vocab, device, min_len=32, max_len=256, seed=0):
        rng = np.random.default_rng(seed)
        self.tokens = torch.randint(1, vocab, (n_tokens,), dtype=torch.int32, device=device)
        lengths = rng.integers(min_len, max_len + 2, size=n_tokens // ((min_len + max_len) // 2))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        keep = offsets + lengths <= n_tokens
        self.offsets, self.lengths, self.max_len = offsets[keep], lengths[keep], max_len
        self.rng, self.device = rng, device

    def batches(self, steps, batch, per_document=True):
        width = self.max_len + 1
        pos = torch.arange(width, device=self.device)
        for _ in range(steps):
            idx = self.rng.integers(0, len(self.offsets), size=batch)
            if per_document:
                rows = []
                for o, n in zip(self.offsets[idx].tolist(), self.lengths[idx].tolist()):
                    doc = self.tokens[o:o + min(n, width)]
                    rows.append(F.pad(doc, (0, width - doc.numel()), value=self.PAD).long())
                yield torch.stack(rows)
            else:
                starts = torch.as_tensor(self.offsets[idx], device=self.device)
                lens = torch.as_tensor(np.minimum(self.lengths[idx], width), device=self.device)
                at = (starts[:, None] + pos).clamp(max=self.tokens.numel() - 1)
                yield torch.where(pos < lens[:, None], self.tokens[at], self.PAD).long()


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
