"""The peers of benchmarks/peers.py, each the same computation on the same weights: tfm's prefill and decoder, the
profile of tfm's pass, PyTorch eager and torch.compile (tests/torch_reference.py), ONNX Runtime, JAX jit, and
the decoders with a cache (PyTorch eager, JAX). Each returns None where its library is not installed."""

from __future__ import annotations

import io
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from transformer_cli import Transformer

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # the PyTorch model the tests check tfm against

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
DECODE_PEER = "PyTorch eager (cache in place)"
PROMPT, STEPS = 512, 256


# -- the weights in the (b, n, d) layout the peers use ---------------------------------------------------------


def _blocks(spec, weights, dtype: str) -> list[dict[str, np.ndarray | None]]:  # type: ignore[no-untyped-def]
    """Each block's weights as x @ W takes them: W_qkv (d, (H + 2G) m), W_O (H m, d), W1 (d, r or 2r), W2 (r, d)."""
    d, H, m = spec.d, spec.H, spec.m
    out = []
    for i in range(spec.N):
        p = f"blocks.{i}."

        def get(name: str, p: str = p) -> np.ndarray | None:
            return np.asarray(weights[p + name], dtype) if p + name in weights else None

        w1 = get("ff.W1") if spec.feedforward == "plain" else np.concatenate([get("ff.W1"), get("ff.W3")])
        b1 = (
            get("ff.b1")
            if spec.feedforward == "plain" or get("ff.b1") is None
            else np.concatenate([get("ff.b1"), get("ff.b3")])
        )
        out.append(
            {
                "qkv": np.concatenate([get(f"attention.W_{k}").reshape(-1, d) for k in "QKV"]).T.copy(),
                "o": get("attention.W_O").transpose(0, 2, 1).reshape(H * m, d).copy(),
                "w1": w1.T.copy(),
                "b1": b1,
                "w2": get("ff.W2").T.copy(),
                "b2": get("ff.b2"),
                "g1": get("norm1.gamma"),
                "g2": get("norm2.gamma"),
            }
        )
    return out


def _supported(spec) -> bool:  # type: ignore[no-untyped-def]
    """What the JAX model and the PyTorch decoder below are written for: the benchmark's two specs' features."""
    norm = spec.norm == "none" or (spec.norm == "pre" and spec.norm_type == "rmsnorm")
    rope = spec.positional == "none" or (
        spec.positional == "rope"
        and spec.rope_pairing == "half"
        and spec.rope_scaling == "none"
        and spec.rope_fraction == 1
    )
    extras = (spec.V, spec.E, spec.window, spec.parallel, spec.qk_norm, spec.attention_bias, spec.N_enc)
    return norm and rope and not any(extras)


def _rotations(spec, n: int, start: int = 0) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """cos, sin (n, m) of rotary positions start.., half pairing, angles in float64."""
    m = spec.m
    angle = np.arange(start, start + n)[:, None] * spec.rope_theta ** (-np.arange(0, m, 2) / m)[None, :]
    return np.cos(np.concatenate([angle, angle], 1)), np.sin(np.concatenate([angle, angle], 1))


# -- prefill peers: each returns a function of X (b, d, n) -> (b, d, n) ------------------------------------------


def tfm_prefill(spec, weights, dtype: str) -> Callable:  # type: ignore[no-untyped-def]
    return Transformer(spec, weights, dtype)


def _held(model: Transformer) -> set[int]:
    """The ids of the model's weight arrays, as its blocks hold them for the pass."""
    return {id(a) for a in model.weights.arrays()}


def _weight(a: np.ndarray, held: set[int]) -> bool:
    """Whether `a` is one of the model's weights (ids in `held`) or a view of one."""
    return id(a) in held or (a.base is not None and id(a.base) in held)


