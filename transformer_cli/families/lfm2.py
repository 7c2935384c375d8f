"""LFM2 (Lfm2ForCausalLM, Liquid AI's LFM2): LLaMA's pre-norm block whose mixer is, layer by layer, either
grouped-query attention with an RMSNorm of each query and key head (q_layernorm, k_layernorm, one gain of
head_dim the heads share) or a short causal convolution (components/short_conv.py: in_proj, a depthwise Conv1d of
conv_L_cache taps, out_proj; conv_bias biases all three). layer_types names each ("conv" or "full_attention"),
else full_attn_idxs lists the attention layers (neither: every layer attends, LFM2's config class's default).

Its MLP's width is intermediate_size adjusted as Lfm2MLP adjusts it under block_auto_adjust_ff_dim:
int(2 I / 3), then (with a block_ffn_dim_multiplier) int(multiplier x that) rounded up to block_multiple_of.
tfm writes the adjusted width back with the adjustment off. block_ff_dim, where given, wins over intermediate_size,
and tie_embedding over tie_word_embeddings, as Lfm2Config pops them; a stack without attention reads no
num_key_value_heads (transformers builds it whatever the count, though its cache then fails: no such model is run
by transformers here). The final norm is model.embedding_norm, after the last
block despite its name; the head is tied unless tie_word_embeddings (or tie_embedding) says otherwise.

LFM2-MoE (Lfm2MoeForCausalLM): the same blocks, the first num_dense_layers with one MLP of intermediate_size as
given (no adjustment), the rest routed: sigmoid scores of feed_forward.gate, a correction bias expert_bias (a
buffer, not counted) added to choose where use_expert_bias, the chosen renormalised over their sum + 1e-6 (tfm's
router_renorm_eps) where norm_topk_prob, times routed_scaling_factor; each expert a SwiGLU of
moe_intermediate_size, held in its files expert by expert (feed_forward.experts.{e}.w1, w3, w2), as transformers
saves them. Lfm2MoeConfig reads no full_attn_idxs nor block_* keys (they are not read here either) and has no
default layer_types: a config without it is refused in one line.
"""

from __future__ import annotations

from typing import Any

from ..spec.choices import ROUTED
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from . import lfm2_gguf as gguf
from .config_keys import shared_keys
from .keys import Keys
from .layout import Family
from .layout import linear_names as _linear
from .layout import norm_names as _norm
from .parts import llama_like
from .record import Gguf, Record

CONV, ATTENTION = "short_conv", "standard"
KINDS = {"conv": CONV, "full_attention": ATTENTION}


