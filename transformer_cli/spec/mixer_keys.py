"""The keys of the blocks' token mixers beside attention: which blocks mix their columns with which mixer (LFM2's
short convolutions between its attention blocks), and each mixer's own sizes. The Spec's class body takes each field
from here; each mixer is a component registered under its name (components/short_conv.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import ATTENTIONS
from .choices import key as _key

MIXER_FIELDS: dict[str, Any] = {
    "mixer_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "which mixer each block mixes its columns with (LFM2: short_conv blocks between standard attention "
            "ones): a list of N kinds or a shorter pattern repeated over the blocks [default: all `attention`]",
            ATTENTIONS,
        ),
    ),
    "conv_kernel": field(
        default=3,
        metadata=_key(
            "posint",
            "short_conv, mamba2, mamba, deltanet: the causal depthwise convolution's kernel L, each column mixed "
            "with the L - 1 before it (LFM2's conv_L_cache, Mamba-2's conv_kernel)",
        ),
    ),
    "conv_bias": field(
        default=False,
        metadata=_key("bool", "short_conv: biases on its projections and its kernel; mamba2, mamba: on its kernel"),
    ),
    "ssm_heads": field(default=None, metadata=_key("posint", "mamba2: the state space's heads H_s (num_heads)")),
    "ssm_head_dim": field(
        default=None, metadata=_key("posint", "mamba2: each head's size P (head_dim); the inner size I = H_s P")
    ),
    "ssm_state": field(
        default=None, metadata=_key("posint", "mamba2: each head's state size N_s; mamba: each channel's (state_size)")
    ),
    "ssm_groups": field(
        default=1,
        metadata=_key("posint", "mamba2: the groups G_s of B and C (n_groups), each shared by H_s / G_s heads"),
    ),
    "ssm_dt_min": field(
        default=None,
        metadata=_key("posfloat", "mamba2: each step at least this (Nemotron-H's time_step_min) [default: none]"),
    ),
    "ssm_bias": field(
        default=False, metadata=_key("bool", "mamba2, mamba: biases on its input and output projections")
    ),
    "linear_k_heads": field(default=None, metadata=_key("posint", "deltanet: the query and key heads nk")),
    "linear_k_dim": field(default=None, metadata=_key("posint", "deltanet: each query and key head's size dk")),
    "linear_v_heads": field(
        default=None,
        metadata=_key("posint", "deltanet: the value heads nv, each with its state (a multiple of nk); kda: its heads"),
    ),
    "linear_v_dim": field(
        default=None, metadata=_key("posint", "deltanet: each value head's size dv; kda: each head's size")
    ),
    "linear_beta_scale": field(
        default=1.0,
        metadata=_key(
            "posfloat",
            "deltanet: the write strength beta = this times sigmoid(b) (OLMo-Hybrid's allow_neg_eigval: 2)",
        ),
    ),
    "linear_norm_eps": field(
        default=None,
        metadata=_key(
            "posfloat",
            "deltanet, mamba2: its output norm's eps [default: norm_eps] (OLMo-Hybrid's 1e-5; Zamba2's gated norm's)",
        ),
    ),
    "linear_gate_fn": field(
        default="silu",
        metadata=_key(
            "choice",
            "deltanet: its output gate's function, silu(z) or sigmoid(z) (Qwen4's output_gate_type)",
            ("silu", "sigmoid"),
        ),
    ),
    "linear_decay_bound": field(
        default=None,
        metadata=_key(
            "posfloat",
            "kda: its decay bounded, g = -B sigmoid(exp(A_log) f) where Kimi's is -exp(A_log) softplus(f) "
            "(GLM-5-Next's linear_lower_bound, -B) [default: none]",
        ),
    ),
    "ssm_inner": field(default=None, metadata=_key("posint", "mamba: its channels I (expand x d), each a state")),
    "ssm_dt_rank": field(default=None, metadata=_key("posint", "mamba: the steps' low rank R (time_step_rank)")),
    "ssm_bcdt_norm": field(
        default="none",
        metadata=_key(
            "choice",
            "mamba: RMS norms of the steps' low-rank part, B and C: none, plain (no gains: Falcon Mamba) or affine "
            "(gains: Jamba)",
            ("none", "plain", "affine"),
        ),
    ),
    "ssm_bcdt_eps": field(
        default=None, metadata=_key("posfloat", "mamba: those norms' eps [default: norm_eps] (Falcon Mamba's 1e-6)")
    ),
    "ssm_norm": field(
        default="gated",
        metadata=_key(
            "choice",
            "mamba2: its norm of y, per group of I / G_s rows: of y silu(z) (gated: Mamba-2's), of y before the "
            "gate silu(z) (before_gate: Falcon-H1's mamba_norm_before_gate), or none (y silu(z), no gain)",
            ("gated", "before_gate", "none"),
        ),
    ),
    "ssm_scales": field(
        default=None,
        metadata=_key(
            "floats",
            "mamba2: five numbers multiplying the rows of W_in x + b_in: z, x, B, C and dt (Falcon-H1's "
            "ssm_multipliers) [default: none]",
        ),
    ),
    "parallel_scales": field(
        default=None,
        metadata=_key(
            "floats",
            "attention_mamba2: five numbers, what the attention reads times the first (Falcon-H1's "
            "attention_in_multiplier), its keys times the second (key_multiplier), its output times the third, "
            "what the state space reads times the fourth (ssm_in_multiplier), its output times the fifth "
            "[default: all 1]",
        ),
    ),
    "mem_blocks": field(
        default=None,
        metadata=_key(
            "posint",
            "mamba2_memory (Zamba2's hybrid blocks): how many shared transformer blocks there are (num_mem_blocks); "
            "the k-th mamba2_memory block runs block k mod mem_blocks on [its input; the embedded columns] before "
            "its Mamba-2 mixer",
        ),
    ),
    "mem_rank": field(
        default=None,
        metadata=_key(
            "posint", "mamba2_memory: the rank of each use's LoRA adapters of the shared block (adapter_rank)"
        ),
    ),
    "mem_qkv_adapters": field(
        default=False,
        metadata=_key(
            "bool",
            "mamba2_memory: adapters on the shared attention's queries, keys and values too, not only on its MLP's "
            "gate and up rows (use_shared_attention_adapter)",
        ),
    ),
    "o_groups": field(
        default=None,
        metadata=_key(
            "posint",
            "shared_kv, compressed, compressed_sparse (DeepSeek-V4's attention): the heads' outputs in this many "
            "groups of H/o_groups heads, each through its own W_OA of o_rank rows, then W_OB (d, o_groups o_rank)",
        ),
    ),
    "o_rank": field(default=None, metadata=_key("posint", "shared_kv, compressed, compressed_sparse: W_OA's rows")),
    "compress_rate": field(
        default=None,
        metadata=_key(
            "posint",
            "compressed_sparse (DeepSeek-V4's CSA): an entry every this many tokens, pooled from 2 compress_rate "
            "tokens (its window and the one before), each query attending to the index_topk its indexer chooses",
        ),
    ),
    "compress_heavy_rate": field(
        default=None,
        metadata=_key(
            "posint", "compressed (DeepSeek-V4's HCA): an entry pooled from every this many tokens, all attended"
        ),
    ),
}

__all__ = ["MIXER_FIELDS"]
