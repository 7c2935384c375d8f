"""The decoding peers of benchmarks/peers.py: tfm's KV-cache decoder, PyTorch eager with a cache written in place,
torch.compile of a step over a static cache (the gpt-fast way), and JAX with its cache carried through a jitted
step."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from transformer_cli import Transformer
from transformer_cli.model.decoding import Decoder

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # the PyTorch model the tests check tfm against

from peer_models import PROMPT, STEPS, _blocks, _jax_model, _rotations, _supported  # noqa: E402


def tfm_decoder(spec, weights, dtype: str, b: int):  # type: ignore[no-untyped-def]
    model = Transformer(spec, weights, dtype)
    state = {"decoder": Decoder(model, b, PROMPT + STEPS)}

    def reset() -> None:
        state["decoder"] = Decoder(model, b, PROMPT + STEPS)

    return (
        lambda X: state["decoder"].prefill(model.columns(X)[0]).transpose(1, 0, 2),  # (d, b, n) -> (b, d, n)
        lambda x: state["decoder"].step(model.columns(x)[0]).transpose(1, 0, 2),
        reset,
    )


def torch_decoder(spec, weights, dtype: str, b: int):  # type: ignore[no-untyped-def]
    """PyTorch eager with a cache allocated once, (b, G, n, m) per block, written in place at each step."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not _supported(spec):
        return None
    H, G, m, r = spec.H, spec.kv_heads, spec.m, spec.r
    blocks = [
        {k: None if v is None else torch.from_numpy(v) for k, v in p.items()} for p in _blocks(spec, weights, dtype)
    ]
    final = torch.from_numpy(np.asarray(weights["final_norm.gamma"], dtype)) if spec.norm == "pre" else None
    tdtype = getattr(torch, dtype)
    cos_all, sin_all = (torch.from_numpy(t.astype(dtype)) for t in _rotations(spec, PROMPT + STEPS))
    caches = [
        (torch.empty(b, G, PROMPT + STEPS, m, dtype=tdtype), torch.empty(b, G, PROMPT + STEPS, m, dtype=tdtype))
        for _ in blocks
    ]
    act = {"relu": F.relu, "silu": F.silu, "gelu": lambda x: F.gelu(x, approximate="tanh")}[spec.activation]
    state = {"t": 0}

    def norm(x, g):  # type: ignore[no-untyped-def]
        return F.rms_norm(x, (x.shape[-1],), g, spec.norm_eps) if spec.norm == "pre" else x

    def rope(x, t0, n):  # type: ignore[no-untyped-def]
        if spec.positional != "rope":
            return x
        cos, sin = cos_all[t0 : t0 + n], sin_all[t0 : t0 + n]
        return x * cos + torch.cat([-x[..., m // 2 :], x[..., : m // 2]], -1) * sin

    def attention(p, cache, x, t0):  # type: ignore[no-untyped-def]
        b_, n, _ = x.shape
        q, k, v = (x @ p["qkv"]).split([H * m, G * m, G * m], -1)
        q, k, v = (y.view(b_, n, -1, m).transpose(1, 2) for y in (q, k, v))
        q, k = rope(q, t0, n), rope(k, t0, n)
        cache[0][:, :, t0 : t0 + n], cache[1][:, :, t0 : t0 + n] = k, v
        keys, values = cache[0][:, :, : t0 + n], cache[1][:, :, : t0 + n]
        o = F.scaled_dot_product_attention(q, keys, values, is_causal=n > 1, scale=spec.score_scale, enable_gqa=G != H)
        return o.transpose(1, 2).reshape(b_, n, H * m) @ p["o"]

    def feedforward(p, x):  # type: ignore[no-untyped-def]
        h = x @ p["w1"] + (0 if p["b1"] is None else p["b1"])
        h = act(h) if spec.feedforward == "plain" else act(h[..., :r]) * h[..., r:]
        return h @ p["w2"] + (0 if p["b2"] is None else p["b2"])

    def run(X: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1)))
            t0 = state["t"]
            for p, cache in zip(blocks, caches, strict=True):
                x = x + attention(p, cache, norm(x, p["g1"]), t0)
                x = x + feedforward(p, norm(x, p["g2"]))
            state["t"] = t0 + x.shape[1]
            return norm(x, final).numpy().transpose(0, 2, 1)

    return run, run, lambda: state.update(t=0)


def torch_compiled_decoder(spec, weights, dtype: str, b: int):  # type: ignore[no-untyped-def]
    """The gpt-fast way: a static cache (b, G, cap, m) per block, the step attending to every slot with the
    unfilled ones masked and writing its keys and values with index_copy_ at a position held in a tensor, so that
    torch.compile makes one graph for every step (compiled before any timing); the prompt runs eagerly."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not _supported(spec):
        return None
    H, G, m, r, cap = spec.H, spec.kv_heads, spec.m, spec.r, PROMPT + STEPS
    blocks = [
        {k: None if v is None else torch.from_numpy(v) for k, v in p.items()} for p in _blocks(spec, weights, dtype)
    ]
    final = torch.from_numpy(np.asarray(weights["final_norm.gamma"], dtype)) if spec.norm == "pre" else None
    tdtype = getattr(torch, dtype)
    cos_all, sin_all = (torch.from_numpy(t.astype(dtype)) for t in _rotations(spec, cap))
    caches = [(torch.zeros(b, G, cap, m, dtype=tdtype), torch.zeros(b, G, cap, m, dtype=tdtype)) for _ in blocks]
    act = {"relu": F.relu, "silu": F.silu, "gelu": lambda x: F.gelu(x, approximate="tanh")}[spec.activation]
    slots = torch.arange(cap)

    def norm(x, g):  # type: ignore[no-untyped-def]
        return F.rms_norm(x, (x.shape[-1],), g, spec.norm_eps) if spec.norm == "pre" else x

    def forward(x, positions):  # type: ignore[no-untyped-def]
        """x (b, n, d) at `positions` (n,) -> (b, n, d), the caches written at those positions."""
        b_, n, _ = x.shape
        cos, sin = cos_all.index_select(0, positions), sin_all.index_select(0, positions)
        visible = slots[None, :] <= positions[:, None]  # (n, cap)
        for p, (K, V) in zip(blocks, caches, strict=True):
            h = norm(x, p["g1"])
            q, k, v = (h @ p["qkv"]).split([H * m, G * m, G * m], -1)
            q, k, v = (y.view(b_, n, -1, m).transpose(1, 2) for y in (q, k, v))
            if spec.positional == "rope":
                q, k = (y * cos + torch.cat([-y[..., m // 2 :], y[..., : m // 2]], -1) * sin for y in (q, k))
            K.index_copy_(2, positions, k)
            V.index_copy_(2, positions, v)
            o = F.scaled_dot_product_attention(q, K, V, attn_mask=visible, scale=spec.score_scale, enable_gqa=G != H)
            x = x + o.transpose(1, 2).reshape(b_, n, H * m) @ p["o"]
            f = norm(x, p["g2"]) @ p["w1"]
            f = act(f) if spec.feedforward == "plain" else act(f[..., :r]) * f[..., r:]
            x = x + f @ p["w2"]
        return norm(x, final)

    step_fn = torch.compile(forward, dynamic=False)
    state = {"t": 0}

    def run(fn, X: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1)))
            positions = torch.arange(state["t"], state["t"] + x.shape[1])
            state["t"] += x.shape[1]
            return fn(x, positions).numpy().transpose(0, 2, 1)

    for _ in range(2):  # compile the step (its graph, then the same graph at another position) before any timing
        run(step_fn, np.zeros((b, spec.d, 1), dtype))
    state["t"] = 0
    return (lambda X: run(forward, X)), (lambda x: run(step_fn, x)), lambda: state.update(t=0)


def jax_decoder(spec, weights, dtype: str, b: int):  # type: ignore[no-untyped-def]
    """JAX with a jitted step over a cache of fixed size (b, G, n, m) per block, updated with dynamic_update_slice
    (the caches donated, so XLA may write them in place); a step attends to every slot, the unfilled ones masked."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    if not _supported(spec):
        return None
    model, cap = _jax_model(spec, weights, dtype), PROMPT + STEPS
    cos_all, sin_all = (jnp.asarray(t, dtype) for t in _rotations(spec, cap))

    def forward(blocks, caches, x, t0):  # type: ignore[no-untyped-def]
        n = x.shape[1]
        cos, sin = (jax.lax.dynamic_slice_in_dim(t, t0, n) for t in (cos_all, sin_all))
        visible = jnp.arange(cap)[None, :] <= (t0 + jnp.arange(n))[:, None]  # (n, cap)
        new = []
        for p, (K, V) in zip(blocks, caches, strict=True):
            q, k, v = model.heads(p, model.norm(x, p["g1"]), cos, sin)
            K = jax.lax.dynamic_update_slice(K, k, (0, 0, t0, 0))
            V = jax.lax.dynamic_update_slice(V, v, (0, 0, t0, 0))
            x = x + model.attend(p, q, K, V, visible)
            x = x + model.feedforward(p, model.norm(x, p["g2"]))
            new.append((K, V))
        return model.norm(x, model.final), new

    step_fn = jax.jit(forward, donate_argnums=1)
    shape = (b, spec.kv_heads, cap, spec.m)

    def empty() -> list:  # type: ignore[type-arg]
        return [(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)) for _ in model.blocks]

    state = {"caches": empty(), "t": 0}

    def run(X: np.ndarray) -> np.ndarray:
        y, state["caches"] = step_fn(model.blocks, state["caches"], jnp.asarray(X.transpose(0, 2, 1)), state["t"])
        state["t"] += X.shape[-1]
        return np.asarray(y.block_until_ready()).transpose(0, 2, 1)

    run(np.zeros((b, spec.d, 1), dtype))  # compile the step (and the prompt's shape below) before any timing

    def reset() -> None:
        state["caches"], state["t"] = empty(), 0

    reset()
    return run, run, reset


# -- timing ----------------------------------------------------------------------------------------------------
