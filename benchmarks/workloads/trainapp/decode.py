"""Autoregressive decoding of a small decoder with a key / value cache: grown with ``torch.cat`` each
token, or preallocated once and written in place (a static cache, attended with a mask)."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from models import RMSNorm


class CatCache:
    """Grows the cache by concatenation: every token copies the whole cache."""

    def __init__(self, layers):
        self.k, self.v = [None] * layers, [None] * layers

    def update(self, layer, k, v, pos):
        if self.k[layer] is None:
            self.k[layer], self.v[layer] = k, v
        else:
            self.k[layer] = torch.cat([self.k[layer], k], dim=2)
            self.v[layer] = torch.cat([self.v[layer], v], dim=2)
        return self.k[layer], self.v[layer], None


class StaticCache:
    """A cache of ``max_len`` positions allocated once; attention reads all of it under a mask."""

    def __init__(self, layers, batch, heads, head_dim, max_len, device, dtype):
        shape = (batch, heads, max_len, head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.positions = torch.arange(max_len, device=device)

    def update(self, layer, k, v, pos):
        t = k.shape[2]
        self.k[layer][:, :, pos:pos + t] = k
        self.v[layer][:, :, pos:pos + t] = v
        q_pos = torch.arange(pos, pos + t, device=k.device)[:, None]
        mask = self.positions[None, :] <= q_pos          # [t, max_len]
        return self.k[layer], self.v[layer], mask


class DecoderLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.norm1, self.norm2 = heads, RMSNorm(d), RMSNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d, bias=False), nn.GELU(), nn.Linear(4 * d, d, bias=False))

    def forward(self, x, cache, layer, pos):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        k_all, v_all, mask = cache.update(layer, k, v, pos)
        causal = mask is None and t > 1
        a = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, is_causal=causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, vocab=32000, d=2048, heads=16, layers=8):
        super().__init__()
        self.d, self.heads = d, heads
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(DecoderLayer(d, heads) for _ in range(layers))
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, cache, pos):
        x = self.embed(tokens)
        for i, layer in enumerate(self.layers):
            x = layer(x, cache, i, pos)
        return self.head(self.norm(x[:, -1:]))


@torch.no_grad()
def generate(model, prompt, new_tokens, static=False, on_token=None):
    b, t = prompt.shape
    if static:
        cache = StaticCache(len(model.layers), b, model.heads, model.d // model.heads, t + new_tokens,
                            prompt.device, torch.bfloat16)
    else:
        cache = CatCache(len(model.layers))
    logits = model(prompt, cache, 0)
    out = [prompt]
    for i in range(new_tokens):
        if on_token:
            on_token("begin", i)
        nxt = logits.argmax(-1)
        out.append(nxt)
        logits = model(nxt, cache, t + i)
        if on_token:
            on_token("end", i)
    return torch.cat(out, dim=1)
