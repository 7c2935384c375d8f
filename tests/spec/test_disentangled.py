"""DeBERTa's disentangled attention (positional: disentangled). Against transformers: hf_models_dense's deberta-v2
variants (both terms, c2p alone); here its buckets against transformers' make_log_bucket_position, verify's theory
(relative: a shift changes nothing; it tells positions apart), and the keys' checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.cli import app
from transformer_cli.components.disentangled import buckets

BASE = dict(N=2, H=2, m=4, d=8, r=16, V=11, positional="disentangled", rel_buckets=8, rel_max_distance=20)


@pytest.mark.parametrize("k, farthest", [(8, 20), (256, 512), (6, 32)])
def test_the_buckets_are_transformers(k, farthest):
    torch = pytest.importorskip("torch")
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    lags = np.arange(-3 * farthest, 3 * farthest)
    theirs = make_log_bucket_position(torch.from_numpy(lags), k, farthest).to(torch.long).numpy()
    assert np.array_equal(buckets(lags, k, farthest), theirs)
    assert not np.array_equal(buckets(lags, k, 2 * farthest), theirs)  # (the control: another farthest distance)


@pytest.mark.parametrize("check, verdict", [("verify-equivariance", "breaks"), ("verify-relative", "holds")])
def test_verify_says_it_tells_positions_apart_and_a_shift_changes_nothing(tmp_path, runner, check, verdict):
    (tmp_path / "s.yaml").write_text("\n".join(f"{k}: {v}" for k, v in BASE.items()))
    result = runner.invoke(app, [check, str(tmp_path / "s.yaml"), "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and (report["predicted"], report["observed"]) == (verdict, verdict), report


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"G": 1}, "'positional'.*G = H"),
        ({"mask": "causal"}, "'positional'.*unmasked"),
        ({"rel_max_distance": 5}, "'rel_max_distance'.*more than rel_buckets / 2 \\+ 1"),
        ({"positional": "learned", "max_len": 9}, "no rel_buckets unless positional"),
    ],
)
def test_what_deberta_cannot_be_is_one_line_naming_the_key(keys, words):
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(BASE | keys, "s.yaml")
