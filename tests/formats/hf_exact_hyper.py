"""The float32 steps of models whose residual is hyper-connections' streams (HY-V4's, GLM-5-Next's), recomputed in
float64: their
forwards recompiled from transformers' source with the float32 casts made float64 (hf_exact_mamba.float64_source).
HY-V4 rounds the whole residual to float32 after every sublayer (HYV4DecoderLayer), even in a float64 model; its
streams' weights, head, unweighted norm, router and indexer scores are float32 too."""

from __future__ import annotations

import sys

from hf_exact_mamba import float64_source

HY_V4 = (
    "HYV4DecoderLayer",
    "HYV4HyperConnection",
    "HYV4HyperHead",
    "HYV4UnweightedRMSNorm",
    "HYV4TopkRouter",
    "HYV4Indexer",
)


def _float64_forward(model, module) -> None:
    namespace = dict(vars(sys.modules[type(module).__module__]))
    module.forward = float64_source(type(module).forward, namespace).__get__(module)


GLM5_NEXT = (
    "Glm5NextTextHyperConnection",
    "Glm5NextTextUnweightedRMSNorm",
    "Glm5NextTextForgetGate",
    "Glm5NextTextTopkRouter",
)


def _float64_indexer(model, module) -> None:
    """GLM-5-Next's indexer: its scores and its pools' weights in float32 (which pools are chosen)."""
    namespace = dict(vars(sys.modules[type(module).__module__]))
    for name in ("forward", "get_pooled_states"):
        setattr(module, name, float64_source(getattr(type(module), name), namespace).__get__(module))


HYPER = dict.fromkeys(HY_V4 + GLM5_NEXT, _float64_forward) | {"Glm5NextTextIndexer": _float64_indexer}
