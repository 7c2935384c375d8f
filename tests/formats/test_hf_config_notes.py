"""What reading a config.json says on stderr: keys transformers stores and never applies (or applies otherwise than
their name says), which tfm follows as transformers does and names in one line each (Keys.ignored, Keys.notes)."""

from __future__ import annotations

import json


def test_a_key_transformers_never_applies_is_followed_and_said_once_on_stderr(tmp_path):
    """Gemma 3's attn_logit_softcapping: transformers 5.24 keeps it and never caps the scores (the logits against
    transformers: hf_models' gemma3_text-softcapped); tfm does the same and says so, in one line."""
    from typer.testing import CliRunner

    import transformer_cli as tfm
    from transformer_cli.cli import app

    keys = dict(model_type="gemma3_text", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=1, head_dim=8)
    for name, value in (("capped", 0.5), ("plain", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | {"attn_logit_softcapping": value}))
    capped = CliRunner().invoke(app, ["count", str(tmp_path / "capped")])
    assert capped.exit_code == 0, capped.output
    said = [line for line in capped.stderr.splitlines() if "attn_logit_softcapping" in line]
    assert said == [
        f"{tmp_path / 'capped' / 'config.json'}: key 'attn_logit_softcapping': 0.5 is ignored, as transformers 5.24 "
        "stores it and never applies it to Gemma 3's attention scores"
    ]
    model = tfm.load(tmp_path / "capped")  # (its other note: no checkpoint, seeded weights)
    assert said[0] in model.notes and model.spec.attn_softcap is None
    plain = CliRunner().invoke(app, ["count", str(tmp_path / "plain")])
    assert plain.exit_code == 0 and "attn_logit_softcapping" not in plain.stderr
    assert not any("attn_logit_softcapping" in note for note in tfm.load(tmp_path / "plain").notes)


