"""The checkpoint layouts of the decoder-only and encoder families: each model_type's tensor names, per block and
global, with its fused and transposed tensors (layouts.py says what a layout is and how it reads and writes)."""

from __future__ import annotations

from ..spec.definition import Spec
from .layout import Family
from .layout import linear_names as _linear
from .layout import norm_names as _norm


def _llama_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "o_proj")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names |= _linear("ff.{}" + n, f"mlp.{proj}")
    names |= {"attention.q_norm.gamma": "self_attn.q_norm.weight", "attention.k_norm.gamma": "self_attn.k_norm.weight"}
    return names | _norm("norm1", "input_layernorm") | _norm("norm2", "post_attention_layernorm")


_LLAMA_GLOBALS = {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight"} | _norm(
    "final_norm", "model.norm"
)
_one = lambda spec: 1  # noqa: E731

LLAMA = Family("model.layers.{i}.", _llama_names(), _LLAMA_GLOBALS)
# Granite SWA: LLaMA's names and a sink per head in every layer (gpt-oss's name)
GRANITE_SWA = Family("model.layers.{i}.", _llama_names() | {"attention.sinks": "self_attn.sinks"}, _LLAMA_GLOBALS)
# Arcee: LLaMA's attention, a plain MLP (up_proj, its activation, down_proj)
ARCEE = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | _linear("ff.{}1", "mlp.up_proj")
    | _linear("ff.{}2", "mlp.down_proj"),
    _LLAMA_GLOBALS,
)
# StableLM: a LayerNorm per head of the queries and keys (qk_layernorm), one module each, read head by head
STABLELM = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if "_norm." not in ours}
    | {f"attention.{x}_norm.gamma[{{e}}]": f"self_attn.{x}_layernorm.norms.{{e}}.weight" for x in "qk"},
    _LLAMA_GLOBALS,
)
# VaultGemma: Gemma 2's input and pre-feedforward norms alone
VAULTGEMMA = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("norm2")}
    | _norm("norm2", "pre_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)
# Gemma 2 and 3: four norms a block; post_attention_layernorm is the attention's output norm here, not norm2
GEMMA2 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("norm2")}
    | _norm("norm1_out", "post_attention_layernorm")
    | _norm("norm2", "pre_feedforward_layernorm")
    | _norm("norm2_out", "post_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)
# OLMo 2: the sublayers' outputs normalised (post_attention_layernorm, post_feedforward_layernorm), not their inputs
OLMO2 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith(("norm1", "norm2"))}
    | _norm("norm1_out", "post_attention_layernorm")
    | _norm("norm2_out", "post_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)
PHI3 = Family(
    "model.layers.{i}.",
    _llama_names(),
    _LLAMA_GLOBALS,
    fused=(
        ("self_attn.qkv_proj.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), _one),
        ("mlp.gate_up_proj.weight", ("ff.W1", "ff.W3"), _one),
    ),
)


# GLM-4-0414: Gemma 2's four norms a block under GLM's names, the gate and up projections fused (Phi-3's)
GLM4 = Family(
    "model.layers.{i}.",
    _llama_names() | _norm("norm1_out", "post_self_attn_layernorm") | _norm("norm2_out", "post_mlp_layernorm"),
    _LLAMA_GLOBALS,
    fused=(("mlp.gate_up_proj.weight", ("ff.W1", "ff.W3"), _one),),
)


def _phi_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "dense")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    names |= _linear("ff.{}1", "mlp.fc1") | _linear("ff.{}2", "mlp.fc2")
    names |= _norm("attention.q_norm", "self_attn.q_layernorm") | _norm("attention.k_norm", "self_attn.k_layernorm")
    return names | _norm("norm1", "input_layernorm")


PHI = Family(
    "model.layers.{i}.",
    _phi_names(),
    {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight", "head.b": "lm_head.bias"}
    | _norm("final_norm", "model.final_layernorm"),
)


def _neox_names(attention: str, norms: tuple[str, str]) -> dict[str, str]:
    names = _linear("attention.{}_O", f"{attention}.dense")
    names |= _linear("ff.{}1", "mlp.dense_h_to_4h") | _linear("ff.{}2", "mlp.dense_4h_to_h")
    return names | _norm("norm1", norms[0]) | _norm("norm2", norms[1])


_QKV = ("attention.W_Q", "attention.W_K", "attention.W_V")
_QKV_BIAS = ("attention.b_Q", "attention.b_K", "attention.b_V")
GPT_NEOX = Family(
    "gpt_neox.layers.{i}.",
    _neox_names("attention", ("input_layernorm", "post_attention_layernorm")),
    {"embedding.E": "gpt_neox.embed_in.weight", "head.W": "embed_out.weight"}
    | _norm("final_norm", "gpt_neox.final_layer_norm"),
    fused=(
        ("attention.query_key_value.weight", _QKV, lambda spec: spec.H),
        ("attention.query_key_value.bias", _QKV_BIAS, lambda spec: spec.H),
    ),
)

# Persimmon: GPT-NeoX's fused per-head [q; k; v] and MLP names under model., LayerNorms of each query and key head
PERSIMMON = Family(
    "model.layers.{i}.",
    _neox_names("self_attn", ("input_layernorm", "post_attention_layernorm"))
    | _norm("attention.q_norm", "self_attn.q_layernorm")
    | _norm("attention.k_norm", "self_attn.k_layernorm"),
    {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "model.final_layernorm"),
    fused=(
        ("self_attn.query_key_value.weight", _QKV, lambda spec: spec.H),
        ("self_attn.query_key_value.bias", _QKV_BIAS, lambda spec: spec.H),
    ),
)


def falcon(new_architecture: bool, norms: tuple[str, str]) -> Family:
    """Falcon's fused query_key_value: grouped per key/value head in the new architecture (falcon-40b), else
    [all queries | key | value] with multi-query (falcon-7b), or per head like GPT-NeoX without it."""

    def groups(spec: Spec) -> int:
        if new_architecture:
            return spec.kv_heads
        return 1 if spec.kv_heads == 1 else spec.H

    return Family(
        "transformer.h.{i}.",
        _neox_names("self_attention", norms),
        {"embedding.E": "transformer.word_embeddings.weight", "head.W": "lm_head.weight"}
        | _norm("final_norm", "transformer.ln_f"),
        fused=(
            ("self_attention.query_key_value.weight", _QKV, groups),
            ("self_attention.query_key_value.bias", _QKV_BIAS, groups),
        ),
    )


GPT2 = Family(
    "transformer.h.{i}.",
    _linear("attention.{}_O", "attn.c_proj")
    | _linear("ff.{}1", "mlp.c_fc")
    | _linear("ff.{}2", "mlp.c_proj")
    | _norm("norm1", "ln_1")
    | _norm("norm2", "ln_2"),
    {"embedding.E": "transformer.wte.weight", "positional.P": "transformer.wpe.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "transformer.ln_f"),
    fused=(("attn.c_attn.weight", _QKV, _one), ("attn.c_attn.bias", _QKV_BIAS, _one)),
    transposed=frozenset({"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"}),
)

# GPTBigCode (StarCoder 1, SantaCoder): GPT-2's names in nn.Linear layers (out, in); c_attn [Q; K; V] with K and V of
# one head under multi-query, else [q; k; v] head by head
_heads = lambda spec: 1 if spec.kv_heads == 1 else spec.H  # noqa: E731
GPT_BIGCODE = Family(
    GPT2.block,
    GPT2.names,
    GPT2.globals_,
    fused=(("attn.c_attn.weight", _QKV, _heads), ("attn.c_attn.bias", _QKV_BIAS, _heads)),
)


GPTJ = Family(
    "transformer.h.{i}.",
    {
        f"attention.W_{x}": f"attn.{proj}.weight"
        for x, proj in zip("QKVO", ("q_proj", "k_proj", "v_proj", "out_proj"), strict=True)
    }
    | _linear("ff.{}1", "mlp.fc_in")
    | _linear("ff.{}2", "mlp.fc_out")
    | _norm("norm1", "ln_1"),
    {"embedding.E": "transformer.wte.weight", "head.W": "lm_head.weight", "head.b": "lm_head.bias"}
    | _norm("final_norm", "transformer.ln_f"),
)


def _plain_block_names(
    attention: tuple[str, str, str, str], ff: tuple[str, str], norms: tuple[str, str]
) -> dict[str, str]:
    """A block with a plain feedforward: the checkpoint's names of W_Q, W_K, W_V, W_O, of W1, W2, and of the norms
    around attention and the feedforward (weights and biases each)."""
    names: dict[str, str] = {}
    for x, proj in zip("QKVO", attention, strict=True):
        names |= _linear("attention.{}_" + x, proj)
    names |= _linear("ff.{}1", ff[0]) | _linear("ff.{}2", ff[1])
    return names | _norm("norm1", norms[0]) | _norm("norm2", norms[1])


def _bert_names() -> dict[str, str]:
    return _plain_block_names(
        ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"),
        ("intermediate.dense", "output.dense"),
        ("attention.output.LayerNorm", "output.LayerNorm"),
    )


BERT = Family(
    "encoder.layer.{i}.",
    _bert_names(),
    {
        "embedding.E": "embeddings.word_embeddings.weight",
        "positional.P": "embeddings.position_embeddings.weight",
        "embedding.T": "embeddings.token_type_embeddings.weight",
        "pooler.W": "pooler.dense.weight",
        "pooler.b": "pooler.dense.bias",
    }
    | _norm("embedding.norm", "embeddings.LayerNorm"),
)
_BERT_LINEAR = (
    ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"),
    ("intermediate.dense", "output.dense"),
)
# RoBERTa-PreLayerNorm: BERT's names, each sublayer's norm before it (attention.LayerNorm, intermediate.LayerNorm)
# and one after the last block (LayerNorm)
ROBERTA_PRELN = Family(
    BERT.block,
    _plain_block_names(*_BERT_LINEAR, ("attention.LayerNorm", "intermediate.LayerNorm")),
    BERT.globals_ | _norm("final_norm", "LayerNorm"),
)
# XLM-RoBERTa-XL: the same pre-norm block under other names, no norm of the embeddings, the last norm the encoder's
XLMR_XL = Family(
    BERT.block,
    _plain_block_names(*_BERT_LINEAR, ("attention.self_attn_layer_norm", "LayerNorm")),
    {k: v for k, v in BERT.globals_.items() if not k.startswith("embedding.norm")}
    | _norm("final_norm", "encoder.LayerNorm"),
)


def _gpt_neo_names() -> dict[str, str]:
    attention = ("attn.attention.q_proj", "attn.attention.k_proj", "attn.attention.v_proj", "attn.attention.out_proj")
    return _plain_block_names(attention, ("mlp.c_fc", "mlp.c_proj"), ("ln_1", "ln_2"))


GPT_NEO = Family(
    "transformer.h.{i}.",
    _gpt_neo_names(),
    {"embedding.E": "transformer.wte.weight", "positional.P": "transformer.wpe.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "transformer.ln_f"),
)


def _distilbert_names() -> dict[str, str]:
    attention = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin")
    return _plain_block_names(attention, ("ffn.lin1", "ffn.lin2"), ("sa_layer_norm", "output_layer_norm"))


DISTILBERT = Family(
    "transformer.layer.{i}.",
    _distilbert_names(),
    {"embedding.E": "embeddings.word_embeddings.weight", "positional.P": "embeddings.position_embeddings.weight"}
    | _norm("embedding.norm", "embeddings.LayerNorm"),
)


def _opt_names() -> dict[str, str]:
    attention = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj")
    return _plain_block_names(attention, ("fc1", "fc2"), ("self_attn_layer_norm", "final_layer_norm"))


OPT = Family(
    "model.decoder.layers.{i}.",
    _opt_names(),
    {
        "embedding.E": "model.decoder.embed_tokens.weight",
        "positional.P": "model.decoder.embed_positions.weight",
        "head.W": "lm_head.weight",
        "embedding.W_in": "model.decoder.project_in.weight",
        "head.W_out": "model.decoder.project_out.weight",
    }
    | _norm("final_norm", "model.decoder.final_layer_norm"),
)


BLOOM = Family(
    "transformer.h.{i}.",
    _neox_names("self_attention", ("input_layernorm", "post_attention_layernorm")),
    {"embedding.E": "transformer.word_embeddings.weight", "head.W": "lm_head.weight"}
    | _norm("embedding.norm", "transformer.word_embeddings_layernorm")
    | _norm("final_norm", "transformer.ln_f"),
    fused=(
        ("self_attention.query_key_value.weight", _QKV, lambda spec: spec.H),
        ("self_attention.query_key_value.bias", _QKV_BIAS, lambda spec: spec.H),
    ),
)


STARCODER2 = Family(
    "model.layers.{i}.",
    _plain_block_names(
        ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"),
        ("mlp.c_fc", "mlp.c_proj"),
        ("input_layernorm", "post_attention_layernorm"),
    ),
    _LLAMA_GLOBALS,
)
