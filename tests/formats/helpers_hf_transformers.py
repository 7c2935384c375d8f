"""A transformers model of each family built small and random, its logits beside tfm's, and the relative error between
them: what the Hugging Face and GGUF conformance tests share (and scripts/fingerprint_outputs.py, the benchmarks)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_transformers import _randomised
from hf_models import MODELS

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

TOL = 1e-10


def build(name: str):
    """The model, random in every parameter, in float64 (its config as transformers completed it)."""
    config_class, model_class, config = MODELS[name]
    cfg = getattr(transformers, config_class)(**({"attn_implementation": "sdpa"} | config))
    model = getattr(transformers, model_class)(cfg)
    _randomised(model)
    for name_, buffer in model.named_buffers():  # DeepSeek-V3's correction bias is a buffer, zero as built
        if name_.endswith("e_score_correction_bias"):
            buffer.copy_(torch.linspace(-0.5, 0.5, buffer.numel()).flip(0))
    return model.double().eval()


def theirs(model, ids: np.ndarray) -> np.ndarray:
    """transformers' output in tfm's layout: logits (b, V, n), or BertModel's last hidden state (b, d, n)."""
    with torch.no_grad():
        result = model(torch.from_numpy(ids))
    out = result.logits if hasattr(result, "logits") else result.last_hidden_state
    return out.double().numpy().transpose(0, 2, 1)


def relative(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(ours - reference)) / np.max(np.abs(reference)))


IDS = np.random.default_rng(0).integers(0, 97, size=(2, 13))


def unpadded(spec) -> np.ndarray:
    """IDS without the padding token (RoBERTa's positions skip it; tfm refuses it in its inputs)."""
    return IDS if spec.pad_id is None else np.where(IDS == spec.pad_id, spec.pad_id + 1, IDS)
