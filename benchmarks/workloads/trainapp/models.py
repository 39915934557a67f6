"""Models of the application: a mixture-of-experts transformer block, a conv net, a language-model
head, a small decoder with a key / value cache and a transformer block with its attention by hand."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.up, self.down = nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MoELayer(nn.Module):
    """Top-1 routed experts. ``capacity_factor=None``: each expert takes the tokens routed to it by a
    boolean mask (data-dependent shapes); otherwise a fixed capacity per expert (static shapes)."""

    def __init__(self, d, hidden, experts, capacity_factor=None):
        super().__init__()
        self.router = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, hidden) for _ in range(experts))
        self.capacity_factor = capacity_factor

    def forward(self, x):
        b, t, d = x.shape
        flat = x.reshape(-1, d)
        gate = F.softmax(self.router(flat), dim=-1)
        weight, idx = gate.max(dim=-1)
        if self.capacity_factor is None:
            return self._dispatch_by_mask(flat, weight, idx).view(b, t, d)
        return self._dispatch_fixed(flat, gate, weight, idx).view(b, t, d)

    def _dispatch_by_mask(self, flat, weight, idx):
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            mask = idx == e
            tokens = flat[mask]                      # boolean-mask index: nonzero + a sync per expert
            out[mask] = expert(tokens) * weight[mask, None]
        return out

    def _dispatch_fixed(self, flat, gate, weight, idx):
        n, e_count = flat.shape[0], len(self.experts)
        cap = int(math.ceil(self.capacity_factor * n / e_count))
        score = torch.where(F.one_hot(idx, e_count).bool(), gate, torch.zeros_like(gate))
        top, pos = score.topk(cap, dim=0)            # [cap, E]: each expert's tokens, a fixed count
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows = pos[:, e]
            y = expert(flat[rows]) * top[:, e, None]
            out.index_add_(0, rows, y)               # dropped slots carry weight 0
        return out


class MoEBlock(nn.Module):
    def __init__(self, d, heads, hidden, experts, capacity_factor=None):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.moe = MoELayer(d, hidden, experts, capacity_factor)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.moe(self.norm2(x))


class MoEModel(nn.Module):
    def __init__(self, vocab=8192, d=512, layers=4, heads=8, hidden=1024, experts=8, capacity_factor=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(MoEBlock(d, heads, hidden, experts, capacity_factor) for _ in range(layers))
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


class MLPLanguageModel(nn.Module):
    """A token MLP with an LM head of ``vocab`` outputs: the head's GEMM dominates the step."""

    def __init__(self, vocab, d=1024, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                    for _ in range(layers)])
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens)))


class DeepMLP(nn.Module):
    """Many small layers (many parameter tensors): a step launches many small kernels."""

    def __init__(self, d=256, layers=64):
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(d, d), nn.LayerNorm(d), nn.GELU()) for _ in range(layers))
        self.out = nn.Linear(d, 10)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.out(x)


def conv_bn(cin, cout, stride=1, groups=1, k=3):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class ConvNet(nn.Module):
    """A small image classifier of odd widths (48, 96, 160, 320 channels), 5x5 and 3x3 convolutions."""

    def __init__(self, classes=100):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 48, 2, k=5), conv_bn(48, 48), conv_bn(48, 96, 2), conv_bn(96, 96, k=5),
            conv_bn(96, 160, 2), conv_bn(160, 160), conv_bn(160, 320, 2), conv_bn(320, 320, k=5))
        self.fc = nn.Linear(320, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class HandAttention(nn.Module):
    """Attention written out by hand: scores, causal mask, softmax, dropout, weighted sum."""

    def __init__(self, d, heads, dropout=0.1):
        super().__init__()
        self.heads, self.qkv, self.proj, self.drop = heads, nn.Linear(d, 3 * d), nn.Linear(d, d), nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        causal = torch.ones(t, t, device=x.device, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        attn = self.drop(scores.softmax(dim=-1))
        return self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))


class SdpaAttention(nn.Module):
    """The same attention through ``F.scaled_dot_product_attention`` (a fused flash-attention kernel)."""

    def __init__(self, d, heads, dropout=0.1):
        super().__init__()
        self.heads, self.qkv, self.proj, self.p = heads, nn.Linear(d, 3 * d), nn.Linear(d, d), dropout

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True)
        return self.proj(a.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.attn = HandAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, d=1024, heads=16, layers=4, vocab=8192):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.Sequential(*[TransformerBlock(d, heads) for _ in range(layers)])
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))
