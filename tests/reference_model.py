"""The straightforward forward pass, kept as the reference the optimised model must match.

Written for clarity, not speed: X is (b, d, n), scores are the seed's (n_k, n_q) layout, all at once.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np


def softmax_columns(S):
    A = np.exp(S - S.max(axis=-2, keepdims=True))
    return A / A.sum(axis=-2, keepdims=True)


def layer_norm(X, gamma, beta, eps, plus_one=False, rms=True):
    """layernorm with gamma and beta; rmsnorm when beta is None: x / sqrt(mean(x^2) + eps) * gamma (or 1 + gamma)."""
    if beta is None and rms:
        return X / np.sqrt((X**2).mean(axis=-2, keepdims=True) + eps) * ((1.0 if plus_one else 0.0) + gamma[:, None])
    beta = np.zeros_like(gamma) if beta is None else beta  # a layer norm without bias
    mean = X.mean(axis=-2, keepdims=True)
    var = X.var(axis=-2, keepdims=True)
    return (X - mean) / np.sqrt(var + eps) * gamma[:, None] + beta[:, None]


def activation(name, X):
    if name == "relu":
        return np.maximum(X, 0)
    if name == "silu":
        return X / (1 + np.exp(-X))
    if name == "gelu_exact":  # x Phi(x), Phi the normal distribution function
        return X * np.vectorize(lambda x: 0.5 * math.erfc(-x / math.sqrt(2)))(X)
    root = 0.79788456 if name == "gelu_bloom" else np.sqrt(2 / np.pi)  # BLOOM's code writes sqrt(2/pi) so
    return 0.5 * X * (1 + np.tanh(root * (X + 0.044715 * X**3)))


def positions(spec, w, n):
    if spec.positional == "sinusoidal":
        rows = np.arange(spec.d)[:, None]
        angle = np.arange(n)[None, :] / 10000.0 ** (2 * (rows // 2) / spec.d)
        return np.where(rows % 2 == 0, np.sin(angle), np.cos(angle))
    if spec.positional == "learned":  # read from column position_offset on (OPT, RoBERTa)
        start = spec.position_offset or 0
        return w["positional.P"][:, start : start + n]
    return 0.0


def llama3_frequency(spec, f):
    """Llama 3.1: wavelength 2 pi / f over L / low_freq_factor: f / factor; under L / high_freq_factor: f; else
    (1 - s) f / factor + s f with s = (L / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)."""
    L, low, high = spec.rope_original_max_len, spec.rope_low_freq_factor, spec.rope_high_freq_factor
    wavelength = 2 * math.pi / f
    if wavelength > L / low:
        return f / spec.rope_factor
    if wavelength < L / high:
        return f
    s = (L / wavelength - low) / (high - low)
    return (1 - s) * f / spec.rope_factor + s * f


def rotary_matrices(spec, n):
    """R[t] (m, m): the rotation of one head's entries at position t, a 2 x 2 block [[c, -s], [s, c]] per pair."""
    rot = int(spec.m * spec.rope_fraction)
    R = np.tile(np.eye(spec.m), (n, 1, 1))
    for j in range(rot // 2):
        f = spec.rope_theta ** (-2 * j / rot)
        if spec.rope_scaling == "llama3":
            f = llama3_frequency(spec, f)
        x, y = (j, j + rot // 2) if spec.rope_pairing == "half" else (2 * j, 2 * j + 1)
        for t in range(n):
            c, s = math.cos(t * f), math.sin(t * f)
            R[t, x, x], R[t, x, y], R[t, y, x], R[t, y, y] = c, -s, s, c
    return R


def _whole_width_qk(spec, w, p, X):
    """Every head's query and key projections, each set normalised over all its heads' entries together:
    {"Q": (H, b, m, n), "K": (G, b, m, n)}."""
    out = {}
    for k in ("Q", "K"):
        W = w[p + f"attention.W_{k}"]  # (heads, m, d)
        heads, m, d = W.shape
        flat = np.einsum("od,bdn->bon", W.reshape(heads * m, d), X)  # (b, heads m, n)
        if spec.attention_bias:
            flat = flat + w[p + f"attention.b_{k}"].reshape(-1)[:, None]
        gamma, beta = w[p + f"attention.{k.lower()}_norm.gamma"], w.get(p + f"attention.{k.lower()}_norm.beta")
        flat = layer_norm(flat, gamma, beta, spec.norm_eps, spec.norm_plus_one, spec.norm_type == "rmsnorm")
        out[k] = flat.reshape(flat.shape[0], heads, m, -1).transpose(1, 0, 2, 3)
    return out


def alibi_slope(H, h):
    """Head h's ALiBi slope, by the paper's geometric sequence: with P the largest power of two up to H, the first
    P heads take 2^(-8/P) to the powers 1 .. P, the others every other slope of 2P heads, 2^(-4/P) to the odd
    powers 1, 3, ..."""
    P = 2 ** int(math.log2(H))
    return (2 ** (-8 / P)) ** (h + 1) if h < P else (2 ** (-4 / P)) ** (2 * (h - P) + 1)


def attention(spec, w, p, X):
    """sum_h W_O^h (W_V^h X + b_V) Softmax(scale (W_K^h X + b_K)^T (W_Q^h X + b_Q)) + b_O, per head."""
    n = X.shape[-1]
    out = np.zeros_like(X)
    per_group = spec.H // (spec.G or spec.H)  # query heads that share one key/value head
    whole = _whole_width_qk(spec, w, p, X) if spec.qk_norm and spec.qk_norm_over == "all" else None
    for h in range(spec.H):
        proj = {}
        for k in ("Q", "K", "V"):
            g = h if k == "Q" else h // per_group  # query head h reads key/value head h // (H/G)
            proj[k] = np.einsum("md,bdn->bmn", w[p + f"attention.W_{k}"][g], X)
            if spec.attention_bias:
                proj[k] = proj[k] + w[p + f"attention.b_{k}"][g][:, None]
            if whole is not None and k != "V":  # all heads' projections normalised together (OLMo 2)
                proj[k] = whole[k][g]
            elif spec.qk_norm and k != "V":  # each head over its m entries (axis -2 of (b, m, n)), before the rotation
                gain = w[p + f"attention.{k.lower()}_norm.gamma"]
                beta = w.get(p + f"attention.{k.lower()}_norm.beta")
                g = gain[g] if gain.ndim == 2 else gain  # per_head: head g's own gains
                proj[k] = layer_norm(proj[k], g, beta, spec.norm_eps, spec.norm_plus_one, spec.norm_type == "rmsnorm")
            if spec.positional == "rope" and k != "V":  # rotary positions turn queries and keys, never values
                proj[k] = np.einsum("tij,bjt->bit", rotary_matrices(spec, n), proj[k])
        S = spec.score_scale * np.einsum("bmk,bmq->bkq", proj["K"], proj["Q"])  # (b, n_k, n_q)
        if spec.positional == "alibi":  # slope_h (s - t) on key s's score for query t
            S = S + alibi_slope(spec.H, h) * (np.arange(n)[:, None] - np.arange(n)[None, :])
        if spec.mask == "causal":
            S = np.where(np.arange(n)[:, None] > np.arange(n)[None, :], -np.inf, S)
        if spec.window:  # and keys more than w - 1 before the query
            S = np.where(np.arange(n)[:, None] <= np.arange(n)[None, :] - spec.window, -np.inf, S)
        out = out + np.einsum("dm,bmq->bdq", w[p + "attention.W_O"][h], proj["V"] @ softmax_columns(S))
    if p + "attention.b_O" in w:
        out = out + w[p + "attention.b_O"][:, None]
    return out


def feedforward(spec, w, p, X):
    """W2 act(W1 X + b1) + b2; gated: W2 (act(W1 X + b1) * (W3 X + b3)) + b2; biases only with ff_bias.
    With experts: each column's k best-scored experts, weighted by a softmax over their k scores."""
    if spec.E:
        return experts(spec, w, p, X)

    def linear(k, X):
        out = np.einsum("rd,bdn->brn", w[p + f"ff.W{k}"], X)
        return out + w[p + f"ff.b{k}"][:, None] if spec.ff_bias else out

    hidden = activation(spec.activation, linear(1, X))
    if spec.feedforward == "gated":
        hidden = hidden * linear(3, X)
    return linear(2, hidden)


def experts(spec, w, p, X):
    """Column by column: sort the router's scores, keep the top k, softmax them, add up those experts."""
    out = np.zeros_like(X)
    for b in range(X.shape[0]):
        for t in range(X.shape[-1]):
            x = X[b, :, t]
            scores = w[p + "ff.router"] @ x
            top = sorted(range(spec.E), key=lambda e: (-scores[e], e))[: spec.k]
            gates = np.exp(scores[top] - scores[top].max())
            gates /= gates.sum()
            for e, g in zip(top, gates, strict=True):
                one = {name: v[e] for name, v in w.items() if name.startswith((p + "ff.W", p + "ff.b"))}
                out[b, :, t] += g * feedforward(replace(spec, E=None, k=None), one, p, x[None, :, None])[0, :, 0]
    return out


def layer_spec(spec, i):
    """Block i as its per-layer kinds say, read plainly: a full block has no window, a dense block no experts."""
    changes = {"attention_layers": None, "feedforward_layers": None}
    if spec.attention_layers and spec.attention_layers[i % len(spec.attention_layers)] == "full":
        changes["window"] = None
    if spec.feedforward_layers and spec.feedforward_layers[i % len(spec.feedforward_layers)] == "dense":
        changes |= {"E": None, "k": None}
    return replace(spec, **changes)


def reference_forward(spec, w, X):
    """Transformer(X) for X (d, n) or (b, d, n), or token ids (n,) or (b, n) with a vocabulary, written out plainly."""
    ids = np.issubdtype(X.dtype, np.integer)
    if ids:  # one column of E per token, times sqrt(d) if the spec says so
        factor = {"none": 1.0, "sqrt": np.sqrt(spec.d)}.get(spec.embed_scale, spec.embed_scale)  # type: ignore
        X = np.moveaxis(w["embedding.E"][:, X], 0, -2) * factor
        if spec.embed_dim:  # up from the embedding's width to d
            X = np.einsum("de,...en->...dn", w["embedding.W_in"], X)
    X3 = (X[None] if X.ndim == 2 else X) + positions(spec, w, X.shape[-1])
    eps = spec.norm_eps
    if spec.type_vocab:  # token type 0 for every token
        X3 = X3 + w["embedding.T"][:, :1]
    if spec.embed_norm:
        rms = spec.norm_type == "rmsnorm"
        X3 = layer_norm(X3, w["embedding.norm.gamma"], w.get("embedding.norm.beta"), eps, spec.norm_plus_one, rms)

    def norm(X, gamma, beta, eps):  # the spec's variant, (1 + gamma) or not, for every norm below
        return layer_norm(X, gamma, beta, eps, spec.norm_plus_one, spec.norm_type == "rmsnorm")

    model, s = spec, spec.residual_scale  # each sublayer's output times s as it joins the residual
    for i in range(model.N):
        spec = layer_spec(model, i)  # block i's window and feedforward
        p = f"blocks.{i}."
        ln = {k: (w.get(p + f"{k}.gamma"), w.get(p + f"{k}.beta")) for k in ("norm1", "norm2")}
        if spec.parallel:  # both sublayers read the block's input; one shared norm or two
            second = ln["norm1"] if spec.shared_norm else ln["norm2"]
            h1, h2 = norm(X3, *ln["norm1"], eps), norm(X3, *second, eps)
            X3 = X3 + s * attention(spec, w, p, h1) + s * feedforward(spec, w, p, h2)
        elif spec.norm == "post":
            X3 = norm(X3 + s * attention(spec, w, p, X3), *ln["norm1"], eps)
            X3 = norm(X3 + s * feedforward(spec, w, p, X3), *ln["norm2"], eps)
        elif spec.norm == "pre":
            X3 = X3 + s * attention(spec, w, p, norm(X3, *ln["norm1"], eps))
            X3 = X3 + s * feedforward(spec, w, p, norm(X3, *ln["norm2"], eps))
        elif spec.norm == "output":  # only each sublayer's output normalised, before its residual (OLMo 2)
            out = {k: (w.get(p + f"{k}.gamma"), w.get(p + f"{k}.beta")) for k in ("norm1_out", "norm2_out")}
            X3 = X3 + norm(s * attention(spec, w, p, X3), *out["norm1_out"], eps)
            X3 = X3 + norm(s * feedforward(spec, w, p, X3), *out["norm2_out"], eps)
        elif spec.norm == "sandwich":  # each sublayer's output normalised too, before its residual
            out = {k: (w.get(p + f"{k}.gamma"), w.get(p + f"{k}.beta")) for k in ("norm1_out", "norm2_out")}
            X3 = X3 + norm(s * attention(spec, w, p, norm(X3, *ln["norm1"], eps)), *out["norm1_out"], eps)
            X3 = X3 + norm(s * feedforward(spec, w, p, norm(X3, *ln["norm2"], eps)), *out["norm2_out"], eps)
        else:
            X3 = X3 + s * attention(spec, w, p, X3)
            X3 = X3 + s * feedforward(spec, w, p, X3)
    spec = model
    if spec.norm in ("pre", "sandwich", "output"):
        X3 = norm(X3, w["final_norm.gamma"], w.get("final_norm.beta"), eps)
    if spec.V and spec.head:  # logits: the head, or E^T when tied, and its bias
        if spec.embed_dim:  # down to the embedding's width first
            X3 = np.einsum("ed,bdn->ben", w["head.W_out"], X3)
        W = w["embedding.E"].T if spec.tie_embeddings else w["head.W"]
        X3 = np.einsum("vd,bdn->bvn", W, X3) + (w["head.b"][:, None] if spec.head_bias else 0.0)
        X3 = X3 * spec.logit_scale
    return X3[0] if X.ndim == 2 else X3
