"""A spec's model written plainly in PyTorch for training, and the bytes autograd saves for its backward pass.

Independent of tfm's accounting: (b, n, d) layout, nn.Parameter weights (random: only shapes matter here),
separate q/k/v projections as transformers writes them, PyTorch's own kernels (F.layer_norm, F.rms_norm,
F.scaled_dot_product_attention with enable_gqa, or eager attention with K and V repeated to H heads).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer_cli import Spec


def _linear(n_out: int, n_in: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(n_out, n_in) / math.sqrt(n_in))


class Model(nn.Module):
    def __init__(self, spec: Spec, fused: bool):
        super().__init__()
        self.spec, self.fused = spec, fused
        H, G, m, d, r = spec.H, spec.kv_heads, spec.m, spec.d, spec.r
        self.blocks = nn.ModuleList()
        for _ in range(spec.N):
            blk = nn.Module()
            blk.q, blk.k, blk.v, blk.o = _linear(H * m, d), _linear(G * m, d), _linear(G * m, d), _linear(d, H * m)
            blk.w1, blk.w2 = _linear(r, d), _linear(d, r)
            if spec.feedforward == "gated":
                blk.w3 = _linear(r, d)
            blk.g1, blk.g2 = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
            self.blocks.append(blk)
        self.final = nn.Parameter(torch.ones(d))
        if spec.V:
            self.E, self.head = nn.Parameter(torch.randn(spec.V, d)), _linear(spec.V, d)
        if spec.positional == "learned":
            self.P = nn.Parameter(torch.randn(spec.max_len, d))

    def norm(self, x, gamma):
        if self.spec.norm_type == "rmsnorm":
            return F.rms_norm(x, (x.shape[-1],), gamma, self.spec.norm_eps)
        return F.layer_norm(x, (x.shape[-1],), gamma, None, self.spec.norm_eps)

    def rotations(self, n, dtype):
        """RoPE's cosines and sines (n, m), made once per pass as transformers makes them."""
        m = self.spec.m
        angle = torch.arange(n)[:, None] * self.spec.rope_theta ** (-torch.arange(0, m, 2) / m)
        return tuple(f(torch.cat([angle, angle], -1)).to(dtype) for f in (torch.cos, torch.sin))

    def rope(self, x, rotations):
        m, (cos, sin) = self.spec.m, rotations
        half = torch.cat([-x[..., m // 2 :], x[..., : m // 2]], -1)
        return x * cos + half * sin

    def attention(self, blk, x, mask, rotations):
        spec, (b, n, _) = self.spec, x.shape
        H, G, m = spec.H, spec.kv_heads, spec.m
        q, k, v = (F.linear(x, w).view(b, n, -1, m).transpose(1, 2) for w in (blk.q, blk.k, blk.v))
        if spec.positional == "rope":
            q, k = self.rope(q, rotations), self.rope(k, rotations)
        if self.fused:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=spec.mask == "causal", scale=spec.score_scale,
                                               enable_gqa=G != H)  # fmt: skip
        else:  # transformers' eager attention: K and V repeated to H heads
            if G != H:
                k, v = (t.repeat_interleave(H // G, dim=1) for t in (k, v))
            scores = (q @ k.transpose(-1, -2)) * spec.score_scale
            a = torch.softmax(scores + mask if mask is not None else scores, dim=-1) @ v
        return F.linear(a.transpose(1, 2).reshape(b, n, H * m), blk.o)

    def feedforward(self, blk, x):
        act = {"relu": F.relu, "gelu": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu}[self.spec.activation]
        hidden = act(F.linear(x, blk.w1))
        if self.spec.feedforward == "gated":
            hidden = hidden * F.linear(x, blk.w3)
        return F.linear(hidden, blk.w2)

    def forward(self, x, dtype):
        spec = self.spec
        n = x.shape[1]
        if spec.V:
            x = F.embedding(x, self.E.to(dtype))
        if spec.positional == "learned":
            x = x + self.P[:n].to(dtype)
        mask = None
        if spec.mask == "causal" and not self.fused:  # made once, added in every block
            mask = torch.full((n, n), -torch.inf, dtype=dtype).triu(1)
        rotations = self.rotations(n, dtype) if spec.positional == "rope" else None
        for blk in self.blocks:
            if spec.norm == "pre":
                x = x + self.attention(blk, self.norm(x, blk.g1), mask, rotations)
                x = x + self.feedforward(blk, self.norm(x, blk.g2))
            elif spec.norm == "post":
                x = self.norm(x + self.attention(blk, x, mask, rotations), blk.g1)
                x = self.norm(x + self.feedforward(blk, x), blk.g2)
            else:
                x = x + self.attention(blk, x, mask, rotations)
                x = x + self.feedforward(blk, x)
        if spec.norm == "pre":
            x = self.norm(x, self.final)
        return F.linear(x, self.head) if spec.V else x


def saved_bytes(spec: Spec, b: int, n: int, dtype: str, fused: bool) -> int:
    """Bytes of the distinct storages autograd saves in a forward pass with a loss, parameters left out."""
    torch.manual_seed(0)
    tdtype = getattr(torch, dtype)
    model = Model(spec, fused).to(tdtype)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            storages[storage.data_ptr()] = storage.nbytes()
        return t

    if spec.V:
        x, targets = torch.randint(spec.V, (b, n)), torch.randint(spec.V, (b, n))
    else:
        x = torch.randn(b, n, spec.d, dtype=tdtype)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x, tdtype)
        loss = F.cross_entropy(out.reshape(-1, spec.V), targets.reshape(-1)) if spec.V else out.sum()
    loss.backward()  # the saved tensors were enough
    return sum(storages.values())