def test_olmo3s_flat_rope_theta_turns_the_full_layers_alone_and_tfm_says_so(tmp_path):
    """Olmo3Config gives the sliding layers its default base when rope_theta is a flat key (the logits against
    transformers: hf_models' olmo3-flat-theta); tfm follows it and says so."""
    import transformer_cli as tfm

    keys = dict(model_type="olmo3", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4)
    keys |= dict(num_attention_heads=4, sliding_window=5)
    for name, extra in (("flat", {"rope_theta": 100.0}), ("default", {})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    flat = tfm.load(tmp_path / "flat")
    assert (flat.spec.rope_theta, flat.spec.rope_local_theta) == (100.0, 500000.0)
    assert any("'rope_theta': 100.0 turns the full layers only" in note for note in flat.notes)
    assert not any("key 'rope_theta'" in note for note in tfm.load(tmp_path / "default").notes)


def test_cwms_flat_rope_theta_is_ignored_for_llama_3s_rotary_and_tfm_says_so(tmp_path):
    """CwmConfig sets LLaMA 3's scaled rotary of base 1e6 when the file has no rope_parameters, whatever its flat
    rope_theta (the logits against transformers without rotary keys: hf_models' cwm)."""
    import transformer_cli as tfm

    keys = dict(model_type="cwm", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=5)
    for name, extra in (("flat", {"rope_theta": 100.0}), ("given", {"rope_parameters": {"rope_theta": 100.0}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    flat = tfm.load(tmp_path / "flat")
    assert (flat.spec.rope_scaling, flat.spec.rope_theta, flat.spec.rope_factor) == ("llama3", 1e6, 16.0)
    assert any("key 'rope_theta': 100.0 is ignored" in note for note in flat.notes)
    given = tfm.load(tmp_path / "given")
    assert (given.spec.rope_scaling, given.spec.rope_theta) == ("none", 100.0)
    assert not any("key 'rope_theta'" in note for note in given.notes)


def test_solar_opens_dense_layers_and_query_key_norms_are_ignored_and_tfm_says_so(tmp_path):
    """SolarOpenConfig keeps first_k_dense_replace and use_qk_norm out of its fields: every layer is routed and no
    head is normalised (the logits against transformers with both set: hf_models' solar_open-unrenormalised)."""
    import transformer_cli as tfm

    keys = dict(model_type="solar_open", vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    keys |= dict(num_key_value_heads=2, head_dim=8, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=6)
    for name, extra in (("set", {"first_k_dense_replace": 1, "use_qk_norm": True}), ("plain", {})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    model = tfm.load(tmp_path / "set")
    assert model.spec.feedforward_layers is None and not model.spec.qk_norm
    said = [line for note in model.notes for line in note.splitlines() if "is ignored, as transformers" in line]
    assert len(said) == 2 and "'first_k_dense_replace': 1" in said[0] and "'use_qk_norm': true" in said[1]
    assert not any("is ignored" in note for note in tfm.load(tmp_path / "plain").notes)


def test_minimax_m2s_keys_transformers_never_reads_are_said_only_where_they_differ(tmp_path):
    """MiniMax-M2's published config.json sets use_qk_norm, scoring_func, use_routing_bias and the like, none read by
    transformers 5.24: a value it follows anyway is no note, another one is (the logits against transformers with
    use_qk_norm false and routed_scaling_factor 2: hf_models' minimax_m2-whole-heads)."""
    import transformer_cli as tfm

    keys = dict(model_type="minimax_m2", vocab_size=97, hidden_size=32, intermediate_size=8, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2)
    published = dict(use_qk_norm=True, scoring_func="sigmoid", use_routing_bias=True, shared_intermediate_size=0)
    for name, extra in (("published", published), ("other", dict(use_qk_norm=False, routed_scaling_factor=2.0))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    assert not any("is ignored" in note for note in tfm.load(tmp_path / "published").notes)
    other = tfm.load(tmp_path / "other")
    said = [line for note in other.notes for line in note.splitlines() if "is ignored, as transformers" in line]
    assert len(said) == 2 and "'use_qk_norm': false" in said[0] and "'routed_scaling_factor': 2.0" in said[1]
    assert other.spec.qk_norm and other.spec.router_scale == 1.0


def test_ernie_moes_partial_rotary_factor_turns_whole_heads_and_tfm_says_so(tmp_path):
    """Ernie4_5_Moe stores partial_rotary_factor and turns whole heads (the logits against transformers with 0.5:
    hf_models' ernie4_5_moe-interval); where it is 1 there is nothing to say."""
    import transformer_cli as tfm

    keys = dict(model_type="ernie4_5_moe", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=2, moe_num_experts=4, moe_k=2, moe_intermediate_size=6)
    for name, share in (("half", 0.5), ("whole", 1.0)):
        (tmp_path / name).mkdir()
        rope = {"rope_type": "default", "rope_theta": 500000.0, "partial_rotary_factor": share}
        (tmp_path / name / "config.json").write_text(json.dumps(keys | {"rope_parameters": rope}))
    half = tfm.load(tmp_path / "half")
    assert half.spec.rope_fraction == 1.0
    said = [line for note in half.notes for line in note.splitlines() if "is ignored, as transformers" in line]
    assert len(said) == 1 and "'rope_parameters.partial_rotary_factor': 0.5" in said[0]
    assert not any("is ignored" in note for note in tfm.load(tmp_path / "whole").notes)


def test_mpts_keys_transformers_builds_past_are_said_where_they_differ(tmp_path):
    """MptConfig keeps expansion_ratio, no_bias, attn_config's alibi_bias_max and the like, and MptForCausalLM is
    the same model whatever they say: tfm follows it (its MLP 4 d wide) and names each key set otherwise."""
    import transformer_cli as tfm

    keys = dict(model_type="mpt", vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=64)
    published = dict(expansion_ratio=4, no_bias=True, attn_config={"alibi": True, "alibi_bias_max": 8})
    other = dict(expansion_ratio=2, attn_config={"alibi_bias_max": 16, "qk_ln": True})
    for name, extra in (("published", published), ("other", other)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    assert not any("is ignored" in note for note in tfm.load(tmp_path / "published").notes)
    model = tfm.load(tmp_path / "other")
    said = [line for note in model.notes for line in note.splitlines() if "is ignored, as transformers" in line]
    assert [s.split("key ")[1].split(":")[0] for s in said] == [
        "'expansion_ratio'",
        "'attn_config.qk_ln'",
        "'attn_config.alibi_bias_max'",
    ]
    assert model.spec.r == 4 * 32 and not model.spec.qk_norm


def test_two_notes_are_two_lines_on_stderr(tmp_path):
    """Gemma 4's: its layer_types' last entry read as full, and the images' bidirectional attention its text model
    ignores: each note a line of its own (they were printed as one line, joined by an escaped newline)."""
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    keys = dict(model_type="gemma4_text", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=2, head_dim=8, global_head_dim=16)
    keys |= dict(
        hidden_size_per_layer_input=0, layer_types=["sliding_attention"] * 2, use_bidirectional_attention="vision"
    )
    (tmp_path / "config.json").write_text(json.dumps(keys))
    done = CliRunner().invoke(app, ["count", str(tmp_path)])
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines()
    where = f"{tmp_path / 'config.json'}: key"
    assert f"{where} 'layer_types': its last entry, 'sliding_attention', is read as 'full_attention', as " in lines[1]
    assert (
        lines[0].startswith(f"{where} 'use_bidirectional_attention': \"vision\" is ignored") and "\\n" not in lines[0]
    )


def test_kimi_linears_keys_transformers_never_reads_are_ignored_and_tfm_says_so(tmp_path):
    """Kimi-Linear's published config.json keeps mla_use_nope, rope_theta, moe_layer_freq and the like, none read by
    transformers 5.24 (its latent layers turn nothing): the same model either way, each key said."""
    import transformer_cli as tfm

    keys = dict(model_type="kimi_linear", vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=8, qk_rope_head_dim=4, v_head_dim=8)
    keys |= dict(qk_nope_head_dim=8, num_experts=4, num_experts_per_token=2, moe_intermediate_size=16)
    keys |= dict(linear_attn_config={"head_dim": 8, "num_heads": 4, "short_conv_kernel_size": 4})
    published = dict(mla_use_nope=True, rope_theta=50000.0, moe_layer_freq=1, use_grouped_topk=True)
    for name, extra in (("published", published), ("plain", {})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | extra))
    model, plain = tfm.load(tmp_path / "published"), tfm.load(tmp_path / "plain")
    assert model.spec.model_keys() == plain.spec.model_keys() and model.spec.positional == "none"
    said = [line for note in model.notes for line in note.splitlines() if "is ignored, as transformers" in line]
    assert [line.split("key ")[1].split(":")[0] for line in said] == [
        "'mla_use_nope'",
        "'rope_theta'",
        "'moe_layer_freq'",
        "'use_grouped_topk'",
    ]
    assert not any("is ignored" in note for note in plain.notes)


def test_falcon_h1s_expand_is_ignored_beside_its_channels_and_tfm_says_so(tmp_path):
    """FalconH1Config reads mamba_expand only without mamba_d_ssm: beside it another expand is said, the same not."""
    import transformer_cli as tfm

    keys = dict(model_type="falcon_h1", vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2)
    keys |= dict(num_attention_heads=4, num_key_value_heads=2, mamba_d_ssm=32, mamba_n_heads=4, mamba_d_state=6)
    for name, expand in (("other", 3), ("same", 1)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(keys | {"mamba_expand": expand}))
    other = tfm.load(tmp_path / "other")
    assert other.spec.ssm_heads * other.spec.ssm_head_dim == 32
    assert any("key 'mamba_expand': 3 is ignored, as transformers" in note for note in other.notes)
    assert not any("is ignored" in note for note in tfm.load(tmp_path / "same").notes)
