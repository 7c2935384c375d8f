"""The keys of Gemma 3n's block (AltUp's streams, Laurel's low-rank residual), of hyper-connections' streams
(DeepSeek-V4's) and of blocks whose feedforwards
differ in size or sparsity (Gemma 3n's intermediate_size and activation_sparsity_pattern per layer). The Spec's
class body takes each field from here; components/altup.py implements them."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import key as _key

ALTUP_FIELDS: dict[str, Any] = {
    "altup": field(
        default=None,
        metadata=_key(
            "posint",
            "AltUp's K streams of d rows (Gemma 3n's altup_num_inputs): the embedding's column and K - 1 projections "
            "of it (altup.W_in, magnitudes matched); each block predicts every stream from all (a K x K mix per token, "
            "its coefficients routed from the active one), runs its sublayers on the active stream and corrects every "
            "stream by the innovation; the head reads the streams projected back (altup.W_out) and averaged; needs "
            "norm: sandwich",
        ),
    ),
    "altup_active": field(
        default=0, metadata=_key("index", "the stream a block's sublayers read (altup_active_idx); with altup")
    ),
    "altup_correct_scale": field(
        default=True,
        metadata=_key(
            "bool", "the active stream times the block's altup.scale (d,) before its per-layer input; with altup"
        ),
    ),
    "hc_streams": field(
        default=None,
        metadata=_key(
            "posint",
            "hyper-connections (DeepSeek-V4's mHC, hc_mult): the residual as n streams of d rows, the embedded column "
            "copied into each; before each sublayer the streams are collapsed into its input by weights made from "
            "them, its output expanded back by others, and the streams mixed by a doubly stochastic n x n matrix "
            "(Sinkhorn); the head reads their weighted sum (hc_head); at least 2",
        ),
    ),
    "hc_form": field(
        default="mixed",
        metadata=_key(
            "choice",
            "hyper-connections' form: mixed (DeepSeek-V4's: the streams mixed by the Sinkhorn-balanced matrix), "
            "independent (HY-V4's: each stream keeps its own, no mix; post gets hc_eps too) or gated (Qwen4's gated "
            "residual: the sublayer reads a low-rank-gated mean of the normed streams, and norm: none); with "
            "hc_streams",
            ("mixed", "independent", "gated"),
        ),
    ),
    "hc_post_scale": field(
        default=2.0,
        metadata=_key(
            "posfloat", "hyper-connections: post = this x sigmoid(...) (HY-V4's hc_magnitude); with hc_streams"
        ),
    ),
    "hc_head": field(
        default="weighted",
        metadata=_key(
            "choice",
            "what the head reads of the streams: weighted (their sum by weights made from them, hc_head.*) or mean "
            "(GLM-5-Next's, no parameters); with hc_streams",
            ("weighted", "mean"),
        ),
    ),
    "hc_rank": field(
        default=None,
        metadata=_key("posint", "hyper-connections' gated form: its gate's low rank (Qwen4's hc_lowrank)"),
    ),
    "hc_sinkhorn": field(
        default=20,
        metadata=_key("posint", "hyper-connections: Sinkhorn's iterations (hc_sinkhorn_iters); with hc_streams"),
    ),
    "hc_eps": field(
        default=1e-6,
        metadata=_key(
            "posfloat",
            "hyper-connections: added to the weights and the sums they are divided by (hc_eps); gated: the streams' "
            "norms' eps (Qwen4's rms_norm_eps)",
        ),
    ),
    "laurel_rank": field(
        default=None,
        metadata=_key(
            "posint",
            "Laurel's rank R: the normed active stream x also goes through norm(W_right W_left x) (R x d, d x R) and "
            "joins the attention's output: (X + x + norm(W_right W_left x) + attention) / sqrt(2); with altup",
        ),
    ),
    "r_layers": field(
        default=None,
        metadata=_key(
            "sizes",
            "each block's feedforward size (a list of N, or a pattern repeated over the blocks): Gemma 3n's "
            "intermediate_size per layer [default: r everywhere]",
        ),
    ),
    "sparsity_layers": field(
        default=None,
        metadata=_key(
            "levels",
            "each block's activation sparsity s (a list of N, or a pattern): the gate's pre-activation g becomes "
            "max(g - mean(g) - std(g) Phi^-1(s), 0) over its r entries, per token, where s > 0 (Gemma 3n's "
            "activation_sparsity_pattern); gated feedforwards [default: 0 everywhere]",
        ),
    ),
}

__all__ = ["ALTUP_FIELDS"]
