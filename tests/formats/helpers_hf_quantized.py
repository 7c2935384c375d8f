"""A quantised checkpoint's logits, tfm's and transformers', and their relative error: what the quantised-checkpoint
tests share."""

from __future__ import annotations

import numpy as np
import pytest
from hf_exact import exact
from quantized_files import IDS

from transformer_cli import Transformer
from transformer_cli.hf.config import load_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="the references run on PyTorch")

TOL = 1e-10


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def tfm_logits(folder) -> np.ndarray:
    _, spec = load_config(folder)
    return Transformer(spec, load_weights(folder, spec), dtype="float64")(IDS)


def their_logits(model) -> np.ndarray:
    with torch.no_grad():
        return exact(model.double().eval())(torch.from_numpy(IDS)).logits.double().numpy().transpose(0, 2, 1)
