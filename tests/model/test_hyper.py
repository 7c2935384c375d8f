"""Hyper-connections (components/hyper.py, hc_streams: DeepSeek-V4's mHC) against transformers' own modules,
DeepseekV4HyperConnection and DeepseekV4HyperHead, run in float64 (their float32 casts made float64 from their own
source, as tests/formats/hf_exact_mamba.py does): the sublayer's weights (pre, post, the Sinkhorn-balanced mix), the
collapsed input, a block's streams, the head; each with a control that must break. Then a model of them: its count
against the closed form, decoding against the parallel pass, refusals."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights
from hf_exact_mamba import float64_source

from transformer_cli import Transformer, count_params, make_setup
from transformer_cli.components.hyper import HyperState
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality

torch = pytest.importorskip("torch", reason="PyTorch is the reference")
transformers = pytest.importorskip("transformers", reason="transformers' DeepSeek-V4 modules are the reference")

N_STREAMS, D, SINKHORN, EPS = 3, 16, 4, 1e-6
SPEC = spec_from_mapping(
    dict(N=2, H=2, m=8, d=D, r=24, V=50, mask="causal", norm="pre", norm_type="rmsnorm", norm_eps=1e-5,
         feedforward="gated", activation="silu", positional="rope", hc_streams=N_STREAMS, hc_sinkhorn=SINKHORN),
    "hyper.yaml",
)  # fmt: skip


def _modules():
    """transformers' hyper-connection and head of a tiny DeepSeek-V4, random, their forwards in float64."""
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as v4

    cfg = transformers.DeepseekV4Config(hidden_size=D, hc_mult=N_STREAMS, hc_sinkhorn_iters=SINKHORN, hc_eps=EPS,
                                        rms_norm_eps=1e-5)  # fmt: skip
    torch.manual_seed(0)
    hc, head = v4.DeepseekV4HyperConnection(cfg).double(), v4.DeepseekV4HyperHead(cfg).double()
    for module in (hc, head):
        for p in module.parameters():
            torch.nn.init.normal_(p, std=0.5)
    for module in (*hc.modules(), *head.modules()):  # (their unweighted RMSNorm's float32 too)
        namespace = vars(sys.modules[type(module).__module__])
        module.forward = float64_source(type(module).forward, namespace).__get__(module)
    return hc, head


def _state(hc, head) -> HyperState:
    weights = {"hc_head.W": head.hc_fn, "hc_head.b": head.hc_base, "hc_head.scale": head.hc_scale}
    for part in ("attn", "ff"):  # (one module for both sublayers: the tests' block runs it twice)
        weights |= {
            f"blocks.0.hc_{part}.{x}": p for x, p in zip(("W", "b", "scale"), (hc.fn, hc.base, hc.scale), strict=True)
        }
    arrays = {k: v.detach().numpy() for k, v in weights.items()}
    return HyperState(replace(SPEC, N=1), arrays.__getitem__)


def _streams(rng) -> tuple[np.ndarray, np.ndarray]:
    """Random streams as transformers holds them (b, t, n, d) and as tfm does (n d, b, t)."""
    X = rng.normal(size=(2, 5, N_STREAMS, D))
    return X, np.ascontiguousarray(X.transpose(2, 3, 0, 1)).reshape(N_STREAMS * D, 2, 5)


