"""The spec's model in PyTorch: the one PyTorch forward pass the tests and the benchmarks share.

tfm never imports torch (tests/architecture/test_layers.py holds that); this module is outside the package, imported
by the tests (tests/model/test_bench.py: tfm's output against it for every variant) and by benchmarks/peers.py (the
PyTorch eager, torch.compile and ONNX Runtime peers run it). Written independently of tfm's pass: PyTorch's
(b, n, d) layout, F.linear, F.scaled_dot_product_attention, F.layer_norm and F.rms_norm, the rotary angles in
float64, the experts as the dense weighted sum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from transformer_cli import Spec
from transformer_cli.kernels import sinusoidal_positions

Weights = Mapping[str, np.ndarray]


def torch_model(
    spec: Spec,
    weights: Weights,
    dtype: str,
    eager: bool = False,
    trainable: bool = False,
    native_gqa: bool = False,
    cached_rope: bool = False,
) -> Callable:
    """The spec's model in PyTorch (F.linear, scaled_dot_product_attention) on tensors in its usual (b, n, d)
    layout. Not under inference_mode: torch.compile and ONNX export take it as it is.

    eager: attention as transformers' eager kernel (scores, an additive mask, softmax, K and V repeated to H heads)
    instead of SDPA; native_gqa: SDPA's enable_gqa instead of repeating K and V; cached_rope: the rotary tables
    made once per length and kept (as tfm keeps its own; else in every block); trainable: the weights, as the
    pass reads them (the heads' projections stacked), are leaves that require gradients (what autograd saves)."""
    tdtype = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}[dtype]
    t = {
        k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(tdtype).requires_grad_(trainable)
        for k, v in weights.items()
    }
    H, G, m, d = spec.H, spec.kv_heads, spec.m, spec.d
    blocks = []
    for i in range(spec.N):
        p = f"blocks.{i}."
        blk = {
            "qkv": torch.cat([t[p + f"attention.W_{k}"].reshape(-1, d) for k in "QKV"]),
            "o": t[p + "attention.W_O"].permute(1, 0, 2).reshape(d, H * m).contiguous(),
            "w1": t[p + "ff.W1"],
            "b1": t.get(p + "ff.b1"),
            "w2": t[p + "ff.W2"],
            "b2": t.get(p + "ff.b2"),
            "w3": t.get(p + "ff.W3"),
            "b3": t.get(p + "ff.b3"),
            "prefix": p,
            "q_norm": (t.get(p + "attention.q_norm.gamma"), t.get(p + "attention.q_norm.beta")),
            "k_norm": (t.get(p + "attention.k_norm.gamma"), t.get(p + "attention.k_norm.beta")),
            "bqkv": torch.cat([t[p + f"attention.b_{k}"].reshape(-1) for k in "QKV"]) if spec.attention_bias else None,
            "bo": t.get(p + "attention.b_O"),
        }
        if trainable:  # transformers' layout: q_proj, k_proj and v_proj apart, each output a storage of its own
            blk["q_k_v"] = [(t[p + f"attention.W_{k}"].reshape(-1, d), t.get(p + f"attention.b_{k}")) for k in "QKV"]
        for ln in ("norm1", "norm2", "norm1_out", "norm2_out"):
            blk[ln] = (t[p + f"{ln}.gamma"], t.get(p + f"{ln}.beta")) if p + f"{ln}.gamma" in t else None
        if trainable:  # the weights as the pass reads them are the parameters, not activations derived from them
            blk = {k: v.detach().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in blk.items()}
        blocks.append(blk)
    act = {"gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu_exact": F.gelu, "relu": F.relu, "silu": F.silu}[
        spec.activation
    ]
    causal, scale, eps = spec.mask == "causal", spec.score_scale, spec.norm_eps
    kept: dict[int, tuple] = {}  # cached_rope's tables, by length

    def norm_m(x, params):
        if params[0].ndim == 2:  # per_head: (heads, m) gains of each head's own, no beta; x is (b, heads, n, m)
            gain = (params[0] + 1 if spec.norm_plus_one else params[0])[:, None, :]
            plain = F.rms_norm if spec.norm_type == "rmsnorm" else F.layer_norm
            return plain(x, (m,), eps=eps) * gain
        if spec.norm_type == "rmsnorm":
            return F.rms_norm(x, (m,), params[0] + 1 if spec.norm_plus_one else params[0], eps)
        return F.layer_norm(x, (m,), params[0], params[1], eps)  # params[1] None: no bias

    def norm(x, params):
        if spec.norm_type == "rmsnorm":
            return F.rms_norm(x, (d,), params[0] + 1 if spec.norm_plus_one else params[0], eps)
        return F.layer_norm(x, (d,), params[0], params[1], eps)

    def attention(blk, x, tables=None):
        b, n, _ = x.shape
        if trainable:
            q, k, v = (F.linear(x, w, bias).view(b, n, -1, m).transpose(1, 2) for w, bias in blk["q_k_v"])
        elif G == H:  # the usual fused layout, as fast as PyTorch code gets
            q, k, v = F.linear(x, blk["qkv"], blk["bqkv"]).view(b, n, 3, H, m).permute(2, 0, 3, 1, 4)
        else:  # grouped: split (each key/value head is repeated for its H/G query heads below)
            q, k, v = F.linear(x, blk["qkv"], blk["bqkv"]).split([H * m, G * m, G * m], dim=-1)
            q, k, v = (t.view(b, n, -1, m).transpose(1, 2) for t in (q, k, v))  # (b, heads, n, m)
        if spec.qk_norm:  # each head over its m entries, with the gains (m,) the heads share
            q, k = (norm_m(t, blk[f"{x}_norm"]) for t, x in ((q, "q"), (k, "k")))
        if spec.positional == "rope":
            q, k = _torch_rope(spec, q, tdtype, tables), _torch_rope(spec, k, tdtype, tables)
        if G != H and not (native_gqa and not eager):  # the reference may copy
            k, v = (t.repeat_interleave(H // G, dim=1) for t in (k, v))
        if eager:  # transformers' eager attention: the scores, the mask added, their softmax
            lag = torch.arange(n)[:, None] - torch.arange(n)[None, :]
            allowed = (lag >= 0) if causal else torch.ones(n, n, dtype=torch.bool)
            if spec.window:
                allowed = allowed & (lag < spec.window)
            mask = torch.zeros(n, n, dtype=tdtype).masked_fill(~allowed, -torch.inf)
            a = torch.softmax((q @ k.transpose(-1, -2)) * scale + mask, dim=-1) @ v
        elif spec.window:  # query t sees keys t - w + 1 .. t: a boolean mask of the allowed pairs
            lag = torch.arange(n)[:, None] - torch.arange(n)[None, :]
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=(lag >= 0) & (lag < spec.window), scale=scale)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=G != H and native_gqa)
        return F.linear(a.transpose(1, 2).reshape(b, n, H * m), blk["o"], blk["bo"])

    def expert(blk, x, e=None):
        pick = (lambda key: blk[key]) if e is None else (lambda key: None if blk[key] is None else blk[key][e])
        hidden = act(F.linear(x, pick("w1"), pick("b1")))
        if spec.feedforward == "gated":
            hidden = hidden * F.linear(x, pick("w3"), pick("b3"))
        return F.linear(hidden, pick("w2"), pick("b2"))

    def feedforward(blk, x):
        if not spec.E:
            return expert(blk, x)
        # every expert on every token, weighted by the softmax over the top k scores and 0 elsewhere: the dense
        # form of the routed sum, computed independently of tfm's gather by expert
        scores = F.linear(x, t[blk["prefix"] + "ff.router"])  # (b, n, E)
        top, chosen = scores.topk(spec.k, dim=-1)
        gates = torch.zeros_like(scores).scatter(-1, chosen, torch.softmax(top, dim=-1))
        return sum(gates[..., e : e + 1] * expert(blk, x, e) for e in range(spec.E))

    def model(x):  # type: ignore[no-untyped-def]
        """(b, n, d) columns, or token ids (b, n) with a vocabulary -> (b, n, d), or logits (b, n, V)."""
        if not torch.is_floating_point(x):  # token ids: nn.Embedding's lookup, on E's transpose (V, d)
            x = F.embedding(x, t["embedding.E"].T)
            x = x * math.sqrt(d) if spec.embed_scale == "sqrt" else x
        n = x.shape[1]
        if spec.positional == "sinusoidal":
            x = x + torch.from_numpy(sinusoidal_positions(d, n).T.astype(dtype))
        elif spec.positional == "learned":
            x = x + t["positional.P"][:, :n].T
        if spec.type_vocab:
            x = x + t["embedding.T"][:, 0]
        if spec.embed_norm:
            x = norm(x, (t["embedding.norm.gamma"], t.get("embedding.norm.beta")))
        # training, as transformers does: the rotary tables made once per pass (else in each block, as before)
        tables = _rope_tables(spec, n, tdtype) if trainable and spec.positional == "rope" else None
        if cached_rope and spec.positional == "rope":
            if n not in kept:
                kept[n] = _rope_tables(spec, n, tdtype)
            tables = kept[n]
        attention_ = lambda blk, x: attention(blk, x, tables)  # noqa: E731
        for blk in blocks:
            if spec.parallel:
                second = blk["norm1"] if spec.shared_norm else blk["norm2"]
                x = x + attention_(blk, norm(x, blk["norm1"])) + feedforward(blk, norm(x, second))
            elif spec.norm == "post":
                x = norm(x + attention_(blk, x), blk["norm1"])
                x = norm(x + feedforward(blk, x), blk["norm2"])
            elif spec.norm == "pre":
                x = x + attention_(blk, norm(x, blk["norm1"]))
                x = x + feedforward(blk, norm(x, blk["norm2"]))
            elif spec.norm == "sandwich":
                x = x + norm(attention_(blk, norm(x, blk["norm1"])), blk["norm1_out"])
                x = x + norm(feedforward(blk, norm(x, blk["norm2"])), blk["norm2_out"])
            else:
                x = x + attention_(blk, x)
                x = x + feedforward(blk, x)
        if spec.norm in ("pre", "sandwich"):
            x = norm(x, (t["final_norm.gamma"], t.get("final_norm.beta")))
        if spec.V and spec.head:
            x = F.linear(x, t["embedding.E"].T if spec.tie_embeddings else t["head.W"], t.get("head.b"))
        return x

    model.weights = [v for blk in blocks for v in blk.values() if isinstance(v, torch.Tensor)] + list(t.values())
    return model


