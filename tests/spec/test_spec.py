"""Spec loading: every valid key, and an error naming file, key, value and expectation for each bad one."""

from __future__ import annotations

import math

import pytest
from conftest import EXAMPLES
from helpers_spec import BASE, error_of, write

from transformer_cli import DEFAULT_SPEC, Spec, SpecError, count_params, spec_from_mapping
from transformer_cli.spec.load import load_spec  # the YAML reader (transformer_cli.load_spec takes any model)


def test_minimal_spec_defaults_to_the_seed(tmp_path):
    spec = load_spec(write(tmp_path, BASE))
    assert (spec.N, spec.H, spec.m, spec.d, spec.r) == (2, 4, 8, 32, 64)
    assert (spec.scale, spec.mask, spec.positional, spec.norm, spec.attention_bias, spec.activation) == (
        "none",
        "none",
        "none",
        "none",
        False,
        "relu",
    )
    assert spec.score_scale == 1.0 and spec.name == "spec"


def test_default_spec_is_the_documented_one():
    assert load_spec(None) == DEFAULT_SPEC
    assert (DEFAULT_SPEC.N, DEFAULT_SPEC.H, DEFAULT_SPEC.m, DEFAULT_SPEC.d, DEFAULT_SPEC.r) == (2, 4, 8, 32, 64)


def test_every_variant_key_is_read(tmp_path):
    text = BASE + "scale: sqrt\nmask: causal\npositional: learned\nmax_len: 12\nnorm: pre\nnorm_eps: 1.0e-6\n"
    text += "attention_bias: true\nactivation: gelu\nname: x\ndescription: y\n"
    spec = load_spec(write(tmp_path, text))
    assert spec.score_scale == pytest.approx(1 / math.sqrt(8))
    assert (spec.mask, spec.positional, spec.max_len, spec.norm, spec.norm_eps) == (
        "causal",
        "learned",
        12,
        "pre",
        1e-6,
    )
    assert spec.attention_bias and spec.activation == "gelu" and spec.name == "x"


def test_numeric_scale(tmp_path):
    assert load_spec(write(tmp_path, BASE + "scale: 0.25\n")).score_scale == 0.25
    assert load_spec(write(tmp_path, BASE + "scale: 2\n")).score_scale == 2.0


def test_m_need_not_be_d_over_h(tmp_path):
    assert load_spec(write(tmp_path, "N: 1\nH: 3\nm: 5\nd: 7\nr: 2\n")).m == 5


@pytest.mark.parametrize(
    "text, words",
    [
        ("N: [1, 2\n", ["invalid YAML", "line 2", "column"]),
        ("N: 1\n  H: 2\n", ["invalid YAML", "line 2"]),
        ("- 1\n- 2\n", ["expected a mapping", "list"]),
        ("", ["expected a mapping", "empty"]),
        ("# only a comment\n", ["expected a mapping", "empty"]),
        ("N: 2\nH: 4\nm: 8\nd: 32\n", ["missing required key r"]),
        ("H: 4\nm: 8\nd: 32\n", ["missing required keys N, r"]),
        (BASE + "rr: 3\n", ["unknown key 'rr'", "did you mean 'r'"]),
        (BASE + "sacle: sqrt\n", ["unknown key 'sacle'", "did you mean 'scale'"]),
        (BASE.replace("r: 64", "r: true"), ["key 'r'", "got true", "positive integer"]),
        (BASE.replace("r: 64", "r: '64'"), ["key 'r'", "'64'", "positive integer"]),
        (BASE.replace("r: 64", "r: 64.5"), ["key 'r'", "64.5", "positive integer"]),
        (BASE.replace("r: 64", "r: 1.0e+20"), ["key 'r'", "1e+20", "not exact: write its digits"]),
        (BASE.replace("r: 64", "r: 1:30"), ["key 'r'", "got '1:30'", "positive integer"]),
        (BASE.replace("r: 64", "r: 1_000"), ["key 'r'", "got '1_000'", "positive integer"]),
        (BASE + "attention_bias: yes\n", ["key 'attention_bias'", "got 'yes'", "YAML 1.2 reads yes as a string"]),
        (BASE + "norm: pre\nnorm_eps: .inf\n", ["key 'norm_eps'", "got inf", "positive number"]),
        (BASE + "norm: pre\nnorm_eps: .nan\n", ["key 'norm_eps'", "got nan", "positive number"]),
        (BASE.replace("N: 2", "N: 0"), ["key 'N'", "got 0", "positive integer"]),
        (BASE.replace("H: 4", "H: -4"), ["key 'H'", "got -4", "positive integer"]),
        (BASE.replace("d: 32", "d: ~"), ["key 'd'", "got null", "positive integer"]),
        (BASE + "scale: cube\n", ["key 'scale'", "'cube'", "none, sqrt or a positive number"]),
        (BASE + "scale: -1\n", ["key 'scale'", "-1", "positive number"]),
        (BASE + "mask: future\n", ["key 'mask'", "'future'", "one of none, causal"]),
        (BASE + "positional: rotary\n", ["key 'positional'", "one of none, sinusoidal, learned"]),
        (BASE + "positional: learned\n", ["key 'max_len'", "missing"]),
        (BASE + "max_len: 8\n", ["key 'max_len'", "unless positional is learned"]),
        (BASE + "norm: pre\nnorm_eps: 0\n", ["key 'norm_eps'", "positive number"]),
        (BASE + "norm_eps: 1.0e-5\n", ["key 'norm_eps'", "unless norm is pre or post"]),
        (BASE + "attention_bias: 1\n", ["key 'attention_bias'", "true or false"]),
        (BASE + "activation: tanh\n", ["key 'activation'", "one of relu, gelu"]),
        (BASE + "x: &a [1]\ny: *a\n", ["aliases"]),
        (BASE + "---\n" + BASE, ["2 YAML documents"]),
        (BASE + "n: !!python/object:os.system ls\n", ["invalid YAML"]),
    ],
)
def test_bad_specs_name_the_problem(tmp_path, text, words):
    message = error_of(tmp_path, text)
    for word in words:
        assert word in message, message


