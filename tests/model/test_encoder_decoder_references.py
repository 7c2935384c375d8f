"""Encoder-decoders against their references: PyTorch's nn.Transformer, transformers' T5, BART, mT5 and mBART."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli import Spec, count_params
from transformer_cli.components.tensors import all_tensors


def _torch_weights(model, d: int, H: int, N_enc: int, N: int, norm: str) -> dict:
    """nn.Transformer's tensors under tfm's names (in_proj rows are [q; k; v]; out_proj is (d, H m))."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    m = d // H
    w = {}

    def attention(ours: str, theirs: str) -> None:
        W, b = sd[theirs + ".in_proj_weight"], sd[theirs + ".in_proj_bias"]
        for j, x in enumerate("QKV"):
            w[f"{ours}.W_{x}"] = W[j * d : (j + 1) * d].reshape(H, m, d)
            w[f"{ours}.b_{x}"] = b[j * d : (j + 1) * d].reshape(H, m)
        w[f"{ours}.W_O"] = sd[theirs + ".out_proj.weight"].reshape(d, H, m).transpose(1, 0, 2)
        w[f"{ours}.b_O"] = sd[theirs + ".out_proj.bias"]

    def norm_(ours: str, theirs: str) -> None:
        w[ours + ".gamma"], w[ours + ".beta"] = sd[theirs + ".weight"], sd[theirs + ".bias"]

    def feedforward(ours: str, theirs: str) -> None:
        w[ours + ".ff.W1"], w[ours + ".ff.b1"] = sd[theirs + ".linear1.weight"], sd[theirs + ".linear1.bias"]
        w[ours + ".ff.W2"], w[ours + ".ff.b2"] = sd[theirs + ".linear2.weight"], sd[theirs + ".linear2.bias"]

    for j in range(N_enc):
        p = f"encoder.layers.{j}"
        attention(f"encoder.{j}.attention", p + ".self_attn")
        feedforward(f"encoder.{j}", p)
        norm_(f"encoder.{j}.norm1", p + ".norm1")
        norm_(f"encoder.{j}.norm2", p + ".norm2")
    for i in range(N):
        p = f"decoder.layers.{i}"
        attention(f"blocks.{i}.attention", p + ".self_attn")
        attention(f"blocks.{i}.cross", p + ".multihead_attn")
        feedforward(f"blocks.{i}", p)
        norm_(f"blocks.{i}.norm1", p + ".norm1")  # after (post) or before (pre) the self-attention
        norm_(f"blocks.{i}.cross_norm", p + ".norm2")  # the cross-attention's
        norm_(f"blocks.{i}.norm2", p + ".norm3")  # the feedforward's
    if norm == "pre":
        norm_("encoder_final_norm", "encoder.norm")
        norm_("final_norm", "decoder.norm")
    return w


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_forward_pass_equals_pytorchs_nn_transformer(norm):
    """nn.Transformer (float64, no dropout): post-norm as in the paper (its extra final norms removed), and
    pre-norm (norm_first, with them). Different encoder and decoder depths, source and target lengths."""
    torch = pytest.importorskip("torch", reason="PyTorch is the independent implementation here")
    from transformer_cli.model.encoder_decoder import EncoderDecoder

    d, H, r, N_enc, N = 16, 4, 24, 2, 3
    torch.manual_seed(0)
    model = torch.nn.Transformer(
        d, H, N_enc, N, r, dropout=0.0, batch_first=True, norm_first=norm == "pre", dtype=torch.float64
    ).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():  # biases and norms random too, norm gains around 1
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in name and name.endswith("weight") else 0.0))
    if norm == "post":
        model.encoder.norm = model.decoder.norm = None
    spec = Spec(N=N, N_enc=N_enc, H=H, m=d // H, d=d, r=r, scale="sqrt", mask="causal", norm=norm, attention_bias=True)
    weights = _torch_weights(model, d, H, N_enc, N, norm)
    assert set(weights) == {t.name for t in all_tensors(spec)}
    rng = np.random.default_rng(1)
    src, tgt = rng.normal(size=(2, d, 7)), rng.normal(size=(2, d, 5))
    with torch.no_grad():
        mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
        theirs = (
            model(torch.from_numpy(src.transpose(0, 2, 1)), torch.from_numpy(tgt.transpose(0, 2, 1)), tgt_mask=mask)
            .numpy()
            .transpose(0, 2, 1)
        )
        unmasked = (
            model(torch.from_numpy(src.transpose(0, 2, 1)), torch.from_numpy(tgt.transpose(0, 2, 1)))
            .numpy()
            .transpose(0, 2, 1)
        )
    ours = EncoderDecoder(spec, weights)(src, tgt)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-12  # measured: 8.3e-16 (post), 8.8e-16 (pre)
    assert np.max(np.abs(ours - unmasked)) / np.max(np.abs(theirs)) > 1e-3  # control: causal (0.2, 0.67)


# -- T5 against transformers (relative position bias, RMSNorm, tied and scaled or untied head) -------------


def _t5_weights(model, cfg) -> dict:
    """transformers' T5 names onto tfm's (the relative bias tables live in block 0 of each stack)."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    H, m, d = cfg.num_heads, cfg.d_kv, cfg.d_model
    gated = cfg.is_gated_act
    w = {
        "embedding.E": sd["shared.weight"].T,
        "encoder_final_norm.gamma": sd["encoder.final_layer_norm.weight"],
        "final_norm.gamma": sd["decoder.final_layer_norm.weight"],
        "encoder_positional.rel_bias": sd["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
        "positional.rel_bias": sd["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
    }

    def attention(ours: str, theirs: str) -> None:
        for x in "qkv":
            w[f"{ours}.W_{x.upper()}"] = sd[f"{theirs}.{x}.weight"].reshape(H, m, d)
        w[f"{ours}.W_O"] = sd[f"{theirs}.o.weight"].reshape(d, H, m).transpose(1, 0, 2)

    def feedforward(ours: str, theirs: str) -> None:
        if gated:
            w[ours + ".W1"], w[ours + ".W3"] = sd[theirs + ".wi_0.weight"], sd[theirs + ".wi_1.weight"]
        else:
            w[ours + ".W1"] = sd[theirs + ".wi.weight"]
        w[ours + ".W2"] = sd[theirs + ".wo.weight"]

    for j in range(cfg.num_layers):
        p = f"encoder.block.{j}.layer."
        attention(f"encoder.{j}.attention", p + "0.SelfAttention")
        w[f"encoder.{j}.norm1.gamma"] = sd[p + "0.layer_norm.weight"]
        feedforward(f"encoder.{j}.ff", p + "1.DenseReluDense")
        w[f"encoder.{j}.norm2.gamma"] = sd[p + "1.layer_norm.weight"]
    for i in range(cfg.num_decoder_layers):
        p = f"decoder.block.{i}.layer."
        attention(f"blocks.{i}.attention", p + "0.SelfAttention")
        w[f"blocks.{i}.norm1.gamma"] = sd[p + "0.layer_norm.weight"]
        attention(f"blocks.{i}.cross", p + "1.EncDecAttention")
        w[f"blocks.{i}.cross_norm.gamma"] = sd[p + "1.layer_norm.weight"]
        feedforward(f"blocks.{i}.ff", p + "2.DenseReluDense")
        w[f"blocks.{i}.norm2.gamma"] = sd[p + "2.layer_norm.weight"]
    return w


def _float64_t5_norm(self, hidden):  # T5LayerNorm takes the mean square in float32; the same in float64
    return self.weight * (hidden * torch_module().rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def torch_module():
    import torch

    return torch


@pytest.mark.parametrize("variant", ["t5-tied-relu", "t5-v1.1-untied-gated-gelu"])
def test_t5_logits_equal_transformers(variant):
    torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
    transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
    from transformer_cli.model.encoder_decoder import EncoderDecoder

    tied = variant == "t5-tied-relu"
    cfg = transformers.T5Config(
        vocab_size=97,
        d_model=32,
        d_kv=12,
        d_ff=40,
        num_layers=2,
        num_decoder_layers=3,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=20,
        feed_forward_proj="relu" if tied else "gated-gelu",
        dropout_rate=0.0,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(cfg).double().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "layer_norm" in name else 0.0))
        if not tied:  # a head of its own, as T5 1.1's files hold (5.x ties it when built from a config)
            model.lm_head.weight = torch.nn.Parameter(torch.randn(97, 32, dtype=torch.float64) * 0.3)
            model.config.scale_decoder_outputs = False
    for module in model.modules():
        if type(module).__name__ == "T5LayerNorm":
            module.forward = _float64_t5_norm.__get__(module)
    spec = Spec(
        N=3,
        N_enc=2,
        H=4,
        m=12,
        d=32,
        r=40,
        V=97,
        tie_embeddings=tied,
        head_scale="sqrt" if tied else "none",
        mask="causal",
        positional="relative",
        rel_buckets=8,
        rel_max_distance=20,
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=cfg.layer_norm_epsilon,
        ff_bias=False,
        feedforward="plain" if tied else "gated",
        activation="relu" if tied else "gelu",
    )
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    weights = _t5_weights(model, cfg)
    if not tied:
        weights["head.W"] = model.lm_head.weight.detach().numpy()
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(0, 97, size=(2, 25)), rng.integers(0, 97, size=(2, 23))  # past the exact buckets
    with torch.no_grad():
        theirs = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).logits
    theirs = theirs.numpy().transpose(0, 2, 1)
    ours = EncoderDecoder(spec, weights)(src, tgt)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-10  # measured: 3.6e-14 (tied), 2.4e-14


@pytest.mark.parametrize("family", ["t5", "bart", "t5-untied-config", "mt5", "mbart"])
def test_a_hugging_face_folder_runs_as_transformers_does(tmp_path, family):
    """T5, BART, mT5 and mBART (pre-norm, a final norm per stack) saved by save_pretrained, read by tfm from the
    folder alone (config and checkpoint). A T5 (or mT5) whose config says untied is built tied by transformers 5 and
    saved without lm_head: tfm reads that folder as transformers does, its head the shared embedding, unscaled."""
    torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
    transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.model.encoder_decoder import EncoderDecoder
    from transformer_cli.tasks.sources import load_weights

    if family not in ("bart", "mbart"):
        untied = {} if family == "t5" else {"tie_word_embeddings": False, "feed_forward_proj": "gated-gelu"}
        kind = "MT5" if family == "mt5" else "T5"
        cfg = getattr(transformers, f"{kind}Config")(
            vocab_size=97,
            d_model=32,
            d_kv=8,
            d_ff=40,
            num_layers=2,
            num_decoder_layers=3,
            num_heads=4,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=20,
            dropout_rate=0.0,
            attn_implementation="eager",
            **untied,
        )
        model = getattr(transformers, f"{kind}ForConditionalGeneration")(cfg)
    else:
        quiet = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager")
        kind, scaled = ("MBart", {"scale_embedding": True}) if family == "mbart" else ("Bart", {})
        cfg = getattr(transformers, f"{kind}Config")(
            vocab_size=97,
            d_model=32,
            encoder_layers=2,
            decoder_layers=3,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=40,
            decoder_ffn_dim=40,
            max_position_embeddings=64,
            **quiet,
            **scaled,
        )
        model = getattr(transformers, f"{kind}ForConditionalGeneration")(cfg)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in name and name.endswith("weight") else 0.0))
    model = model.double().eval()
    model.save_pretrained(tmp_path)
    for module in model.modules():
        if type(module).__name__ in ("T5LayerNorm", "MT5LayerNorm"):
            module.forward = _float64_t5_norm.__get__(module)
    spec = spec_from_config(tmp_path)
    if family in ("t5-untied-config", "mt5"):  # tied as built, but unscaled: what the config's untied head becomes
        from safetensors import safe_open

        with safe_open(str(tmp_path / "model.safetensors"), "np") as saved:
            assert spec.tie_embeddings and spec.head_scale == "none" and "lm_head.weight" not in saved.keys()
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(0, 97, size=(2, 11)), rng.integers(0, 97, size=(2, 9))
    with torch.no_grad():
        theirs = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).logits
    theirs = theirs.numpy().transpose(0, 2, 1)
    weights = load_weights(tmp_path, spec)
    ours = EncoderDecoder(spec, weights)(src, tgt)
    error = np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs))
    print(f"{family}: {error:.1e}")
    assert error < 1e-10  # measured: 7.3e-15 (t5), 1.1e-15 (bart)
    if family == "mbart":  # the control: the same weights in BART's post-norm blocks (no final norms) differ
        from dataclasses import replace

        post = EncoderDecoder(replace(spec, norm="post"), weights)(src, tgt)
        assert np.max(np.abs(post - theirs)) / np.max(np.abs(theirs)) > 1e-3