def test_a_sublayers_weights_and_collapsed_input_are_transformers():
    hc, head = _modules()
    state = _state(hc, head)
    X, Z = _streams(np.random.default_rng(1))
    with torch.no_grad():
        post, comb, collapsed = hc(torch.from_numpy(X))
    pre, ours_post, C = state._weights(state.blocks[0][0], Z)
    S = Z.reshape(N_STREAMS, D, 2, 5)
    np.testing.assert_allclose(ours_post, post.numpy().transpose(2, 0, 1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(C, comb.numpy().transpose(2, 3, 0, 1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state._collapsed(pre, S), collapsed.numpy().transpose(2, 0, 1), rtol=1e-12)
    assert np.allclose(C.sum(axis=0), 1, atol=1e-5) and np.allclose(C.sum(axis=1), 1, atol=1e-3)  # (Sinkhorn's)
    once = HyperState(replace(SPEC, N=1, hc_sinkhorn=1), {k: v for k, v in _weights(state).items()}.__getitem__)
    assert not np.allclose(once._weights(once.blocks[0][0], Z)[2], C, atol=1e-6)  # the control: one iteration


def _weights(state: HyperState) -> dict:
    (attn, ff), head = state.blocks[0], state.head
    out = {f"blocks.0.hc_attn.{x}": a for x, a in zip(("W", "b", "scale"), attn, strict=True)}
    out |= {f"blocks.0.hc_ff.{x}": a for x, a in zip(("W", "b", "scale"), ff, strict=True)}
    return out | {f"hc_head.{x}": a for x, a in zip(("W", "b", "scale"), head, strict=True)}


def test_a_blocks_streams_are_the_decoder_layers_and_the_head_its_head():
    """DeepseekV4DecoderLayer: X_k = post_k f(N(collapsed)) + sum_j comb_jk X_j around each sublayer (here f a tanh
    and a square, N the identity), then DeepseekV4HyperHead."""
    hc, head = _modules()
    state = _state(hc, head)
    X, Z = _streams(np.random.default_rng(2))
    hidden = torch.from_numpy(X)
    with torch.no_grad():
        for f in (torch.tanh, torch.square):
            post, comb, collapsed = hc(hidden)
            hidden = post.unsqueeze(-1) * f(collapsed).unsqueeze(-2) + torch.matmul(comb.transpose(-1, -2), hidden)
        final = head(hidden).numpy().transpose(2, 0, 1)
    ours = state.block(0, Z, np.tanh, np.square, lambda x, norm: x, (None, None), None)
    theirs = np.ascontiguousarray(hidden.numpy().transpose(2, 3, 0, 1)).reshape(ours.shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(state.unstack(ours), final, rtol=1e-12, atol=1e-13)
    untransposed = state.blocks[0][0]  # the control: the mix applied as C rather than its transpose
    pre, post, C = state._weights(untransposed, Z)
    S = Z.reshape(N_STREAMS, D, 2, 5)
    assert not np.allclose(np.einsum("kjbt,jdbt->kdbt", C, S), np.einsum("jkbt,jdbt->kdbt", C, S), atol=1e-3)


def test_a_model_of_streams_counts_its_closed_form_and_decodes_as_its_parallel_pass():
    spec = SPEC
    count = count_params(spec)
    n, d = N_STREAMS, D
    hyper = 2 * 2 * ((2 + n) * n * (n * d + 1) + 3) + n * (n * d + 1) + 1
    plain = count_params(replace(spec, hc_streams=None)).total
    assert count.total == count.closed_total == plain + hyper
    weights = random_weights(spec, 4)
    model = Transformer(spec, weights)
    ids = np.random.default_rng(3).integers(0, spec.V, size=(2, 9))
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=4) - full).max() < 1e-11 * np.abs(full).max()
    assert np.abs(decode(model, ids, prompt=4, stale_at=5) - full)[..., 6:].max() > 1e-3  # (a key never stored)
    assert np.abs(Transformer(replace(spec, hc_sinkhorn=1), weights)(ids) - full).max() > 1e-6  # (its iterations)
    setup = lambda: make_setup(spec, weights, 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK  # (per token: the attention's causality)


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ({"hc_streams": 1}, "at least 2 streams"),
        ({"hc_sinkhorn": 4}, "no hc_sinkhorn without hc_streams"),
        ({"hc_streams": 2, "norm": "post"}, "post., expected pre"),
        ({"hc_streams": 2, "hc_form": "gated", "hc_rank": 4, "norm": "pre"}, "none with hc_form gated"),
        ({"hc_streams": 2, "hc_form": "gated"}, "a rank with hc_form gated"),
        ({"hc_streams": 2, "norm": "pre", "hc_form": "independent", "hc_sinkhorn": 3}, "no hc_sinkhorn with hc_form"),
        ({"hc_head": "mean"}, "no hc_head without hc_streams"),
    ],
)
def test_hyper_connections_keys_that_do_not_fit_are_refused_in_one_line(keys, says):
    base = {"N": 2, "H": 2, "m": 8, "d": 16, "r": 24, "V": 50, "mask": "causal"}
    with pytest.raises(SpecError, match=says):
        spec_from_mapping(base | keys, "s.yaml")


def test_hy_v4s_independent_streams_and_glm_5_nexts_mean_head_are_transformers():
    """HY-V4's HYV4HyperConnection (no mix: each stream keeps its own, post = magnitude sigmoid + eps) and
    HYV4HyperHead; GLM-5-Next's Glm5NextTextHyperHead (the streams' mean)."""
    from transformers.models.glm5_next import modeling_glm5_next as glm
    from transformers.models.hy_v4 import modeling_hy_v4 as hy

    cfg = transformers.HYV4Config(hidden_size=D, hc_mult=N_STREAMS, hc_magnitude=1.5, hc_eps=EPS, rms_norm_eps=1e-5)
    torch.manual_seed(1)
    hc, head = hy.HYV4HyperConnection(cfg).double(), hy.HYV4HyperHead(cfg).double()
    for module in (hc, head):
        for p in module.parameters():
            torch.nn.init.normal_(p, std=0.5)
    for module in (*hc.modules(), *head.modules()):
        module.forward = float64_source(type(module).forward, vars(hy)).__get__(module)
    spec = replace(SPEC, N=1, hc_form="independent", hc_post_scale=1.5)
    weights = {"hc_head.W": head.hc_fn, "hc_head.b": head.hc_base, "hc_head.scale": head.hc_scale}
    for part in ("attn", "ff"):
        weights |= {
            f"blocks.0.hc_{part}.{x}": p for x, p in zip(("W", "b", "scale"), (hc.fn, hc.base, hc.scale), strict=True)
        }
    arrays = {k: v.detach().numpy() for k, v in weights.items()}
    state = HyperState(spec, arrays.__getitem__)
    X, Z = _streams(np.random.default_rng(4))
    hidden = torch.from_numpy(X)
    with torch.no_grad():
        for f in (torch.tanh, torch.square):  # (HYV4DecoderLayer: post times the sublayer's output plus the streams)
            post, collapsed = hc(hidden)
            hidden = post.unsqueeze(-1) * f(collapsed).unsqueeze(-2) + hidden
        final = head(hidden).numpy().transpose(2, 0, 1)
        mean = glm.Glm5NextTextHyperHead()(hidden).numpy().transpose(2, 0, 1)
    ours = state.block(0, Z, np.tanh, np.square, lambda x, norm: x, (None, None), None)
    theirs = np.ascontiguousarray(hidden.numpy().transpose(2, 3, 0, 1)).reshape(ours.shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(state.unstack(ours), final, rtol=1e-12, atol=1e-13)
    meaned = HyperState(replace(spec, hc_head="mean"), arrays.__getitem__)
    np.testing.assert_allclose(meaned.unstack(ours), mean, rtol=1e-13)
    as_deepseek = HyperState(replace(spec, hc_post_scale=2.0), arrays.__getitem__)  # the control: DeepSeek's post
    assert not np.allclose(as_deepseek.block(0, Z, np.tanh, np.square, lambda x, norm: x, (None, None), None), ours)
    counted = count_params(replace(SPEC, hc_form="independent", hc_head="mean"))
    plain = count_params(replace(SPEC, hc_streams=None)).total
    assert counted.total == counted.closed_total == plain + SPEC.N * 2 * (2 * N_STREAMS * (N_STREAMS * D + 1) + 2)


def test_qwen4s_gated_residual_is_transformers():
    """Qwen4's Qwen4ExpTextGatedResidual around each sublayer (the gated mean of the per-stream-normed streams in,
    2 sigmoid(W_inject N / n) times the output added to every stream) and its mixer as the head."""
    from transformers.models.qwen4_exp import modeling_qwen4_exp as q4

    rank = 5
    cfg = transformers.Qwen4ExpTextConfig(hidden_size=D, hc_count=N_STREAMS, hc_lowrank=rank, rms_norm_eps=1e-5)
    torch.manual_seed(2)
    hc, head = q4.Qwen4ExpTextGatedResidual(cfg).double(), q4.Qwen4ExpTextGatedResidual(cfg, use_combine=False).double()
    for module in (hc, head):
        for p in module.parameters():
            torch.nn.init.normal_(p, std=0.3)
    for module in (*hc.modules(), *head.modules()):
        module.forward = float64_source(type(module).forward, vars(q4)).__get__(module)
    spec = spec_from_mapping(
        dict(N=1, H=2, m=8, d=D, r=24, V=50, mask="causal", norm="none", norm_plus_one=True, hc_streams=N_STREAMS,
             hc_form="gated", hc_rank=rank, hc_eps=1e-5),
        "gated.yaml",
    )  # fmt: skip
    torch_weights = {"norm.gamma": hc.hc_norm.weight, "W_down": hc.input_mix_weight_down.weight}
    torch_weights |= {"W_up": hc.input_mix_weight_up.weight, "W_inject": hc.block_inject_weight.weight}
    arrays = {
        f"blocks.0.hc_{part}.{x}": w.detach().numpy() for part in ("attn", "ff") for x, w in torch_weights.items()
    }
    arrays |= {"hc_head.norm.gamma": head.hc_norm.weight.detach().numpy()}
    arrays |= {"hc_head.W_down": head.input_mix_weight_down.weight.detach().numpy()}
    arrays |= {"hc_head.W_up": head.input_mix_weight_up.weight.detach().numpy()}
    from transformer_cli.components.hyper import GatedState

    state = GatedState(spec, arrays.__getitem__)
    X, Z = _streams(np.random.default_rng(5))
    hidden = torch.from_numpy(X).flatten(-2)  # (b, t, n d): Qwen4 keeps the streams side by side
    with torch.no_grad():
        for f in (torch.tanh, torch.square):  # (Qwen4ExpTextDecoderLayer's combination)
            mixed, hyper_input, injection = hc(hidden)
            hidden = hyper_input + (f(mixed).unsqueeze(-2) * injection.unsqueeze(-1)).flatten(-2)
        final = head(hidden).numpy().transpose(2, 0, 1)
    ours = state.block(0, Z, np.tanh, np.square, lambda x, norm: x, (None, None), None)
    theirs = np.ascontiguousarray(hidden.numpy().transpose(2, 0, 1))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(state.unstack(ours), final, rtol=1e-12, atol=1e-13)
    plain = GatedState(replace(spec, norm_plus_one=False), arrays.__getitem__)  # the control: gains w, not 1 + w
    assert not np.allclose(plain.block(0, Z, np.tanh, np.square, lambda x, norm: x, (None, None), None), ours)
    n, d = N_STREAMS, D
    counted = count_params(replace(spec, N=2))
    plain_count = count_params(replace(spec, N=2, hc_streams=None, hc_form="mixed", hc_rank=None)).total
    assert (
        counted.total
        == counted.closed_total
        == plain_count + 2 * 2 * n * d * (2 * rank + n + 1) + n * d * (2 * rank + 1)
    )
    model_spec = replace(spec, N=2)
    model = Transformer(model_spec, random_weights(model_spec, 5))
    ids = np.random.default_rng(6).integers(0, spec.V, size=(2, 9))
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=4) - full).max() < 1e-11 * np.abs(full).max()  # (per token)