def test_bom_is_accepted_and_non_utf8_is_not(tmp_path):
    assert load_spec(write(tmp_path, b"\xef\xbb\xbf" + BASE.encode())).r == 64
    assert "not UTF-8" in error_of(tmp_path, b"N: 2\nname: \xff\xfe\n")


def test_hex_integers_are_integers(tmp_path):
    assert load_spec(write(tmp_path, BASE.replace("r: 64", "r: 0x40"))).r == 64


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.yaml")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_oversized_file_is_refused_unread(tmp_path):
    with pytest.raises(SpecError, match="at most"):
        load_spec(write(tmp_path, BASE + "#" * (1 << 20)))


def test_mapping_api_names_its_source():
    with pytest.raises(SpecError, match="my-dict: key 'N'"):
        spec_from_mapping({"N": 0, "H": 1, "m": 1, "d": 1, "r": 1}, "my-dict")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads(path):
    assert isinstance(load_spec(path), Spec)


def test_to_dict_round_trips(tmp_path):
    text = BASE + "scale: sqrt\nmask: causal\npositional: learned\nmax_len: 12\nnorm: post\nactivation: gelu\n"
    spec = load_spec(write(tmp_path, text))
    assert spec_from_mapping(spec.to_dict(), "again") == spec


def test_the_model_keys_leave_out_labels_and_compare_the_scale_as_applied():
    a = Spec(N=1, H=1, m=4, d=2, r=2, name="a", description="x", scale="sqrt")
    b = Spec(N=1, H=1, m=4, d=2, r=2, name="b", scale=0.5)
    assert a.model_keys() == b.model_keys()
    assert a.model_keys() != Spec(N=1, H=1, m=4, d=2, r=3, name="a").model_keys()


@pytest.mark.parametrize(
    "line, ending",
    [
        ("name: " + "7" * 5000, "key 'name': got an integer of 5,000 digits, expected a string"),
        ("name: 1.0e+20", "key 'name': got 1e+20, expected a string"),
        ("scale: " + "7" * 5000, "expected none, sqrt or a positive number of at most 1,000 digits"),
    ],
)
def test_the_reason_fits_the_key(tmp_path, line, ending):
    assert error_of(tmp_path, BASE + line + "\n").endswith(ending)


def test_norm_type_needs_a_norm(tmp_path):
    message = error_of(tmp_path, BASE + "norm_type: rmsnorm\n")
    assert "key 'norm_type'" in message and "no norm_type unless norm is pre or post" in message


@pytest.mark.parametrize("G", [3, 5])
def test_key_value_heads_must_divide_the_heads(tmp_path, G):
    message = error_of(tmp_path, BASE + f"G: {G}\n")  # H = 4
    assert "key 'G'" in message and "a divisor of H = 4" in message


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("parallel: true\n", "norm: pre with parallel blocks"),
        ("norm: pre\nshared_norm: true\n", "no shared_norm unless parallel is true"),
    ],
)
def test_parallel_blocks_need_pre_norm_and_shared_norm_needs_parallel(tmp_path, extra, words):
    assert words in error_of(tmp_path, BASE + extra)


