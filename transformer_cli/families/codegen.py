"""CodeGen (CodeGenForCausalLM, Salesforce's CodeGen 1 and 2): GPT-J's block (gptj.py: one LayerNorm shared by
parallel attention and MLP, rotary_dim of each head turned in interleaved pairs, biased MLP and head) with q, v and k
fused in qkv_proj across the four model-parallel shards it was trained with: the rows are four groups, each
[q; v; k] of d / 4 rows. Its rotary base is 10,000 in the code (no key). rotary_dim null sizes transformers' table
by the whole width (its forward fails): refused, as is a width d not divisible by four."""

from __future__ import annotations

from typing import Any

from .checkpoints import GPTJ
from .gptj import config
from .gptj import spec as gptj_spec
from .keys import Keys
from .layout import Family
from .record import Record

SHARDS = 4  # (transformers' mp_num)


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    if "rotary_dim" in c.data and c.data["rotary_dim"] is None:
        raise c.refuse("rotary_dim", None, "transformers' CodeGen sizes its rotary table by the whole width then")
    out = gptj_spec(c)
    if out["d"] % SHARDS:
        raise c.fail("n_embd", out["d"], f"a multiple of {SHARDS} (CodeGen's qkv_proj holds four shards)")
    return out | {"rope_theta": 10000.0}


CODEGEN = Family(
    GPTJ.block,
    {
        ours: theirs
        for ours, theirs in GPTJ.names.items()
        if ours not in ("attention.W_Q", "attention.W_K", "attention.W_V")
    },
    GPTJ.globals_,
    fused=(("attn.qkv_proj.weight", ("attention.W_Q", "attention.W_V", "attention.W_K"), lambda spec: SHARDS),),
)
RECORD = Record(
    "codegen",
    "CodeGenForCausalLM",
    spec,
    CODEGEN,
    config,
    config_alone=True,
    skipped=(r"\.attn\.causal_mask$",),  # (a buffer older files hold)
)

__all__ = ["RECORD"]