def mlp_width(c: Keys) -> int:
    """Lfm2MLP's width from intermediate_size (or block_ff_dim) and the adjustment keys."""
    width = c.count("block_ff_dim", None) or c.count("intermediate_size", 12288)  # (the first wins, as there)
    if not c.flag("block_auto_adjust_ff_dim", True):
        return width
    width = int(2 * width / 3)
    multiplier = c.data.get("block_ffn_dim_multiplier", 1.0)
    if multiplier is None:
        return width
    multiple = c.count("block_multiple_of", 256)
    width = int(c.number("block_ffn_dim_multiplier", 1.0) * width)
    return multiple * ((width + multiple - 1) // multiple)


def mixer_kinds(c: Keys, N: int) -> dict[str, Any]:
    """layer_types (else full_attn_idxs, else every layer attending) as the blocks' mixer_layers."""
    kinds = c.data.get("layer_types")
    if kinds is None:
        attends = c.data.get("full_attn_idxs")
        attends = range(N) if attends is None else attends
        kinds = ["full_attention" if i in attends else "conv" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= set(KINDS):
        raise c.fail("layer_types", kinds, f"a list of {N} 'conv' or 'full_attention'")
    return {} if set(kinds) == {"full_attention"} else {"mixer_layers": [KINDS[kind] for kind in kinds]}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Lfm2Config's defaults: 32 heads of d / H, 8 key/value heads, base 1,000,000)."""
    tied = c.flag("tie_embedding", c.flag("tie_word_embeddings", True))  # (the first wins, as there)
    kinds = mixer_kinds(c, c.count("num_hidden_layers", 32))
    G = c.count("num_key_value_heads", 8)
    if kinds and ATTENTION not in kinds["mixer_layers"]:  # (no attention block: its heads' sizes unused)
        G = c.count("num_attention_heads", 32)
    plain = llama_like(c, G, None, 1e-5, tied, 128000, theta=1000000.0)
    plain |= {"norm_eps": c.number("norm_eps", 1e-5), "r": mlp_width(c), "activation": "silu", "qk_norm": True}
    out = plain | kinds
    if out.get("mixer_layers"):
        out |= {"conv_kernel": c.count("conv_L_cache", 3), "conv_bias": c.flag("conv_bias", False)}
    return out


def moe_spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Lfm2MoeConfig's defaults: 32 experts of 1792, 4 chosen, the first 2 layers dense)."""
    if "layer_types" not in c.data:  # (Lfm2MoeConfig reads no full_attn_idxs and has no default)
        raise c.fail("layer_types", None, "a list of each layer's 'conv' or 'full_attention'")
    unread = ("full_attn_idxs", "block_ff_dim", "block_ffn_dim_multiplier", "block_multiple_of")
    data = {key: value for key, value in c.data.items() if key not in unread}
    out = spec(Keys(data | {"block_auto_adjust_ff_dim": False}, c.source, notes=c.notes))  # (its MLPs as given)
    N, dense = out["N"], c.index("num_dense_layers", 2)
    if dense >= N:
        return out
    E, k = c.count("num_experts", 32), c.count("num_experts_per_tok", 4)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    out |= {"E": E, "k": k, "expert_r": c.count("moe_intermediate_size", 1792), "router_score": "sigmoid"}
    out |= {"feedforward_layers": ["dense"] * dense + ["routed"] * (N - dense)} if dense else {}
    out |= {"router_bias": c.flag("use_expert_bias", True), "router_scale": c.number("routed_scaling_factor", 1.0)}
    renorm = c.flag("norm_topk_prob", True)
    return out | {"router_renorm": renorm} | ({"router_renorm_eps": 1e-6} if renorm else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> LFM2's config.json: the MLP's width as it is (block_auto_adjust_ff_dim off), each layer's kind."""
    out = shared_keys(spec)
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out |= {"norm_eps": out.pop("rms_norm_eps"), "block_auto_adjust_ff_dim": False}
    out |= {"layer_types": ["conv" if kind == CONV else "full_attention" for kind in kinds]}
    return out | {"conv_L_cache": spec.conv_kernel, "conv_bias": spec.conv_bias}


def moe_config(spec: Spec) -> dict[str, Any]:
    """spec -> LFM2-MoE's config.json."""
    out = config(spec)
    if not spec.E:
        return out | {"num_dense_layers": spec.N}
    dense = next((i for i in range(spec.N) if kind_of(spec.feedforward_layers, i, ROUTED) == ROUTED), spec.N)
    out |= {"num_dense_layers": dense, "num_experts": spec.E, "num_experts_per_tok": spec.k}
    out |= {"moe_intermediate_size": spec.expert_r, "use_expert_bias": spec.router_bias}
    return out | {"routed_scaling_factor": spec.router_scale, "norm_topk_prob": spec.router_renorm}


def _names() -> dict[str, str]:
    names: dict[str, str] = {}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "out_proj")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    names |= {"attention.q_norm.gamma": "self_attn.q_layernorm.weight"}
    names |= {"attention.k_norm.gamma": "self_attn.k_layernorm.weight"}
    for n, proj in (("1", "w1"), ("3", "w3"), ("2", "w2")):
        names |= _linear("ff.{}" + n, f"feed_forward.{proj}")
    names |= {"conv.W_in": "conv.in_proj.weight", "conv.b_in": "conv.in_proj.bias"}
    names |= {"conv.kernel": "conv.conv.weight", "conv.b_kernel": "conv.conv.bias"}
    names |= {"conv.W_out": "conv.out_proj.weight", "conv.b_out": "conv.out_proj.bias"}
    return names | _norm("norm1", "operator_norm") | _norm("norm2", "ffn_norm")


LFM2 = Family(
    "model.layers.{i}.",
    _names(),
    {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "model.embedding_norm"),
)

_ROUTER = {"ff.router": "feed_forward.gate.weight", "ff.router_bias": "feed_forward.expert_bias"}
_EXPERTS = {f"ff.W{n}[{{e}}]": f"feed_forward.experts.{{e}}.w{n}.weight" for n in "132"}
LFM2_MOE = Family(LFM2.block, LFM2.names | _ROUTER | _EXPERTS, LFM2.globals_)

GGUF = Gguf("lfm2", gguf.LAYOUT, gguf.gguf_spec, gguf.gguf_metadata, base="none")
MOE_GGUF = Gguf("lfm2moe", gguf.MOE_LAYOUT, gguf.gguf_moe_spec, gguf.gguf_moe_metadata, base="none")
RECORDS = (
    Record("lfm2", "Lfm2ForCausalLM", spec, LFM2, config, GGUF),
    Record("lfm2_moe", "Lfm2MoeForCausalLM", moe_spec, LFM2_MOE, moe_config, MOE_GGUF),
)

__all__ = ["LFM2", "LFM2_MOE", "RECORDS"]
