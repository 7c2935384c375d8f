"""tfm beside every peer a user could pick, for prefill and for decoding, measured in one run (issue 15).

    pip install -e '.[bench]'     # PyTorch, JAX and ONNX Runtime (each optional: a missing one is skipped)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/peers.py [--quick] [--json results.json]

Peers, on the same weights and input:
- PyTorch eager: the spec's model with F.linear and scaled_dot_product_attention (transformer_cli.bench);
- torch.compile of the same function (compilation left out of the times);
- JAX with jit: the model written in jax.numpy below, its softmax by hand (jax.nn.dot_product_attention computes
  the softmax in float32 even for float64 input);
- ONNX Runtime: PyTorch's model exported with torch.onnx.export, all graph optimisations, 2 intra-op threads;
- tfm's floor: the time of tfm's own matrix products alone, the same shapes and layouts replayed back to back.
At batch 1 a second table profiles tfm's pass: its time by kind of work (projections, attention's own products,
softmax, norms, ...) and the products' GFLOP/s, which is where the distance to the fastest peer lies.
Each peer's output is checked against tfm's first (1e-5 in float32, 1e-12 in float64, relative to max |output|);
then every peer runs once per round, rounds interleaved, so a noisy neighbour slows them alike, each call 0.2 s
after the last (another library's threads spin for a while after its call and slow whatever runs next).

Decoding: 256 columns one at a time after a 512-column prompt, with the KV cache: tfm's Decoder (prefill, then
steps), PyTorch eager with a cache allocated once and written in place (the gpt-fast way), and JAX with a jitted
step over a fixed-size cache. Only the steps are timed; the bytes a step reads (the weights and the cache) over
its time are set against this machine's copy bandwidth.

The BLAS: OPENBLAS_CORETYPE forces OpenBLAS's kernel (some machines set it; it is unset above for this command
only): the table names the kernel used and warns when it is below what the CPU runs.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from transformer_cli import Transformer, init_weights
from transformer_cli.analysis.hardware import probe
from transformer_cli.bench import blas_info, gemm_gflops
from transformer_cli.model.decoding import Decoder

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # the PyTorch model the tests check tfm against
from run import BENCH_SPEC, LLAMA_SPEC, machine, median_seconds  # noqa: E402

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
        b1 = get("ff.b1") if spec.feedforward == "plain" or get("ff.b1") is None else np.concatenate(
            [get("ff.b1"), get("ff.b3")])  # fmt: skip
        out.append({
            "qkv": np.concatenate([get(f"attention.W_{k}").reshape(-1, d) for k in "QKV"]).T.copy(),
            "o": get("attention.W_O").transpose(0, 2, 1).reshape(H * m, d).copy(),
            "w1": w1.T.copy(), "b1": b1, "w2": get("ff.W2").T.copy(), "b2": get("ff.b2"),
            "g1": get("norm1.gamma"), "g2": get("norm2.gamma"),
        })  # fmt: skip
    return out


def _supported(spec) -> bool:  # type: ignore[no-untyped-def]
    """What the JAX model and the PyTorch decoder below are written for: the benchmark's two specs' features."""
    norm = spec.norm == "none" or (spec.norm == "pre" and spec.norm_type == "rmsnorm")
    rope = spec.positional == "none" or (spec.positional == "rope" and spec.rope_pairing == "half"
                                         and spec.rope_scaling == "none" and spec.rope_fraction == 1)  # fmt: skip
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
    return {id(a) for blk in model.blocks for a in vars(blk).values() if isinstance(a, np.ndarray)}


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

    def timed(kind: str, fn: Callable) -> Callable:
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[kind] += time.perf_counter() - start

        return call

    products = {kind: timed(kind, real) for kind in flops}  # made once, not at every product

    def matmul(a, b, *args, **kwargs):  # type: ignore[no-untyped-def]
        a, b = np.asarray(a), np.asarray(b)
        kind = "projections (GEMM)" if _weight(a, held) or _weight(b, held) else "attention (GEMM)"
        batch = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        flops[kind] += 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]
        return products[kind](a, b, *args, **kwargs)

    patches = [(np, "matmul", matmul), (layers, "softmax_rows_", timed("softmax", layers.softmax_rows_)),
               (layers, "rotate_", timed("rotary", layers.rotate_)),
               (layers, "scaled_queries", timed("query scale", layers.scaled_queries)),
               (residual, "_residual", timed("residuals", residual._residual)),
               (layers, "rms_norm", timed("norms", layers.rms_norm)),
               (layers, "layer_norm", timed("norms", layers.layer_norm))]  # fmt: skip
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


PROFILE = ("projections (GEMM)", "attention (GEMM)", "softmax", "norms", "activation", "rotary", "query scale",
           "residuals")  # fmt: skip


def _torch_model(spec, weights, dtype: str) -> Callable | None:  # type: ignore[no-untyped-def]
    """tests/torch_reference.py's model of the spec, or None without PyTorch."""
    try:
        from torch_reference import torch_model
    except ImportError:
        return None
    return torch_model(spec, weights, dtype)


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
    model = _torch_model(spec, weights, dtype)
    try:
        import onnxruntime as ort
        import torch
    except ImportError:
        return None

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
    """What both JAX peers use: the weights as JAX arrays and a block's pieces in jax.numpy, the softmax by hand
    (jax.nn.dot_product_attention computes it in float32 even for float64 input)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", dtype == "float64")
    H, G, m, r = spec.H, spec.kv_heads, spec.m, spec.r
    act = {"relu": jax.nn.relu, "silu": jax.nn.silu, "gelu": lambda x: jax.nn.gelu(x, approximate=True)}[
        spec.activation]  # fmt: skip

    def norm(x, g):  # type: ignore[no-untyped-def]
        if spec.norm != "pre":
            return x
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + spec.norm_eps) * g

    def heads(p, x, cos, sin):  # type: ignore[no-untyped-def]
        """Q (b, G, r, n, m), K and V (b, G, n m), rotated."""
        b, n, _ = x.shape
        qkv = x @ p["qkv"]
        q = qkv[..., : H * m].reshape(b, n, G, H // G, m).transpose(0, 2, 3, 1, 4)
        k, v = (qkv[..., H * m + i * G * m : H * m + (i + 1) * G * m].reshape(b, n, G, m).transpose(0, 2, 1, 3)
                for i in (0, 1))  # fmt: skip
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

    def feedforward(p, x):  # type: ignore[no-untyped-def]
        h = x @ p["w1"] + (0 if p["b1"] is None else p["b1"])
        h = act(h) if spec.feedforward == "plain" else act(h[..., :r]) * h[..., r:]
        return h @ p["w2"] + (0 if p["b2"] is None else p["b2"])

    blocks = jax.tree.map(jnp.asarray, _blocks(spec, weights, dtype))
    final = jnp.asarray(np.asarray(weights["final_norm.gamma"], dtype)) if spec.norm == "pre" else None
    return SimpleNamespace(blocks=blocks, final=final, norm=norm, heads=heads, attend=attend,
                           feedforward=feedforward)  # fmt: skip


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
        visible = jnp.tril(jnp.ones((n, n), bool)) if spec.mask == "causal" else jnp.ones((n, n), bool)
        for p in blocks:
            x = x + model.attend(p, *model.heads(p, model.norm(x, p["g1"]), cos, sin), visible)
            x = x + model.feedforward(p, model.norm(x, p["g2"]))
        return model.norm(x, model.final)

    def run(X: np.ndarray) -> np.ndarray:
        cos, sin = (jnp.asarray(t, dtype) for t in _rotations(spec, X.shape[-1]))
        y = forward(model.blocks, jnp.asarray(X.transpose(0, 2, 1)), cos, sin)
        return np.asarray(y.block_until_ready()).transpose(0, 2, 1)

    return run


# -- decoding: each returns (prefill(X_prompt), step(x_column)) -------------------------------------------------


def tfm_decoder(spec, weights, dtype: str, b: int):  # type: ignore[no-untyped-def]
    model = Transformer(spec, weights, dtype)
    decoder = Decoder(model, b, PROMPT + STEPS)
    return (lambda X: decoder.prefill(model.columns(X)[0]).transpose(1, 0, 2),  # (d, b, n) -> (b, d, n)
            lambda x: decoder.step(model.columns(x)[0]).transpose(1, 0, 2))  # fmt: skip


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
    caches = [(torch.empty(b, G, PROMPT + STEPS, m, dtype=tdtype), torch.empty(b, G, PROMPT + STEPS, m, dtype=tdtype))
              for _ in blocks]  # fmt: skip
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
        o = F.scaled_dot_product_attention(q, keys, values, is_causal=n > 1, scale=spec.score_scale,
                                           enable_gqa=G != H)  # fmt: skip
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

    return run, run


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
    state["caches"], state["t"] = empty(), 0
    return run, run


# -- timing ----------------------------------------------------------------------------------------------------


PAUSE = 0.2  # seconds between calls: the previous library's threads stop spinning on the other core


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each function over `rounds` rounds, one call of each per round, after one warm-up round. Each
    call starts PAUSE after the last: right after another library's call, its threads still spin on the second
    core (PyTorch's OpenMP, ONNX Runtime's pool, OpenBLAS's), which slowed the next call 1.2-1.4x here."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(rounds + 1):
        for name, fn in fns.items():
            time.sleep(PAUSE)
            start = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - start)
    return times


def _agree(y: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(y, np.float64) - reference)) / np.max(np.abs(reference)))


def prefill_case(spec, dtype: str, b: int, rounds: int, console: Console) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    weights = init_weights(spec)
    X = np.random.default_rng(0).standard_normal((b, spec.d, PROMPT)).astype(dtype)
    builders = {
        "tfm": lambda: tfm_prefill(spec, weights, dtype),
        "PyTorch eager": lambda: torch_prefill(spec, weights, dtype),
        "torch.compile": lambda: torch_prefill(spec, weights, dtype, compiled=True),
        "JAX jit": lambda: jax_prefill(spec, weights, dtype),
        "ONNX Runtime": lambda: onnx_prefill(spec, weights, dtype, X),
    }
    reference = np.asarray(tfm_prefill(spec, weights, dtype)(X), np.float64)
    peers, notes = {}, {}
    for name, build in builders.items():
        console.log(f"prefill {spec.name} b={b} {dtype}: {name}")
        try:
            fn = build()
        except Exception as exc:  # noqa: BLE001 - a peer that cannot build this model is reported, not fatal
            notes[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            continue
        if fn is None:
            notes[name] = "not installed (or this spec is not written for it)"
            continue
        error = _agree(fn(X), reference)
        if not error <= TOLERANCE[dtype]:
            notes[name] = f"disagrees: {error:.2g} > {TOLERANCE[dtype]:g}"
            continue
        peers[name] = (fn, error)
    floor = floor_prefill(spec, weights, dtype, X)
    times = interleaved({name: (lambda f=f: f(X)) for name, (f, _) in peers.items()} | {"floor": lambda: floor(X)},
                        rounds)  # fmt: skip
    profile = profile_prefill(spec, weights, dtype, X, rounds) if b == 1 else None
    return {"spec": spec.name, "batch": b, "dtype": dtype, "n": PROMPT, "notes": notes, "profile": profile,
            "agreement": {name: error for name, (_, error) in peers.items()},
            "times": times}  # fmt: skip


def decode_case(spec, dtype: str, b: int, rounds: int, console: Console, bandwidth: float) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    weights = init_weights(spec)
    X = np.random.default_rng(0).standard_normal((b, spec.d, PROMPT + STEPS)).astype(dtype)
    out: dict[str, Any] = {"spec": spec.name, "batch": b, "dtype": dtype, "prompt": PROMPT, "steps": STEPS,
                           "times": {}, "notes": {}, "agreement": {}}  # fmt: skip
    reference = None
    for name, build in (("tfm", tfm_decoder), (DECODE_PEER, torch_decoder), ("JAX jit", jax_decoder)):
        console.log(f"decoding {spec.name} b={b} {dtype}: {name}")
        seconds, steps = [], []
        for _ in range(rounds):  # a fresh cache each round
            made = build(spec, weights, dtype, b)
            if made is None:
                out["notes"][name] = "not installed (or this spec is not written for it)"
                break
            prefill, step = made
            prefill(X[..., :PROMPT])
            time.sleep(PAUSE)
            start = time.perf_counter()
            steps = [step(X[..., t : t + 1]) for t in range(PROMPT, PROMPT + STEPS)]
            seconds.append(time.perf_counter() - start)
        if not seconds:
            continue
        y = np.concatenate([np.asarray(s, np.float64) for s in steps], -1)  # (b, d, steps)
        reference = y if reference is None else reference
        out["agreement"][name] = error = _agree(y, reference)
        if not error <= TOLERANCE[dtype]:
            out["notes"][name] = f"disagrees: {error:.2g} > {TOLERANCE[dtype]:g}"
            continue
        out["times"][name] = seconds
    from transformer_cli.analysis.decode import weights_read
    from transformer_cli.analysis.kv_cache import kv_cache_bytes

    size = {"float32": "float32", "float64": "float32"}[dtype]  # bytes per element below are float32's
    per_step = weights_read(spec, b, size) + kv_cache_bytes(spec, b, PROMPT + STEPS // 2, dtype)
    out["bytes_per_step"] = per_step
    out["copy_bandwidth"] = bandwidth
    return out


PREFILL_PEERS = ("PyTorch eager", "torch.compile", "JAX jit", "ONNX Runtime")


def report(results: dict[str, Any], console: Console) -> None:
    blas = results["blas"]
    table = Table(title=f"tfm beside its peers on {results['machine']} (median ms; decoding: tokens/s)",
                  title_justify="left")  # fmt: skip
    for col in ("case", "tfm", *PREFILL_PEERS, "tfm's GEMMs", "tfm / fastest", "tfm / GEMMs"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for case in results["prefill"]:
        med = {k: statistics.median(v) * 1e3 for k, v in case["times"].items()}
        peers = {k: v for k, v in med.items() if k in PREFILL_PEERS}
        fastest = min(peers.values(), default=None)
        table.add_row(
            f"prefill {case['spec']} b={case['batch']} {case['dtype']}", f"{med['tfm']:.1f}",
            *(f"{med[k]:.1f}" if k in med else "-" for k in PREFILL_PEERS), f"{med['floor']:.1f}",
            f"{med['tfm'] / fastest:.2f}" if fastest else "-", f"{med['tfm'] / med['floor']:.2f}",
        )  # fmt: skip
    table.add_section()
    for case in results["decode"]:
        tps = {k: case["steps"] / statistics.median(v) for k, v in case["times"].items()}
        column = {"PyTorch eager": DECODE_PEER, "JAX jit": "JAX jit"}  # the decoding peers, in the prefill's columns
        peers = [tps[column[k]] if column.get(k) in tps else None for k in PREFILL_PEERS]
        fastest = max((x for x in peers if x), default=None)
        table.add_row(
            f"decode {case['spec']} b={case['batch']} {case['dtype']}", f"{tps['tfm']:.0f}",
            *(f"{x:.0f}" if x else "-" for x in peers), "", f"{fastest / tps['tfm']:.2f}" if fastest else "-", "",
        )  # fmt: skip
    table.add_section()
    c = results["commands"]
    base = c["import_baseline_s"]
    for name, key in (("tfm --help", "help_s"), ("tfm count SPEC", "count_s")):
        table.add_row(f"start-up: {name} / the imports", f"{c[key] / base:.2f}x", *[""] * 7)
    notes = [f"NumPy's BLAS: {blas['library']} {blas['version']}, kernel {blas['kernel']}, {blas['threads']} threads; "
             f"GEMM peak float32 {results['gemm_gflops']['float32']:.0f}, float64 "
             f"{results['gemm_gflops']['float64']:.0f} GFLOP/s. Decoding: {STEPS} steps after a {PROMPT}-column "
             f"prompt; PyTorch eager with its cache written in place, JAX a jitted step on a fixed-size cache; tfm / "
             "fastest compares times."]  # fmt: skip
    for case in results["decode"]:
        read = case["bytes_per_step"] * case["steps"] / statistics.median(case["times"]["tfm"]) / 1e9
        notes.append(f"decode {case['spec']}: tfm reads {read:.1f} GB/s (weights and cache), this machine copies "
                     f"{case['copy_bandwidth'] / 1e9:.1f} GB/s")  # fmt: skip
    notes.append(f"start-up: import typer, rich.table, yaml, numpy takes {base * 1e3:.0f} ms; tfm --help "
                 f"{c['help_s'] * 1e3:.0f} ms, tfm count {c['count_s'] * 1e3:.0f} ms")  # fmt: skip
    if blas["warning"]:
        notes.append(f"warning: {blas['warning']}")
    for case in results["prefill"] + results["decode"]:
        for name, note in case["notes"].items():
            notes.append(f"{case['spec']} b={case['batch']} {case['dtype']}: {name} {note}")
    table.caption = "\n".join(notes)
    table.caption_justify = "left"
    console.print(table)
    profiled = [case for case in results["prefill"] if case.get("profile")]
    if profiled:
        console.print(profile_table(profiled))


def profile_table(cases: list[dict[str, Any]]) -> Table:
    """Where tfm's prefill time goes at batch 1: ms a pass by kind of work, and the GEMMs' GFLOP/s."""
    table = Table(title="Where tfm's prefill time goes at b=1 (ms a pass, instrumented; GEMMs in GFLOP/s)",
                  title_justify="left")  # fmt: skip
    table.add_column("kind of work")
    for case in cases:
        table.add_column(f"{case['spec']} {case['dtype']}", justify="right")
    for kind in (*PROFILE, "other"):
        cells = []
        for case in cases:
            p = case["profile"]
            rate = f", {p['gflops'][kind]:.0f} GFLOP/s" if kind in p["gflops"] else ""
            cells.append(f"{p['ms'][kind]:.1f} ({p['ms'][kind] / p['total_ms']:.0%}{rate})")
        table.add_row(kind, *cells)
    table.add_section()
    table.add_row("the pass", *(f"{case['profile']['total_ms']:.1f}" for case in cases))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    console = Console(stderr=True)
    rounds = 3 if args.quick else 7
    here = probe()
    results: dict[str, Any] = {
        "machine": machine(),
        "blas": blas_info(),
        "gemm_gflops": {dtype: gemm_gflops(dtype) for dtype in ("float32", "float64")},
        "prefill": [
            prefill_case(spec, dtype, b, rounds, console)
            for spec in (BENCH_SPEC, LLAMA_SPEC)
            for dtype in ("float32", "float64")
            for b in (1, 8)
        ],  # fmt: skip
        "decode": [
            decode_case(spec, "float32", 1, rounds, console, here.bandwidth)
            for spec in (replace(BENCH_SPEC, mask="causal"), LLAMA_SPEC)
        ],  # fmt: skip
    }
    tfm = [sys.executable, "-m", "transformer_cli"]
    spec_file = str(Path(__file__).parent.parent / "examples" / "configs" / "gpt2-small.yaml")
    console.log("start-up")
    results["commands"] = median_seconds({"import_baseline_s": [sys.executable, "-c",
                                                                "import typer, rich.table, yaml, numpy"],
                                          "help_s": [*tfm, "--help"], "count_s": [*tfm, "count", spec_file]},
                                         3 * rounds)  # fmt: skip
    report(results, Console())
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
