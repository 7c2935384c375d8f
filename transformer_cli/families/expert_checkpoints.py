"""The checkpoint layouts of the families with experts (Mixtral, GraniteMoE, PhiMoE, Qwen-MoE, OLMoE's FlexOlmo,
gpt-oss, DeepSeek): each expert's tensors by name, or every expert stacked on a leading axis; the dense layouts they
build on are in checkpoints.py."""

from __future__ import annotations

from .checkpoints import _LLAMA_GLOBALS, _llama_names, _one
from .layout import Family
from .layout import norm_names as _norm

MIXTRAL = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | {
        "ff.router": "block_sparse_moe.gate.weight",
        "ff.W1[{e}]": "block_sparse_moe.experts.{e}.w1.weight",
        "ff.W3[{e}]": "block_sparse_moe.experts.{e}.w3.weight",
        "ff.W2[{e}]": "block_sparse_moe.experts.{e}.w2.weight",
    },
    _LLAMA_GLOBALS,
)

# GraniteMoE: every expert stacked on a leading axis, each expert's gate and up projections in one (E, 2r, d)
_GRANITE_EXPERTS = ("block_sparse_moe.input_linear.weight", "block_sparse_moe.output_linear.weight")
GRANITE_MOE = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | {"ff.router": "block_sparse_moe.router.layer.weight"},
    _LLAMA_GLOBALS,
    fused=(
        (_GRANITE_EXPERTS[0], ("ff.W1", "ff.W3"), lambda spec: spec.E or 0),
        (_GRANITE_EXPERTS[1], ("ff.W2",), _one),
    ),
    stacked=frozenset(_GRANITE_EXPERTS),
)
# GraniteMoeShared: GraniteMoE's with a shared expert, its gate and up projections in one (2 shared_r, d)
GRANITE_MOE_SHARED = Family(
    GRANITE_MOE.block,
    GRANITE_MOE.names | {"ff.shared.W2": "shared_mlp.output_linear.weight"},
    _LLAMA_GLOBALS,
    fused=(*GRANITE_MOE.fused, ("shared_mlp.input_linear.weight", ("ff.shared.W1", "ff.shared.W3"), _one)),
    stacked=GRANITE_MOE.stacked,
)

# PhiMoE: Mixtral's names, its LayerNorms' biases and the head's bias among them
PHIMOE = Family(MIXTRAL.block, MIXTRAL.names, _LLAMA_GLOBALS | {"head.b": "lm_head.bias"})


def _qwen_moe_names() -> dict[str, str]:
    """Qwen2-MoE, Qwen3-MoE: LLaMA's block (and its mlp in dense layers), mlp.gate the router, mlp.experts.{e}.*
    the experts, mlp.shared_expert.* and mlp.shared_expert_gate the shared expert (Qwen2-MoE)."""
    names = _llama_names() | {"ff.router": "mlp.gate.weight", "ff.shared.W_gate": "mlp.shared_expert_gate.weight"}
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names[f"ff.W{n}[{{e}}]"] = f"mlp.experts.{{e}}.{proj}.weight"
        names[f"ff.shared.W{n}"] = f"mlp.shared_expert.{proj}.weight"
    return names


QWEN_MOE = Family("model.layers.{i}.", _qwen_moe_names(), _LLAMA_GLOBALS)
# FlexOlmo: OLMoE's experts (Qwen-MoE's names) with OLMo 2's output norms
FLEX_OLMO = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _qwen_moe_names().items() if not ours.startswith(("norm1", "norm2"))}
    | _norm("norm1_out", "post_attention_layernorm")
    | _norm("norm2_out", "post_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)


# gpt-oss: every expert's tensors stacked in one (E, in, out), the gate's and the up projection's columns interleaved
_OSS_EXPERTS = (
    "mlp.experts.gate_up_proj",
    "mlp.experts.gate_up_proj_bias",
    "mlp.experts.down_proj",
    "mlp.experts.down_proj_bias",
)
GPT_OSS = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | {"attention.sinks": "self_attn.sinks", "ff.router": "mlp.router.weight", "ff.router_b": "mlp.router.bias"},
    _LLAMA_GLOBALS,
    fused=(
        (_OSS_EXPERTS[0], ("ff.W1", "ff.W3"), lambda spec: (spec.E or 0) * (spec.expert_r or spec.r)),
        (_OSS_EXPERTS[1], ("ff.b1", "ff.b3"), lambda spec: (spec.E or 0) * (spec.expert_r or spec.r)),
        (_OSS_EXPERTS[2], ("ff.W2",), _one),
        (_OSS_EXPERTS[3], ("ff.b2",), _one),
    ),
    transposed=frozenset({_OSS_EXPERTS[0], _OSS_EXPERTS[2]}),
    stacked=frozenset(_OSS_EXPERTS),
)


def _deepseek_names() -> dict[str, str]:
    """DeepSeek-V2/V3: latent attention's projections, LLaMA's norms, the MoE layers' gate (with V3's correction
    bias), experts and shared experts, the dense layers' MLP."""
    attention = {
        "W_QA": "q_a_proj",
        "W_QB": "q_b_proj",
        "W_Q": "q_proj",
        "W_KVA": "kv_a_proj_with_mqa",
        "W_KVB": "kv_b_proj",
        "W_O": "o_proj",
    }
    names = {f"attention.{ours}": f"self_attn.{theirs}.weight" for ours, theirs in attention.items()}
    names |= {
        f"attention.b_{x}": f"self_attn.{theirs}.bias"
        for x, theirs in (("QA", "q_a_proj"), ("KVA", "kv_a_proj_with_mqa"), ("O", "o_proj"))
    }
    names |= {
        "attention.q_a_norm.gamma": "self_attn.q_a_layernorm.weight",
        "attention.kv_a_norm.gamma": "self_attn.kv_a_layernorm.weight",
        "ff.router": "mlp.gate.weight",
        "ff.router_bias": "mlp.gate.e_score_correction_bias",
    }
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names |= {
            f"ff.W{n}": f"mlp.{proj}.weight",
            f"ff.W{n}[{{e}}]": f"mlp.experts.{{e}}.{proj}.weight",
            f"ff.shared.W{n}": f"mlp.shared_experts.{proj}.weight",
        }
    return names | _norm("norm1", "input_layernorm") | _norm("norm2", "post_attention_layernorm")


