"""Where T5's tensors are in their checkpoints: both stacks' blocks, and what lies outside them.

tfm's decoder blocks are `blocks.{i}.` (self-attention, `cross.` attention to the encoder's output, feedforward,
norms `norm1`, `cross_norm`, `norm2` in that order); the encoder's are `encoder.{j}.`, its globals `encoder_...`.
"""

from __future__ import annotations

from ..families.layout import Family
from ..families.layout import attention_names as _attention

# -- T5: no biases; RMSNorm (gamma only); the relative bias tables in block 0 of each stack

T5_QKVO = ("q", "k", "v", "o")


def _t5_ff(layer: str, gated: bool) -> dict[str, str]:
    """T5DenseActDense (wi, wo) or T5DenseGatedActDense: act(wi_0 x) * wi_1 x -> W1 = wi_0, W3 = wi_1."""
    up = (
        {"ff.W1": "DenseReluDense.wi_0.weight", "ff.W3": "DenseReluDense.wi_1.weight"}
        if gated
        else {"ff.W1": "DenseReluDense.wi.weight"}
    )
    names = {ours: f"{layer}.{theirs}" for ours, theirs in up.items()}
    return names | {"ff.W2": f"{layer}.DenseReluDense.wo.weight", "norm2.gamma": f"{layer}.layer_norm.weight"}


UNTIED_T5 = (  # the case tfm cannot tell from config.json alone
    "(an unscaled T5 head is untied, as the v1.1 and flan-t5 files hold it; a folder whose checkpoint has no "
    "lm_head.weight is read tied to shared.weight, as transformers 5.x saves and reads it)"
)


def t5(gated: bool) -> Family:
    """T5ForConditionalGeneration: encoder blocks [self-attention, feedforward], decoder blocks [self-attention,
    EncDecAttention, feedforward], each sublayer with its layer_norm; one shared embedding."""
    self_attention = _attention("attention", "layer.0.SelfAttention", T5_QKVO, "W") | {
        "norm1.gamma": "layer.0.layer_norm.weight"
    }
    cross = _attention("cross", "layer.1.EncDecAttention", T5_QKVO, "W") | {
        "cross_norm.gamma": "layer.1.layer_norm.weight"
    }
    table = "block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    return Family(
        "decoder.block.{i}.",
        self_attention | cross | _t5_ff("layer.2", gated),
        {
            "embedding.E": "shared.weight",
            "head.W": "lm_head.weight",
            "encoder_positional.rel_bias": f"encoder.{table}",
            "positional.rel_bias": f"decoder.{table}",
            "encoder_final_norm.gamma": "encoder.final_layer_norm.weight",
            "final_norm.gamma": "decoder.final_layer_norm.weight",
        },
        encoder_block="encoder.block.{i}.",
        encoder_names=self_attention | _t5_ff("layer.1", gated),
        copies={"encoder.embed_tokens.weight": "embedding.E", "decoder.embed_tokens.weight": "embedding.E"},
        hints={"lm_head.weight": UNTIED_T5},
    )


__all__ = ["t5"]