def test_dropping_an_output_bias_needs_the_attention_biases(tmp_path):
    assert "no out_bias: false unless attention_bias is true" in error_of(tmp_path, BASE + "out_bias: false\n")


def test_plus_one_needs_a_norm(tmp_path):
    assert "a norm to scale by 1 + gamma" in error_of(tmp_path, BASE + "norm: none\nnorm_plus_one: true\n")


def test_an_output_bias_alone_is_counted_as_d(tmp_path):
    """GPT-Neo: b_O without b_Q, b_K, b_V (out_bias: true, attention_bias false), d more per block."""
    plain = load_spec(write(tmp_path, BASE))
    alone = load_spec(write(tmp_path, BASE + "out_bias: true\n"))
    assert count_params(alone).per_block == count_params(plain).per_block + plain.d
    assert count_params(alone).closed_per_block == count_params(alone).per_block
    assert "blocks.0.attention.b_O" in [t.name for t in count_params(alone).block]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("E: 8\n", "key 'k': missing, expected a positive integer with E"),
        ("k: 2\n", "key 'E': missing, expected a positive integer with k"),
        ("E: 2\nk: 3\n", "key 'k': got 3, expected at most E = 2"),
    ],
)
def test_experts_need_k_of_at_most_E(tmp_path, extra, words):
    assert words in error_of(tmp_path, BASE + extra)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("type_vocab: 2\n", "no type_vocab unless the spec has a vocabulary V"),
        (
            "V: 10\nhead: false\ntie_embeddings: true\n",
            "a head for tie_embeddings, head_bias, logit_scale or logit_softcap",
        ),
    ],
)
def test_bert_keys_need_a_vocabulary_and_a_head_when_tied(tmp_path, extra, words):
    assert words in error_of(tmp_path, BASE + extra)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("pad_id: 1\n", "key 'pad_id': got 1, expected no pad_id unless the spec has a vocabulary V"),
        ("V: 10\npad_id: -1\n", "key 'pad_id': got -1, expected a non-negative integer"),
        ("V: 10\npad_id: 1.5\n", "key 'pad_id': got 1.5, expected a non-negative integer"),
    ],
)
def test_the_padding_token_is_a_token_of_the_vocabulary(tmp_path, extra, message):
    assert error_of(tmp_path, BASE + extra).endswith("/spec.yaml: " + message)
    assert load_spec(write(tmp_path, BASE + "V: 10\npad_id: 0\n")).pad_id == 0  # (0 is a token like any other)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "logit_softcap: 30\n",
            "key 'logit_softcap': got 30, expected no logit_softcap unless the spec has a vocabulary V",
        ),
        (
            "V: 10\nhead: false\nlogit_softcap: 30\n",
            "key 'head': got false, expected a head for tie_embeddings, head_bias, logit_scale or logit_softcap",
        ),
        ("attn_softcap: 0\n", "key 'attn_softcap': got 0, expected a positive number"),
        (
            "positional: rope\nrope_local_theta: 10000\n",
            "key 'rope_local_theta': got 10000, expected no rope_local_theta without attention_layers (sliding blocks "
            "beside full ones)",
        ),
        (
            "mask: causal\nwindow: 4\nattention_layers: [sliding, full]\nrope_local_theta: 10000\n",
            "key 'rope_local_theta': got 10000, expected no rope_local_theta unless positional is rope",
        ),
    ],
)
def test_gemmas_keys_are_one_line_errors(tmp_path, extra, message):
    assert error_of(tmp_path, BASE + extra).endswith("/spec.yaml: " + message)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("expert_r: 8\n", "key 'expert_r': got 8, expected no expert_r without experts (E)"),
        ("shared_r: 8\n", "key 'shared_r': got 8, expected no shared_r without experts (E)"),
        ("router_renorm: false\n", "key 'router_renorm': got false, expected no router_renorm without experts (E)"),
        (
            "E: 4\nk: 2\nshared_gate: true\n",
            "key 'shared_gate': got true, expected no shared_gate without a shared expert (shared_r)",
        ),
        ("expert_clamp: 7\n", "key 'expert_clamp': got 7, expected no expert_clamp without experts (E)"),
        (
            "E: 4\nk: 2\nexpert_clamp: 7\n",
            "key 'expert_clamp': got 7, expected feedforward gated (it clamps the gate and the up rows)",
        ),
        ("index_rope: last\n", "key 'index_rope': got 'last', expected no index_rope unless attention is indexed"),
    ],
)
def test_the_experts_keys_are_one_line_errors(tmp_path, extra, message):
    assert error_of(tmp_path, BASE + extra).endswith("/spec.yaml: " + message)
