"""Parameter counts: the closed form against real arrays, published figures and the reference cases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, EXAMPLES, REFERENCE_CASES, reference
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import Spec, count_params, init_weights, load_spec
from transformer_cli.analysis.params import CountMismatch

specs = st.builds(
    Spec,
    N=st.integers(1, 3),
    H=st.integers(1, 4),
    m=st.integers(1, 6),
    d=st.integers(1, 9),
    r=st.integers(1, 9),
    scale=st.sampled_from(["none", "sqrt", 0.5]),
    mask=st.sampled_from(["none", "causal"]),
    positional=st.sampled_from(["none", "sinusoidal"]),
    norm=st.sampled_from(["none", "pre", "post"]),
    attention_bias=st.booleans(),
    activation=st.sampled_from(["relu", "gelu"]),
)
learned = st.builds(
    Spec,
    N=st.integers(1, 3),
    H=st.integers(1, 3),
    m=st.integers(1, 4),
    d=st.integers(1, 6),
    r=st.integers(1, 6),
    positional=st.just("learned"),
    max_len=st.integers(1, 20),
    norm=st.sampled_from(["none", "pre"]),
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(specs, learned))
def test_closed_form_equals_stored_arrays(spec):
    count = count_params(spec)
    stored = sum(w.size for w in init_weights(spec).values())
    assert count.total == count.closed_total == stored
    assert count.per_block == count.closed_per_block


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 50), st.integers(1, 50), st.integers(1, 50), st.integers(1, 50))
def test_seed_block_count_is_4Hmd_2rd_r_d(H, m, d, r):
    assert count_params(Spec(N=1, H=H, m=m, d=d, r=r)).per_block == 4 * H * m * d + 2 * r * d + r + d


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_reference_counts(case):
    ref = reference(case)
    count = count_params(load_spec(ref["spec_path"]))
    assert count.per_block == ref["expected"]["params_per_block"]
    assert count.total == ref["expected"]["params_total"]
    assert sum(w.size for w in ref["weights"].values()) == ref["expected"]["stored_arrays_total"]


def test_gpt2_small_matches_the_published_count():
    """GPT-2 small has 124,439,808 parameters; minus its 50257 x 768 token embedding, the stack tfm counts."""
    spec = load_spec(next(p for p in EXAMPLES if p.name == "gpt2-small.yaml"))
    assert count_params(spec).total == 124_439_808 - 50257 * 768


def test_huge_spec_counts_exactly_without_allocating():
    spec = Spec(N=96, H=96, m=128, d=12288, r=49152)
    per_block = 4 * 96 * 128 * 12288 + 2 * 49152 * 12288 + 49152 + 12288
    assert count_params(spec).total == 96 * per_block
    giant = Spec(N=10**6, H=10**4, m=10**4, d=10**6, r=10**7)
    assert count_params(giant).total > 2**64  # Python integers: no overflow


def test_counts_do_not_depend_on_sequence_length():
    assert count_params(Spec(N=2, H=2, m=2, d=2, r=2)).to_dict()["depends_on_sequence_length"] is False


def test_a_closed_form_that_disagrees_is_loud(monkeypatch):
    from transformer_cli.analysis import params

    original = params._scoped
    monkeypatch.setattr(params, "_scoped", lambda terms, scope: original(terms, scope)[:1])  # a term lost
    with pytest.raises(CountMismatch, match="closed form gives"):
        params.count_params(Spec(N=1, H=1, m=1, d=1, r=1))


def test_json_lists_every_tensor_with_its_count():
    data = count_params(load_spec(DATA / "standard-pre-causal" / "spec.yaml")).to_dict()
    assert sum(t["count"] * t["copies"] for t in data["tensors"]) == data["total"]
    assert all(t["count"] == int(np.prod(t["shape"])) for t in data["tensors"])
    assert {"final_norm.gamma", "blocks.{i}.attention.b_O", "blocks.{i}.norm2.beta"} <= {
        t["name"] for t in data["tensors"]
    }
    assert {t["copies"] for t in data["tensors"]} == {1, 2}


# -- real families' stacks: the published counts (tests/data/real-models.json, from transformers) ----------


def _published(name: str) -> dict:
    models = json.loads((DATA / "real-models.json").read_text())
    return next(m for m in models if m["name"] == name)


LLAMA_LIKE = ["Llama-2-7b", "Llama-2-13b", "Llama-2-70b", "Meta-Llama-3-8B", "Meta-Llama-3-70B", "Mistral-7B-v0.1"]


@pytest.mark.parametrize("name", LLAMA_LIKE)
def test_a_llama_stack_counts_the_published_figure_less_its_embedding_and_head(name):
    """RMSNorm, SwiGLU without biases, G key/value heads of d/H: the blocks and the final norm, without the
    embedding and the head (untied in all of these: V d each). Mistral's sliding window has no parameters."""
    model = _published(name)
    c = model["config"]
    d, H = c["hidden_size"], c["num_attention_heads"]
    G = c.get("num_key_value_heads", H)
    spec = Spec(
        N=c["num_hidden_layers"],
        H=H,
        G=G,
        m=d // H,
        d=d,
        r=c["intermediate_size"],
        scale="sqrt",
        mask="causal",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert not c.get("tie_word_embeddings", False)
    embedding_and_head = 2 * c["vocab_size"] * d  # untied (tie_word_embeddings false)
    assert count_params(spec).total == model["parameters"] - embedding_and_head


def test_norm_type_and_feedforward_change_the_closed_form_as_documented():
    base = dict(N=3, H=2, m=4, d=8, r=10, norm="pre")
    rms = count_params(Spec(**base, norm_type="rmsnorm"))
    assert [t.formula for t in rms.terms] == ["4Hmd", "2rd + r + d", "2d", "d"]
    gated = count_params(Spec(**base, feedforward="gated", ff_bias=False))
    assert [t.formula for t in gated.terms] == ["4Hmd", "3rd", "4d", "2d"]
    assert gated.per_block == 4 * 2 * 4 * 8 + 3 * 10 * 8 + 4 * 8
    grouped = count_params(Spec(N=2, H=6, G=2, m=4, d=8, r=10, attention_bias=True))
    assert [t.formula for t in grouped.terms] == ["2Hmd + 2Gmd", "2rd + r + d", "Hm + 2Gm + d"]
    assert grouped.per_block == (2 * 6 + 2 * 2) * 4 * 8 + (2 * 10 * 8 + 10 + 8) + (6 + 4) * 4 + 8


def test_a_shared_norm_halves_the_norm_term():
    two = count_params(Spec(N=2, H=2, m=4, d=8, r=10, norm="pre", parallel=True))
    one = count_params(Spec(N=2, H=2, m=4, d=8, r=10, norm="pre", parallel=True, shared_norm=True))
    assert two.per_block - one.per_block == 2 * 8 and [t.formula for t in one.terms][2] == "2d"


def test_a_layer_norm_without_bias_counts_gamma_only():
    with_bias = count_params(Spec(N=2, H=2, m=4, d=8, r=10, norm="pre"))
    without = count_params(Spec(N=2, H=2, m=4, d=8, r=10, norm="pre", norm_bias=False))
    assert with_bias.total - without.total == 2 * 2 * 8 + 8  # two betas per block, the final norm's


# OpenAI's gpt-oss model card (arXiv 2508.10925, table 1): active parameters per token, the embedding table left out
OPENAI_ACTIVE = {"gpt-oss-20b": 3.61e9, "gpt-oss-120b": 5.13e9}


@pytest.mark.parametrize("name", OPENAI_ACTIVE)
def test_gpt_oss_active_parameters_are_openais_without_the_embedding(tmp_path, runner, name):
    """Issue 40 (8): count gave gpt-oss-20b 4,187,440,704 active beside OpenAI's 3.61B, which leaves out the
    embedding table (a token reads one column of it); Mixtral's published 12,879,925,248 counts it. Both
    conventions, each labelled: OpenAI's figure to its three digits, the control: the other one misses it."""
    from transformer_cli.cli import app
    from transformer_cli.hf.config import spec_from_config

    model = next(m for m in json.loads((DATA / "real-models-2.json").read_text()) if m["name"] == name)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model["model_type"]} | model["config"]))
    count = count_params(spec_from_config(tmp_path))
    config = model["config"]
    assert count.active - count.active_without_embedding == config["vocab_size"] * config["hidden_size"]
    assert round(count.active_without_embedding, -7) == OPENAI_ACTIVE[name]
    assert round(count.active, -7) != OPENAI_ACTIVE[name]
    result = runner.invoke(app, ["count", str(tmp_path), "--json"])
    assert json.loads(result.stdout)["specs"][0]["active_per_token_without_embedding"] == count.active_without_embedding
    text = " ".join(runner.invoke(app, ["count", str(tmp_path)], terminal_width=200).stdout.split())
    assert f"{count.active:,}" in text and f"{count.active_without_embedding:,}" in text and "OpenAI" in text


def test_mixtrals_published_active_count_includes_the_embedding():
    """The other convention (Mistral's): 12,879,925,248 active, the embedding table in it."""
    mixtral = next(m for m in json.loads((DATA / "real-models.json").read_text()) if m["name"] == "Mixtral-8x7B-v0.1")
    count = count_params(load_spec(DATA.parent.parent / "examples" / "models" / "Mixtral-8x7B-v0.1.yaml"))
    assert count.active == mixtral["active_parameters"] != count.active_without_embedding
