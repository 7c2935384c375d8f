"""LoRA's trainable parameters as peft counts them: `get_peft_model(model, LoraConfig(...))` on the meta device
(no weights made), its `get_nb_trainable_parameters()`, for each family's model as transformers builds it, beside
tfm's count from the config alone; and tfm specs by their own names, against the closed form."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "formats"))

from transformer_cli import Spec
from transformer_cli.analysis.lora import lora_parameters
from transformer_cli.errors import SpecError
from transformer_cli.hf.lora_modules import hf_linear_modules

torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
transformers = pytest.importorskip("transformers", reason="transformers is the reference (the test extra)")
peft = pytest.importorskip("peft", reason="peft is the LoRA reference (the test extra)")

FAMILIES = [
    "llama",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "phi3",
    "gpt2",
    "gpt_neox",
    "falcon-7b",
    "falcon-40b",
    "bloom",
    "starcoder2",
    "olmo2",
    "stablelm",
    "gptj",
    "cohere",
    "granite",
    "phi",
    "opt-350m-projected",
    "bert",
    "t5",
    "bart",
    "t5gemma",
    "t5gemma-wide-encoder",
    # issue 44's
    "arcee",
    "olmo3",
    "seed_oss",
    "helium",
    "ministral",
    "cwm",
    "smollm3",
    "exaone4",
    "ernie4_5",
    "glm4",
    "cohere2",
    "nemotron",
    "gpt_bigcode",
    "vaultgemma",
    "gemma4_text",
    "gemma4_text-ple",
    "gemma4_text-kv-shared",
    "gemma3n_text",
    "gemma3n_text-kv-shared",
    "olmo",
    "jais2",
    "persimmon",
    "youtu",
    "camembert",
    "roberta-prelayernorm",
    "xlm-roberta-xl",
    "codegen",
    "mpt",
    "granite_swa",
    "ministral3",
    "nanochat",
    "apertus",
    "eurobert",
    "electra",
    "albert",
    "mpnet",
    "modernbert",
    "modernbert-decoder",
    "deberta-v2",
]


def _peft_count(model, targets, rank: int) -> int:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules=targets))
    return wrapped.get_nb_trainable_parameters()[0]


T5GEMMA = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4)
T5GEMMA |= dict(num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4)
ENCODER_DECODERS = {
    "t5": (
        "T5Config",
        "T5ForConditionalGeneration",
        dict(vocab_size=97, d_model=32, d_kv=8, d_ff=40, num_layers=2, num_heads=4, decoder_start_token_id=0),
    ),
    "bart": (
        "BartConfig",
        "BartForConditionalGeneration",
        dict(
            vocab_size=97,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=40,
            decoder_ffn_dim=40,
            max_position_embeddings=64,
        ),
    ),
    "t5gemma": ("T5GemmaConfig", "T5GemmaForConditionalGeneration", dict(encoder=T5GEMMA, decoder=T5GEMMA)),
    "t5gemma-wide-encoder": (  # (cross-attention's keys and values of the encoder's width, grouped)
        "T5GemmaConfig",
        "T5GemmaForConditionalGeneration",
        dict(encoder=T5GEMMA | dict(hidden_size=48, num_attention_heads=6, num_key_value_heads=3), decoder=T5GEMMA),
    ),
}


def _model_and_config(name: str, tmp_path):
    from hf_models import MODELS

    config_class, model_class, kwargs = (MODELS | ENCODER_DECODERS)[name]
    cfg = getattr(transformers, config_class)(**kwargs)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(cfg)
    cfg.save_pretrained(tmp_path)
    return model, json.loads((tmp_path / "config.json").read_text())


@pytest.mark.parametrize("rank", [8, 16])
@pytest.mark.parametrize("name", FAMILIES)
def test_trainable_parameters_are_peft_s(tmp_path, name, rank):
    from transformer_cli.hf.config import spec_from_config

    model, config = _model_and_config(name, tmp_path)
    spec = spec_from_config(tmp_path)
    linear = sorted(
        {
            n.rsplit(".", 1)[-1]
            for n, m in model.named_modules()
            if isinstance(m, (torch.nn.Linear, transformers.pytorch_utils.Conv1D))
            and not n.rsplit(".", 1)[-1].isdigit()  # (Gemma 3n's altup_projections.0: ".0" is a layer too)
        }
        - {"lm_head"}
    )
    modules = hf_linear_modules(spec, config)
    assert lora_parameters(spec, rank, "all-linear", modules) == _peft_count(model, "all-linear", rank)
    two = linear[:2]  # (a list of module names, matched as peft matches them)
    model, _ = _model_and_config(name, tmp_path)  # (peft wrapped the first in place)
    assert lora_parameters(spec, rank, ",".join(two), modules) == _peft_count(model, two, rank)


def test_a_tfm_spec_counts_its_own_projections_by_the_closed_form():
    spec = Spec(N=3, H=4, G=2, m=8, d=32, r=40, feedforward="gated", activation="silu", norm="pre")
    r, d, H, G, m, ff = 4, 32, 4, 2, 8, 40
    per_block = r * ((d + H * m) * 2 + (d + G * m) * 2 + (d + ff) * 3)  # W_Q, W_O; W_K, W_V; W1, W3, W2
    assert lora_parameters(spec, r) == 3 * per_block
    assert lora_parameters(spec, r, "W_Q,W_V") == 3 * r * ((d + H * m) + (d + G * m))
    assert lora_parameters(spec, r, "W_Q,W_V") != lora_parameters(spec, r, "W_Q,W_K,W_V")  # (the control)


def test_what_lora_cannot_count_is_refused_in_one_line(tmp_path):
    spec = Spec(N=1, H=2, m=4, d=8, r=16)
    with pytest.raises(SpecError, match=r"--lora-targets q_proj: q_proj names no linear module of this model"):
        lora_parameters(spec, 8, "q_proj")
    with pytest.raises(SpecError, match="expected a positive rank"):
        lora_parameters(spec, 0)


def test_a_tfm_spec_s_experts_each_have_an_adapter_by_the_closed_form():
    spec = Spec(N=2, H=2, m=4, d=8, r=16, E=4, k=2, expert_r=6, shared_r=12, feedforward="gated", activation="silu")
    r, d, H, m, E, r_e, r_s = 8, 8, 2, 4, 4, 6, 12
    attention = 4 * (d + H * m)  # W_Q, W_K, W_V, W_O
    per_block = r * (attention + E * 3 * (d + r_e) + 3 * (d + r_s))  # each expert's W1, W3, W2; the shared's
    assert lora_parameters(spec, r) == 2 * per_block
    assert lora_parameters(spec, r, "W2") == 2 * r * (E * (r_e + d) + (r_s + d))
    assert lora_parameters(spec, r, "W_Q") == 2 * r * (d + H * m)  # (the router is no target)


MIXTURES = [
    "mixtral",
    "qwen2_moe",
    "qwen2_moe-all-routed",
    "qwen3_moe",
    "qwen3_moe-all-routed",
    "deepseek_v2",
    "deepseek_v3",
    "phimoe",
    "gpt_oss",
    # issue 44's
    "olmoe",
    "flex_olmo",
    "granitemoe",
    "granitemoeshared",
    "glm4_moe",
    "glm4_moe_lite",
    "dots1",
    "solar_open",
    "exaone_moe",
    "minimax_m2",
    "ernie4_5_moe",
    "hy_v3",
    "cohere2_moe",
    "afmoe",
    "llama4_text",
    "mistral4",
    "dbrx",
    "laguna",
    "jetmoe",
    "mimo_v2_flash",
    "longcat_flash",
    "gemma4_text-moe",
    # issue 45's
    "deepseek_v32",
    "glm_moe_dsa-shared",
]
# a list of names of each family: attention and the experts by their checkpoint's names (peft maps them)
LISTS = {
    "mixtral": "q_proj,w1,w3",
    "qwen3_moe": "v_proj,down_proj,gate",
    "deepseek_v2": "kv_b_proj,gate_proj,up_proj",
    "deepseek_v3": "q_b_proj,down_proj",
    "phimoe": "o_proj,router",
    "qwen2_moe": "k_proj,shared_expert_gate",
    "gpt_oss": "q_proj,k_proj",
    "olmoe": "q_proj,gate_proj,up_proj",
    "flex_olmo": "o_proj,down_proj",
    "granitemoe": "q_proj,k_proj",
    "granitemoeshared": "v_proj,input_linear",
    "glm4_moe": "q_proj,gate_proj,up_proj",
    "glm4_moe_lite": "kv_b_proj,down_proj",
    "dots1": "k_proj,down_proj,gate",
    "solar_open": "o_proj,gate_proj,up_proj",
    "exaone_moe": "q_proj,down_proj",
    "minimax_m2": "q_proj,w1,w3",
    "ernie4_5_moe": "v_proj,down_proj",
    "hy_v3": "o_proj,gate_proj",
    "cohere2_moe": "q_proj,gate_proj,up_proj",
    "afmoe": "v_proj,down_proj",
    "llama4_text": "q_proj,router",
    "mistral4": "q_b_proj,down_proj",
    "dbrx": "Wqkv,out_proj",
    "laguna": "g_proj,down_proj",
    "jetmoe": "kv_proj,layer",
    "mimo_v2_flash": "v_proj,o_proj,down_proj",
    "longcat_flash": "kv_b_proj,gate_proj,up_proj",
    "gemma4_text": "q_proj,o_proj,down_proj",
    "deepseek_v32": "wq_b,weights_proj,q_b_proj,down_proj",  # (the indexer's projections too)
    "glm_moe_dsa": "wk,kv_b_proj,gate_proj,up_proj",
}


@pytest.mark.parametrize("rank", [4, 16])
@pytest.mark.parametrize("name", MIXTURES)
def test_a_mixture_s_trainable_parameters_are_peft_s_on_transformers_5_s_model(tmp_path, name, rank):
    """peft wraps the stacked experts as parameters (rank r for each expert, 2 r for gate and up), or leaves
    them frozen, family by family (hf/lora_modules.py); tfm counts from the config alone what it counts."""
    from transformer_cli.hf.config import spec_from_config

    model, config = _model_and_config(name, tmp_path)
    spec = spec_from_config(tmp_path)
    modules = hf_linear_modules(spec, config)
    assert lora_parameters(spec, rank, "all-linear", modules) == _peft_count(model, "all-linear", rank)
    chosen = LISTS[name.split("-")[0]]
    model, _ = _model_and_config(name, tmp_path)
    assert lora_parameters(spec, rank, chosen, modules) == _peft_count(model, chosen.split(","), rank)


def test_a_mixture_s_fused_stack_is_targeted_whole_or_refused(tmp_path):
    from transformer_cli.hf.config import spec_from_config

    _, config = _model_and_config("mixtral", tmp_path)
    spec = spec_from_config(tmp_path)
    modules = hf_linear_modules(spec, config)
    with pytest.raises(SpecError, match="w1, w3 are one stacked parameter"):
        lora_parameters(spec, 4, "w1", modules)
    model, _ = _model_and_config("mixtral", tmp_path)
    with pytest.raises(ValueError, match="without also targeting w3"):  # (peft refuses it too)
        _peft_count(model, ["w1"], 4)
    d, r_e, E, N = spec.d, spec.expert_r or spec.r, spec.E, spec.N
    assert lora_parameters(spec, 4, "w2", modules) == N * 4 * E * (r_e + d)  # the down stack: r E (in + out)
    assert lora_parameters(spec, 4, "w1,w3", modules) == N * 2 * 4 * E * (d + 2 * r_e)  # gate and up: rank 2 r