def torch_forward(spec: Spec, weights: Weights, dtype: str) -> Callable[[np.ndarray], np.ndarray]:
    """The same computation in PyTorch (F.linear, scaled_dot_product_attention).

    Takes and returns (b, d, n) arrays like tfm (or ids (b, n)); inside, PyTorch's usual (b, n, d) layout.
    """
    model = torch_model(spec, weights, dtype)

    def forward(X: np.ndarray) -> np.ndarray:
        """(b, d, n) columns, or token ids (b, n) with a vocabulary -> (b, d, n), or logits (b, V, n)."""
        with torch.inference_mode():
            if np.issubdtype(X.dtype, np.integer):
                x = torch.from_numpy(X)
            else:
                x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1), dtype=dtype))
            return model(x).numpy().transpose(0, 2, 1)

    return forward


def saved_bytes(spec: Spec, b: int, n: int, dtype: str, fused: bool) -> int:
    """Bytes of the distinct storages autograd saves in a forward pass with a loss, the weights left out: the
    reference for tfm's training activations (analysis/training.py). fused: SDPA, else the eager kernels."""
    from transformer_cli import init_weights

    model = torch_model(spec, init_weights(spec), dtype, eager=not fused, trainable=True, native_gqa=True)
    torch.manual_seed(0)
    weights = {w.untyped_storage().data_ptr() for w in model.weights}  # (and their views): not activations
    storages: dict[int, int] = {}

    def pack(x):  # type: ignore[no-untyped-def]
        if x.untyped_storage().data_ptr() not in weights:
            storages[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
        return x

    tdtype = getattr(torch, dtype)
    x = torch.randint(spec.V, (b, n)) if spec.V else torch.randn(b, n, spec.d, dtype=tdtype)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = model(x)
        loss = (
            F.cross_entropy(out.reshape(-1, spec.V), torch.randint(spec.V, (b, n)).reshape(-1)) if spec.V else out.sum()
        )
    loss.backward()  # the saved tensors were enough
    return sum(storages.values())


def _rope_tables(spec: Spec, n: int, tdtype):  # type: ignore[no-untyped-def]
    """The rotary cosines and sines of positions 0 .. n - 1, (n, rot) each, laid out for the pairing: the angles in
    float64 (unlike transformers, which makes them in float32), cast to the model's dtype."""
    rot = spec.rotated_dims
    freq = spec.rope_theta ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    if spec.rope_scaling == "llama3":  # as transformers' _compute_llama3_parameters
        L, low, high, factor = (
            spec.rope_original_max_len,
            spec.rope_low_freq_factor,
            spec.rope_high_freq_factor,
            spec.rope_factor,
        )
        wavelength = 2 * torch.pi / freq
        scaled = torch.where(wavelength > L / low, freq / factor, freq)
        smooth = (L / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        middle = ~(wavelength < L / high) & ~(wavelength > L / low)
        freq = torch.where(middle, smoothed, scaled)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * freq[None, :]  # (n, rot/2)
    cos, sin = angles.cos().to(tdtype), angles.sin().to(tdtype)
    if spec.rope_pairing == "half":
        return torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    return cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)


def _torch_rope(spec: Spec, x, tdtype, tables=None):  # type: ignore[no-untyped-def]
    """Rotary positions as GPT-NeoX (cat(-x2, x1)) and GPT-J (stacked pairs) write them, on x (b, H, n, m); the
    tables made here unless given."""
    rot = spec.rotated_dims
    cos, sin = _rope_tables(spec, x.shape[-2], tdtype) if tables is None else tables
    part = x if rot == x.shape[-1] else x[..., :rot]
    if spec.rope_pairing == "half":
        turned = torch.cat([-part[..., rot // 2 :], part[..., : rot // 2]], -1)
    else:
        turned = torch.stack([-part[..., 1::2], part[..., ::2]], -1).flatten(-2)
    out = part * cos + turned * sin
    return out if rot == x.shape[-1] else torch.cat([out, x[..., rot:]], -1)
