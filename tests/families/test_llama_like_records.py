"""The LLaMA-like records' config.json writers (families/llama.py, qwen.py, olmo2.py, phi3.py, falcon.py): what a
record writes from a spec reads back through its own config.json reader as the same model, Mistral's among them
(no GGUF file leads to it: a llama file's model is LLaMA's or Mixtral's); and a changed key is seen (the control)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from transformer_cli.families import RECORDS
from transformer_cli.hf.config import spec_of_config

SIZES = {
    "vocab_size": 97,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
CONFIGS = {
    "llama": SIZES | {"attention_bias": True},
    "mistral": SIZES | {"sliding_window": 16},
    "mixtral": SIZES | {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2": SIZES,
    "qwen3": SIZES | {"head_dim": 8},
    "olmo2": SIZES,
    "phi3": SIZES | {"sliding_window": 16, "partial_rotary_factor": 0.5},
    "falcon": {"vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4},
}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_a_record_writes_the_config_it_reads(kind):
    record = RECORDS[kind]
    spec = spec_of_config({"model_type": kind} | CONFIGS[kind], f"{kind}.json")
    written = {"model_type": kind} | record.config(spec)
    assert spec_of_config(written, "written.json").model_keys() == spec.model_keys()
    changed = replace(spec, norm_eps=spec.norm_eps * 2)  # (the control: a key the writer must carry)
    assert spec_of_config({"model_type": kind} | record.config(changed), "x.json").model_keys() != spec.model_keys()