def floor_prefill(spec, weights, dtype: str, X: np.ndarray) -> Callable:  # type: ignore[no-untyped-def]
    """tfm's matrix products alone: one pass recorded, then replayed back to back. A product keeps its real
    weights (each block's own, read from memory as in the pass); its activations are arrays of the same shape and
    layout (C order, or a transposed view of one), one per shape, reused as tfm's own stay in cache."""
    model, calls, real = Transformer(spec, weights, dtype), [], np.matmul
    held = _held(model)
    buffers: dict[tuple, np.ndarray] = {}

    def operand(a: np.ndarray) -> np.ndarray:
        if _weight(a, held):  # a weight (or a view of one): itself
            return a
        transposed = a.ndim >= 2 and not a.flags.c_contiguous and a.swapaxes(-1, -2).flags.c_contiguous
        shape = a.swapaxes(-1, -2).shape if transposed else a.shape
        buffer = buffers.setdefault((shape, a.dtype.str), np.ones(shape, a.dtype))
        return buffer.swapaxes(-1, -2) if transposed else buffer

    def record(a, b, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((operand(np.asarray(a)), operand(np.asarray(b))))
        return real(a, b, *args, **kwargs)

    np.matmul = record
    try:
        model(X)
    finally:
        np.matmul = real

    def replay(X: np.ndarray) -> None:
        for a, b in calls:  # each product's result dropped at once, as tfm drops or reuses its own
            np.matmul(a, b)

    return replay


def timer(spent: dict[str, float]) -> Callable[[str, Callable], Callable]:
    """timed(kind, fn): fn, its seconds added to spent[kind] at each call (a microsecond's overhead)."""

    def timed(kind: str, fn: Callable) -> Callable:
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[kind] += time.perf_counter() - start

        return call

    return timed


def profile_prefill(spec, weights, dtype: str, X: np.ndarray, rounds: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Where tfm's pass spends its time (batch 1: one Python thread, BLAS on every core): each kind of work timed
    around its calls over `rounds` passes, in ms a pass, with the GEMMs' rates. A product with a model weight is a
    projection (attention's Q, K, V and output, the feedforward); any other is attention's own (scores, A V).
    "other" is the pass's time outside them: adding masks, dividing by the softmax's sums, the gate's product,
    Python. The wrappers cost about a microsecond a call."""
    import transformer_cli.components.residual as residual
    import transformer_cli.kernels as layers

    model, real = Transformer(spec, weights, dtype), np.matmul
    held = _held(model)
    spent: dict[str, float] = dict.fromkeys(PROFILE, 0.0)
    flops = {"projections (GEMM)": 0, "attention (GEMM)": 0}

    timed = timer(spent)
    products = {kind: timed(kind, real) for kind in flops}  # made once, not at every product

    def matmul(a, b, *args, **kwargs):  # type: ignore[no-untyped-def]
        a, b = np.asarray(a), np.asarray(b)
        kind = "projections (GEMM)" if _weight(a, held) or _weight(b, held) else "attention (GEMM)"
        batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        flops[kind] += 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]
        return products[kind](a, b, *args, **kwargs)

    patches = [
        (np, "matmul", matmul),
        (layers, "softmax_rows_", timed("softmax", layers.softmax_rows_)),
        (layers, "rotate_", timed("rotary", layers.rotate_)),
        (layers, "scaled_queries", timed("query scale", layers.scaled_queries)),
        (residual, "_residual", timed("residuals", residual._residual)),
        (layers, "rms_norm", timed("norms", layers.rms_norm)),
        (layers, "layer_norm", timed("norms", layers.layer_norm)),
    ]
    activations = dict(layers.ACTIVATIONS)
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, fn in patches:
            setattr(owner, name, fn)
        layers.ACTIVATIONS.update({k: timed("activation", f) for k, f in activations.items()})
        model(X)  # warm-up
        for kind in spent:
            spent[kind] = 0.0
        flops.update(dict.fromkeys(flops, 0))
        start = time.perf_counter()
        for _ in range(rounds):
            model(X)
        total = (time.perf_counter() - start) / rounds
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
        layers.ACTIVATIONS.update(activations)
    ms = {kind: seconds / rounds * 1e3 for kind, seconds in spent.items()}
    ms["other"] = total * 1e3 - sum(ms.values())
    rates = {kind: flops[kind] / rounds / (ms[kind] / 1e3) / 1e9 for kind in flops if ms[kind]}
    return {"ms": ms, "total_ms": total * 1e3, "gflops": rates, "flops": {k: v // rounds for k, v in flops.items()}}


PROFILE = (
    "projections (GEMM)",
    "attention (GEMM)",
    "softmax",
    "norms",
    "activation",
    "rotary",
    "query scale",
    "residuals",
)


def _torch_model(spec, weights, dtype: str, native_gqa: bool = True) -> Callable | None:  # type: ignore[no-untyped-def]
    """tests/torch_reference.py's model of the spec as a competent user writes it: SDPA's own grouped heads
    (enable_gqa, no copies of K and V) and the rotary tables made once per length; None without PyTorch."""
    try:
        from torch_reference import torch_model
    except ImportError:
        return None
    return torch_model(spec, weights, dtype, native_gqa=native_gqa, cached_rope=True)


def torch_prefill(spec, weights, dtype: str, compiled: bool = False) -> Callable | None:  # type: ignore[no-untyped-def]
    model = _torch_model(spec, weights, dtype)
    if model is None:
        return None
    import torch

    if compiled:
        model = torch.compile(model)

    def forward(X: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return model(torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1)))).numpy().transpose(0, 2, 1)

    return forward


def onnx_prefill(spec, weights, dtype: str, X: np.ndarray) -> Callable | None:  # type: ignore[no-untyped-def]
    """PyTorch's model exported (dynamo): SDPA's enable_gqa becomes ONNX's Attention with its own key/value heads
    where the exporter writes it; else (an exporter that cannot) the export of K and V repeated."""
    try:
        import onnxruntime as ort
        import torch
    except ImportError:
        return None
    try:
        return _onnx_session(_torch_model(spec, weights, dtype), X, ort, torch)
    except Exception:  # noqa: BLE001 - enable_gqa not exportable here: the repeated heads
        return _onnx_session(_torch_model(spec, weights, dtype, native_gqa=False), X, ort, torch)


def _onnx_session(model, X: np.ndarray, ort, torch) -> Callable:  # type: ignore[no-untyped-def]
    class Module(torch.nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return model(x)

    x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1)))
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        program = torch.onnx.export(Module(), (x,), dynamo=True, input_names=["x"], verbose=False)
        program.save(buffer)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    return lambda X: session.run(None, {"x": np.ascontiguousarray(X.transpose(0, 2, 1))})[0].transpose(0, 2, 1)


def _jax_model(spec, weights, dtype: str):  # type: ignore[no-untyped-def]
    """What both JAX peers use: the weights as JAX arrays and a block's pieces in jax.numpy. In float32 a causal
    prefill is jax.nn.dot_product_attention(is_causal=True), XLA's own attention (no n x n mask built); in float64
    the softmax by hand (dot_product_attention computes it in float32 even for float64 input)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", dtype == "float64")
    H, G, m, r = spec.H, spec.kv_heads, spec.m, spec.r
    act = {"relu": jax.nn.relu, "silu": jax.nn.silu, "gelu": lambda x: jax.nn.gelu(x, approximate=True)}[
        spec.activation
    ]

    def norm(x, g):  # type: ignore[no-untyped-def]
        if spec.norm != "pre":
            return x
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + spec.norm_eps) * g

    def heads(p, x, cos, sin):  # type: ignore[no-untyped-def]
        """Q (b, G, r, n, m), K and V (b, G, n m), rotated."""
        b, n, _ = x.shape
        qkv = x @ p["qkv"]
        q = qkv[..., : H * m].reshape(b, n, G, H // G, m).transpose(0, 2, 3, 1, 4)
        k, v = (
            qkv[..., H * m + i * G * m : H * m + (i + 1) * G * m].reshape(b, n, G, m).transpose(0, 2, 1, 3)
            for i in (0, 1)
        )
        if spec.positional == "rope":
            turn = lambda x: x * cos + jnp.concatenate([-x[..., m // 2 :], x[..., : m // 2]], -1) * sin  # noqa: E731
            q, k = turn(q), turn(k)
        return q, k, v

    def attend(p, q, k, v, visible):  # type: ignore[no-untyped-def]
        """The heads' outputs through W_O: (b, n, d); `visible` (n_q, n_k) says which keys each query reads."""
        b, _, _, n, _ = q.shape
        s = jnp.where(visible, jnp.einsum("bgrqm,bgkm->bgrqk", q, k) * spec.score_scale, -jnp.inf)
        s = jnp.exp(s - s.max(-1, keepdims=True))
        o = jnp.einsum("bgrqk,bgkm->bgrqm", s / s.sum(-1, keepdims=True), v)
        return o.transpose(0, 3, 1, 2, 4).reshape(b, n, H * m) @ p["o"]

    def attend_causal(p, q, k, v):  # type: ignore[no-untyped-def]
        """A causal prefill's heads through W_O with jax.nn.dot_product_attention: (b, n, heads, m) layouts,
        the G key/value heads read by their H/G query heads each (no copies)."""
        b, _, _, n, _ = q.shape
        o = jax.nn.dot_product_attention(
            q.transpose(0, 3, 1, 2, 4).reshape(b, n, H, m),
            k.transpose(0, 2, 1, 3),
            v.transpose(0, 2, 1, 3),
            scale=spec.score_scale,
            is_causal=True,
        )
        return o.reshape(b, n, H * m) @ p["o"]

    def feedforward(p, x):  # type: ignore[no-untyped-def]
        h = x @ p["w1"] + (0 if p["b1"] is None else p["b1"])
        h = act(h) if spec.feedforward == "plain" else act(h[..., :r]) * h[..., r:]
        return h @ p["w2"] + (0 if p["b2"] is None else p["b2"])

    blocks = jax.tree.map(jnp.asarray, _blocks(spec, weights, dtype))
    final = jnp.asarray(np.asarray(weights["final_norm.gamma"], dtype)) if spec.norm == "pre" else None
    return SimpleNamespace(
        blocks=blocks,
        final=final,
        norm=norm,
        heads=heads,
        attend=attend,
        attend_causal=attend_causal,
        feedforward=feedforward,
    )


def jax_prefill(spec, weights, dtype: str) -> Callable | None:  # type: ignore[no-untyped-def]
    """The spec's model in jax.numpy, jitted: (b, n, d) rows."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    if not _supported(spec):
        return None
    model = _jax_model(spec, weights, dtype)

    @jax.jit
    def forward(blocks, x, cos, sin):  # type: ignore[no-untyped-def]
        n = x.shape[1]
        fused = spec.mask == "causal" and dtype == "float32"
        visible = jnp.tril(jnp.ones((n, n), bool)) if spec.mask == "causal" else jnp.ones((n, n), bool)
        for p in blocks:
            q, k, v = model.heads(p, model.norm(x, p["g1"]), cos, sin)
            x = x + (model.attend_causal(p, q, k, v) if fused else model.attend(p, q, k, v, visible))
            x = x + model.feedforward(p, model.norm(x, p["g2"]))
        return model.norm(x, model.final)

    def run(X: np.ndarray) -> np.ndarray:
        cos, sin = (jnp.asarray(t, dtype) for t in _rotations(spec, X.shape[-1]))
        y = forward(model.blocks, jnp.asarray(X.transpose(0, 2, 1)), cos, sin)
        return np.asarray(y.block_until_ready()).transpose(0, 2, 1)

    return run


# -- decoding: each returns (prefill(X_prompt), step(x_column)) -------------------------------------------------
