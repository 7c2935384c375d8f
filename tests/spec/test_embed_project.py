"""embed_project (ELECTRA's embeddings_project, ALBERT's mapping in): the whole embedding (E, positions, token
types, their norm) at embed_dim, then W_in (d, d_e) and b_in up to d. Against transformers: hf_models_dense's
electra variants; here the embedding against a NumPy reading of ElectraEmbeddings, the keys' checks, and the
seeded init the commands run on."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.analysis.params import count_params
from transformer_cli.cli import app
from transformer_cli.model.transformer import Transformer

BASE = dict(N=2, H=2, m=4, d=8, r=16, V=11, positional="learned", max_len=12, norm="post", embed_norm=True)
PROJECTED = BASE | dict(type_vocab=2, head=False, embed_dim=6, embed_project=True)


def test_the_embedding_is_electras_at_d_e_then_projected_with_a_bias():
    spec = spec_from_mapping(PROJECTED, "s")
    w = random_weights(spec, 3)
    ids = np.array([[3, 1, 4, 1, 5]])
    X = w["embedding.E"][:, ids[0]] + w["positional.P"][:, :5] + w["embedding.T"][:, :1]  # (d_e, n)
    X = (X - X.mean(0)) / np.sqrt(X.var(0) + spec.norm_eps) * w["embedding.norm.gamma"][:, None]
    X = X + w["embedding.norm.beta"][:, None]
    expected = w["embedding.W_in"] @ X + w["embedding.b_in"][:, None]
    model = Transformer(spec, w)
    assert np.allclose(model.forward(ids, last=-1)[0], expected, rtol=0, atol=1e-12)


def test_every_tensor_of_the_embedding_is_d_e_wide_but_the_projection():
    spec = spec_from_mapping(PROJECTED, "s")
    d, e, V = 8, 6, 11
    outside = V * e + d * e + d + 2 * e + 2 * e + 12 * e  # E, W_in, b_in, T, the norm, P
    block = 4 * 2 * 4 * 8 + 2 * 16 * 8 + 16 + 8 + 4 * 8  # (attention, feedforward, two norms)
    assert count_params(spec).total == outside + 2 * block


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"embed_dim": None}, "'embed_project'.*embed_dim and head: false"),
        ({"head": True}, "'embed_project'.*embed_dim and head: false"),
        ({"V": None, "type_vocab": None, "embed_norm": None, "head": None}, "no embed_dim unless .* vocabulary"),
    ],
)
def test_a_projection_without_its_width_or_with_a_head_is_one_line_naming_the_key(keys, words):
    data = {k: v for k, v in (PROJECTED | keys).items() if v is not None}
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(data, "s.yaml")


def test_seeded_weights_project_and_the_columns_given_are_d_e_wide(tmp_path, runner):
    """init's W_in is random (zero before: every column after it was b_in, and verify inconclusive); run takes
    (d_e, n) columns and names d_e when given d."""
    (tmp_path / "s.yaml").write_text("\n".join(f"{k}: {str(v).lower()}" for k, v in PROJECTED.items()))
    result = runner.invoke(app, ["verify-equivariance", str(tmp_path / "s.yaml")])
    assert result.exit_code == 0 and "PASS" in result.output, result.output
    np.save(tmp_path / "x.npy", np.ones((8, 3)))
    result = runner.invoke(app, ["run", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "x.npy")])
    assert result.exit_code != 0 and "d_e = 6" in result.output, result.output
    np.save(tmp_path / "x.npy", np.ones((6, 3)))
    result = runner.invoke(app, ["run", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "x.npy")])
    assert result.exit_code == 0, result.output


def test_opts_seeded_projections_are_random_too(tmp_path):
    from transformer_cli.io.weights import init_weights

    w = init_weights(spec_from_mapping(BASE | dict(embed_dim=6, mask="causal"), "s"))
    assert np.std(w["embedding.W_in"]) > 0.1 and np.std(w["head.W_out"]) > 0.1
