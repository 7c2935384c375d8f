"""The keys of the numbers that scale the streams (Gemma's sqrt(d) embedding, Granite's four multipliers, Cohere's
logit scale; the score scale is the spec's own `scale`), and the embedding's own width (OPT-350m's projections).
The Spec's class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import SCALES
from .choices import key as _key

SCALE_FIELDS: dict[str, Any] = {
    "embed_scale": field(
        default="none",
        metadata=_key(
            "scale",
            "embedded columns times sqrt(d) (sqrt: Gemma) or a positive number (Granite's "
            "embedding_multiplier); only with V",
            SCALES,
        ),
    ),
    "embed_dim": field(
        default=None,
        metadata=_key(
            "posint",
            "the token embedding's width d_e when it is not d: E (d_e, V) and the head (V, d_e), "
            "projected by embedding.W_in (d, d_e) after the lookup and head.W_out (d_e, d) after the final "
            "norm (OPT-350m's project_in, project_out); only with V and a head",
        ),
    ),
    "type_vocab": field(
        default=None, metadata=_key("posint", "token types, embedding.T (d, types); type 0 is added (BERT); with V")
    ),
    "embed_norm": field(
        default=False, metadata=_key("bool", "a norm of the embedded columns, after positions and types (BERT); with V")
    ),
    "pooler": field(
        default=False,
        metadata=_key("bool", "BERT's pooler W_p (d, d), b_p: counted, not part of the output (tanh(W_p x_0 + b_p))"),
    ),
    "embed_project": field(
        default=False,
        metadata=_key(
            "bool",
            "the whole embedding (E, positions, token types, its norm) at width embed_dim, then projected up to d "
            "by embedding.W_in (d, d_e) with a bias b_in (ELECTRA's embeddings_project, ALBERT's mapping in); "
            "real columns given to run are then (d_e, n); with embed_dim",
        ),
    ),
    "head_transform": field(
        default="none",
        metadata=_key(
            "choice",
            "the final columns through W_t (d, d) (affine: and b_t), the feedforward's activation and a norm "
            "before the head (ModernBERT-decoder's lm_head.dense, act, norm); only with V and a head",
            ("none", "linear", "affine"),
        ),
    ),
    "block_groups": field(
        default=None,
        metadata=_key(
            "posint",
            "G: the N blocks in G runs of consecutive blocks, each run sharing one block's weights (ALBERT's "
            "num_hidden_groups): block i runs stored block int(i / (N / G)); the model holds G blocks; at most N, "
            "blocks alike only",
        ),
    ),
    "logit_scale": field(
        default=1.0,
        metadata=_key(
            "posfloat",
            "logits times this number (Cohere's logit_scale, Granite's 1 / logits_scaling), "
            "before any soft-capping; only with V and a head",
        ),
    ),
    "residual_scale": field(
        default=1.0,
        metadata=_key(
            "posfloat",
            "each sublayer's output times this number as it joins the residual stream "
            "(Granite's residual_multiplier; before the sublayer's own output norm if it has one)",
        ),
    ),
    "ple_dim": field(
        default=None,
        metadata=_key(
            "posint",
            "per-layer inputs of P a block (Gemma 4's hidden_size_per_layer_input): a second table per_layer.E "
            "(V_ple, N P) and a projection of the embedding make each token's N vectors, block i adding "
            "norm(W_proj (act(W_gate x) * ple_i)) after its feedforward; the pass's input is then d + N P rows; with V",
        ),
    ),
    "ple_vocab": field(
        default=None, metadata=_key("posint", "the per-layer inputs' table's rows [default: V]; with ple_dim")
    ),
    "layer_scale": field(
        default=False,
        metadata=_key(
            "bool",
            "each block's output (the stream, its input included) times the block's own number, blocks.i.scale (1,), "
            "a buffer (Gemma 4's layer_scalar)",
        ),
    ),
    "head_scale": field(
        default="none",
        metadata=_key("choice", "the final columns times d^-1/2 before the head (T5, tied); with V", ("none", "sqrt")),
    ),
}

__all__ = ["SCALE_FIELDS"]
