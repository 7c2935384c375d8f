"""The checkpoint layouts of test_hf_checkpoint*.py: a small spec of each family's shape with the config that
selects its layout, and a folder written by tfm in that layout (random float64 weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest import random_weights

from transformer_cli import Spec
from transformer_cli.tasks.conversions import write_folder

LLAMA = Spec(
    N=2,
    H=4,
    G=2,
    m=8,
    d=32,
    r=40,
    V=97,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="pre",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
)
FAMILIES = {  # config (what selects the layout) and a spec of that family's shape
    "llama": ({"model_type": "llama"}, LLAMA),
    "qwen2": ({"model_type": "qwen2"}, Spec(**{**LLAMA.to_dict(), "attention_bias": True, "out_bias": False})),
    "qwen3": ({"model_type": "qwen3"}, Spec(**{**LLAMA.to_dict(), "qk_norm": True})),
    "mixtral": ({"model_type": "mixtral"}, Spec(**{**LLAMA.to_dict(), "E": 3, "k": 2})),
    "phi3": ({"model_type": "phi3"}, LLAMA),
    "gpt2": (
        {"model_type": "gpt2"},
        Spec(
            N=2,
            H=4,
            m=8,
            d=32,
            r=128,
            V=97,
            tie_embeddings=True,
            scale="sqrt",
            mask="causal",
            positional="learned",
            max_len=64,
            norm="pre",
            attention_bias=True,
            activation="gelu",
        ),
    ),
    "bert": (
        {"model_type": "bert"},
        Spec(
            N=2,
            H=4,
            m=8,
            d=32,
            r=40,
            V=97,
            head=False,
            type_vocab=2,
            embed_norm=True,
            pooler=True,
            scale="sqrt",
            positional="learned",
            max_len=64,
            norm="post",
            attention_bias=True,
            activation="gelu_exact",
        ),
    ),
    "phi": (
        {"model_type": "phi"},
        Spec(
            N=2,
            H=4,
            m=10,
            d=40,
            r=48,
            V=97,
            head_bias=True,
            scale="sqrt",
            mask="causal",
            positional="rope",
            rope_fraction=0.4,
            norm="pre",
            parallel=True,
            shared_norm=True,
            attention_bias=True,
            activation="gelu",
        ),
    ),
    "gpt_neox": (
        {"model_type": "gpt_neox"},
        Spec(
            N=2,
            H=4,
            m=8,
            d=32,
            r=40,
            V=97,
            scale="sqrt",
            mask="causal",
            positional="rope",
            rope_fraction=0.25,
            norm="pre",
            parallel=True,
            attention_bias=True,
            activation="gelu_exact",
        ),
    ),
    "falcon-7b": (
        {"model_type": "falcon", "multi_query": True, "parallel_attn": True},
        Spec(
            N=2,
            H=4,
            G=1,
            m=8,
            d=32,
            r=128,
            V=97,
            tie_embeddings=True,
            scale="sqrt",
            mask="causal",
            positional="rope",
            norm="pre",
            parallel=True,
            shared_norm=True,
            activation="gelu_exact",
            ff_bias=False,
        ),
    ),
    "falcon-40b": (
        {"model_type": "falcon", "new_decoder_architecture": True, "num_kv_heads": 2},
        Spec(
            N=2,
            H=4,
            G=2,
            m=8,
            d=32,
            r=128,
            V=97,
            scale="sqrt",
            mask="causal",
            positional="rope",
            norm="pre",
            parallel=True,
            activation="gelu_exact",
            ff_bias=False,
        ),
    ),
    "falcon-mha": (
        {"model_type": "falcon", "multi_query": False, "parallel_attn": False, "bias": True},
        Spec(
            N=2,
            H=4,
            m=8,
            d=32,
            r=128,
            V=97,
            tie_embeddings=True,
            scale="sqrt",
            mask="causal",
            positional="rope",
            norm="pre",
            attention_bias=True,
            activation="gelu_exact",
        ),
    ),
}


def written(tmp_path: Path, family: str = "llama", shard_bytes: int | None = None) -> tuple[Path, Spec, dict]:
    config, spec = FAMILIES[family]
    weights = random_weights(spec)
    folder = tmp_path / family
    folder.parent.mkdir(parents=True, exist_ok=True)
    write_folder(folder, spec, config, weights, np.float64, shard_bytes=shard_bytes)
    return folder, spec, weights
