"""The checkpoints the tests of issue 42's weights modes run (test_weights_modes.py) and of how a block's tensors
are decoded (test_weights_decoding.py): one small LLaMA in every format tfm reads, and a larger one for peak RSS."""

from __future__ import annotations

import json

import numpy as np
from gguf_files import write_random_quantised
from quantized_files import bitsandbytes_folder, float_llama, fp8_folder

import transformer_cli as tfm
from transformer_cli.analysis.modes import mode_estimates, stored_form
from transformer_cli.tasks.sources import load_weights

KEYS = dict(
    num_hidden_layers=4, hidden_size=256, intermediate_size=512, tie_word_embeddings=False
)  # (Q4_K: rows of 256)
IDS = np.random.default_rng(4).integers(0, 97, size=(2, 9))


def make_files(root):
    """The small model in every format, under `root`."""
    import transformers

    source = float_llama(root / "hf", **KEYS)
    tfm.convert(source, root / "hf-bf16", dtype="bfloat16")
    tfm.convert(source, root / "hf-f16", dtype="float16")
    tfm.convert(root / "hf-bf16", root / "hf-sharded", shard_size="300K")
    bitsandbytes_folder(source, root / "hf-int8", load_in_8bit=True)
    fp8_folder(source, root / "hf-fp8", block=32)
    for kind in ("f16", "q8_0", "q4_0"):
        tfm.convert(source, root / f"m-{kind}.gguf", gguf_type=kind)
    write_random_quantised(transformers.AutoModelForCausalLM.from_pretrained(source), root / "m-q4_k.gguf", "Q4_K")
    return root


FORMATS = ["hf", "hf-bf16", "hf-f16", "hf-sharded", "hf-int8", "hf-fp8", "m-f16.gguf", "m-q8_0.gguf"]
FORMATS += ["m-q4_0.gguf", "m-q4_k.gguf"]


BIG = dict(  # 12 blocks of 4.2M parameters: 200 MB in float32, 100 MB as bfloat16; the embedding and head 1 MB
    model_type="llama",
    vocab_size=512,
    hidden_size=512,
    intermediate_size=2048,
    num_hidden_layers=12,
    num_attention_heads=8,
    num_key_value_heads=4,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
)


def make_big(root):
    """The larger model (BIG) under `root`: float32, bfloat16 and q8_0, and 48 token ids."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps(BIG))
    tfm.init(root / "config.json", root / "f32", seed=1)
    tfm.convert(root / "f32", root / "bf16", dtype="bfloat16")
    tfm.convert(root / "f32", root / "q8_0.gguf", gguf_type="q8_0")
    np.save(root / "ids.npy", np.random.default_rng(5).integers(0, 512, size=48))
    return root


def mode_figures(path):
    model = tfm.load(path)
    return mode_estimates(model.spec, *IDS.shape, "float32", stored_form(load_weights(path, model.spec)))


def just_above(estimate) -> str:
    return f"{estimate.total // 1024 + 4}K"  # just above the mode's figure (4 KiB: the rounding to KiB)