DEEPSEEK = Family("model.layers.{i}.", _deepseek_names(), _LLAMA_GLOBALS)
# GLM-4.5 and dots.llm1: LLaMA's attention (its q/k norms) and norms, DeepSeek's experts, router and dense MLP
DEEPSEEK_MOE_GQA = Family(
    "model.layers.{i}.",
    _llama_names() | {ours: theirs for ours, theirs in _deepseek_names().items() if ours.startswith("ff.")},
    _LLAMA_GLOBALS,
)
# EXAONE MoE: GLM-4.5's names, the router's correction bias on the MoE block (mlp.e_score_correction_bias)
EXAONE_MOE = Family(
    DEEPSEEK_MOE_GQA.block,
    DEEPSEEK_MOE_GQA.names | {"ff.router_bias": "mlp.e_score_correction_bias"},
    _LLAMA_GLOBALS,
)
# MiniMax-M2: Mixtral's names, its router's correction bias on the MoE block
MINIMAX_M2 = Family(
    MIXTRAL.block, MIXTRAL.names | {"ff.router_bias": "block_sparse_moe.e_score_correction_bias"}, _LLAMA_GLOBALS
)
# ERNIE 4.5 MoE: GLM-4.5's names but the correction bias, (1, E) on the MoE block's moe_statics
ERNIE_MOE = Family(
    DEEPSEEK_MOE_GQA.block,
    {ours: theirs for ours, theirs in DEEPSEEK_MOE_GQA.names.items() if ours != "ff.router_bias"},
    _LLAMA_GLOBALS | {"head.b": "lm_head.bias"},
    fused=(("mlp.moe_statics.e_score_correction_bias", ("ff.router_bias",), _one),),
    leading_one=frozenset({"mlp.moe_statics.e_score_correction_bias"}),
)
# HY-V3: EXAONE MoE's names but the router's, its bias's and the shared expert's, as Tencent's files (and
# transformers' save_pretrained) name them
HY_V3 = Family(
    EXAONE_MOE.block,
    {
        ours: theirs.replace("mlp.shared_experts.", "mlp.shared_mlp.")
        for ours, theirs in EXAONE_MOE.names.items()
        if ours not in ("ff.router", "ff.router_bias")
    }
    | {"ff.router": "mlp.router.gate.weight", "ff.router_bias": "mlp.expert_bias"},
    _LLAMA_GLOBALS,
)
# AFMoE (Arcee's Trinity): LLaMA's attention with its output gate, Gemma 2's four norms (pre_mlp_, post_mlp_),
# DeepSeek's experts with the router under mlp.router.gate and its correction bias mlp.expert_bias
AFMOE = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in DEEPSEEK_MOE_GQA.names.items() if ours not in ("ff.router", "ff.router_bias")}
    | {"attention.W_G": "self_attn.gate_proj.weight", "ff.router": "mlp.router.gate.weight"}
    | {"ff.router_bias": "mlp.expert_bias"}
    | _norm("norm1_out", "post_attention_layernorm")
    | _norm("norm2", "pre_mlp_layernorm")
    | _norm("norm2_out", "post_mlp_layernorm"),
    _LLAMA_GLOBALS,
)
# Llama 4: LLaMA's attention; its dense layers' and shared expert's MLPs under feed_forward; every expert stacked,
# gate and up in halves of one (E, d, 2r) used as x W, down (E, r, d)
_LLAMA4_EXPERTS = ("feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj")
LLAMA4 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | {"ff.router": "feed_forward.router.weight"}
    | {
        f"ff.W{n}": f"feed_forward.{proj}.weight"
        for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj"))
    }
    | {
        f"ff.shared.W{n}": f"feed_forward.shared_expert.{p}.weight"
        for n, p in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj"))
    },
    _LLAMA_GLOBALS,
    fused=(
        (_LLAMA4_EXPERTS[0], ("ff.W1", "ff.W3"), lambda spec: spec.E or 0),
        (_LLAMA4_EXPERTS[1], ("ff.W2",), _one),
    ),
    transposed=frozenset(_LLAMA4_EXPERTS),
    stacked=frozenset(_LLAMA4_EXPERTS),
)
# Mistral 4: DeepSeek's names (latent attention, router, shared and dense MLPs); every expert stacked as stored,
# gate and up in one (E, 2r, d) (GraniteMoE's form), down (E, d, r)
_MISTRAL4_EXPERTS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")
MISTRAL4 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _deepseek_names().items() if "[{e}]" not in ours},
    _LLAMA_GLOBALS,
    fused=(
        (_MISTRAL4_EXPERTS[0], ("ff.W1", "ff.W3"), lambda spec: spec.E or 0),
        (_MISTRAL4_EXPERTS[1], ("ff.W2",), _one),
    ),
    stacked=frozenset(_MISTRAL4_EXPERTS),
)
