"""norm_affine: false (issue 44, OLMo 1's LayerNorms): norms with no gain or bias. Against transformers: hf_models'
olmo variants; here the count, the pass against gains of 1 and biases of 0, and the spec's check."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.model.transformer import Transformer

BASE = dict(N=3, H=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0)
IDS = np.random.default_rng(3).integers(0, 11, size=(2, 7))


def test_norms_without_parameters_hold_no_tensors_and_normalise_alone():
    """norm_affine: false (OLMo 1): no gain or bias in any norm; the model equals one whose gains are 1 and biases 0
    (the control: other gains change it); and 1 + gamma has no gamma to scale."""
    from transformer_cli import count_params

    affine = spec_from_mapping(BASE | {"norm": "pre", "norm_type": "layernorm"}, "s")
    plain = replace(affine, norm_affine=False)
    per_block = 4 * affine.d  # (two norms a block, each a gain and a bias)
    assert count_params(affine).total - count_params(plain).total == affine.N * per_block + 2 * affine.d
    w = random_weights(affine, 5)
    unit = {
        k: (np.ones_like(v) if k.endswith("gamma") else np.zeros_like(v) if k.endswith("beta") else v)
        for k, v in w.items()
    }
    assert np.allclose(
        Transformer(plain, w).forward(IDS), Transformer(affine, unit).forward(IDS), rtol=1e-12, atol=1e-12
    )
    assert not np.allclose(Transformer(plain, w).forward(IDS), Transformer(affine, w).forward(IDS))
    with pytest.raises(SpecError, match="norm_affine is false"):
        spec_from_mapping(BASE | {"norm": "pre", "norm_affine": False, "norm_plus_one": True}, "s")
