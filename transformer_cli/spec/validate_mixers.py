"""What the mixers' keys need of each other beyond their types (validate.py's checks): a mixer's own keys only
where a block mixes by it, at most one kind a block."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from .definition import Spec

Fail = Callable[[str, str, Any, str], SpecError]
SSM_KEYS = ("ssm_heads", "ssm_head_dim", "ssm_state", "ssm_groups", "ssm_dt_min")
SELECTIVE_KEYS = ("ssm_inner", "ssm_dt_rank", "ssm_bcdt_norm", "ssm_bcdt_eps")
LINEAR_KEYS = ("linear_k_heads", "linear_k_dim", "linear_v_heads", "linear_v_dim")
MAMBA2 = ("mamba2", "attention_mamba2", "mamba2_memory")  # (Falcon-H1's side by side; Zamba2's after a shared block)
MEMORY_KEYS = ("mem_blocks", "mem_rank", "mem_qkv_adapters")
OWN_KEYS: dict[str, tuple[str, ...]] = dict.fromkeys(("conv_bias",), ("short_conv", *MAMBA2, "mamba"))
OWN_KEYS |= {"conv_kernel": ("short_conv", *MAMBA2, "mamba", "deltanet", "kda")}
OWN_KEYS |= dict.fromkeys(LINEAR_KEYS[:2], ("deltanet",)) | dict.fromkeys(LINEAR_KEYS[2:], ("deltanet", "kda"))
OWN_KEYS |= {
    "linear_beta_scale": ("deltanet",),
    "linear_gate_fn": ("deltanet",),
    "linear_norm_eps": ("deltanet", *MAMBA2),
}
OWN_KEYS |= dict.fromkeys((*SSM_KEYS, "ssm_norm", "ssm_scales"), MAMBA2) | dict.fromkeys(SELECTIVE_KEYS, ("mamba",))
OWN_KEYS |= {"ssm_state": (*MAMBA2, "mamba"), "ssm_bias": (*MAMBA2, "mamba"), "parallel_scales": MAMBA2[1:2]}
OWN_KEYS |= dict.fromkeys(MEMORY_KEYS, ("mamba2_memory",)) | {"linear_decay_bound": ("kda",)}
COUNTS = {"ssm_scales": 5, "parallel_scales": 5, "ff_scales": 2}  # (the lists' lengths)
RECURRENT = frozenset(m for readers in OWN_KEYS.values() for m in readers)  # the mixers that are not attention


def mixers(spec: Spec) -> set[str]:
    """The mixers the spec's blocks use: `attention`'s, and those mixer_layers names."""
    return {spec.attention, *(spec.mixer_layers or ())}


def check_mixers(spec: Spec, data: dict[str, Any], source: str, fail: Fail) -> None:
    """mixer_layers of at most N kinds; each mixer's keys with that mixer (`fail`: validate.py's one-line error)."""
    kinds = data.get("mixer_layers")
    if kinds is not None and len(kinds) > spec.N:
        raise fail(source, "mixer_layers", kinds, f"at most N = {spec.N} kinds (one per block)")
    used = mixers(spec)
    if used & RECURRENT and (spec.N_enc is not None or spec.block_groups is not None):
        key = "mixer_layers" if "mixer_layers" in data else "attention"
        raise fail(
            source,
            key,
            data.get(key),
            "one stack of blocks of their own with a recurrent mixer (no N_enc, block_groups)",
        )
    for key, readers in OWN_KEYS.items():
        if key in data and not used & set(readers):
            kinds = " or ".join(readers)
            raise fail(source, key, data[key], f"no {key} without a {kinds} block (attention or mixer_layers)")
    for key, count in COUNTS.items():
        if key in data and len(data[key]) != count:
            raise fail(source, key, data[key], f"a list of {count} numbers")
    if "ff_scales" in data and spec.feedforward != "gated":
        raise fail(source, "ff_scales", data["ff_scales"], "no ff_scales without feedforward: gated")
    if used & set(MAMBA2):
        for key in SSM_KEYS[:3]:
            if getattr(spec, key) is None:
                raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with a mamba2 block")
        if spec.ssm_heads % spec.ssm_groups:  # type: ignore[operator]
            raise fail(source, "ssm_groups", spec.ssm_groups, f"a divisor of ssm_heads = {spec.ssm_heads}")
    if "mamba2_memory" in used:
        _check_memory(spec, source, fail)
    if "deltanet" in used:
        for key in LINEAR_KEYS:
            if getattr(spec, key) is None:
                raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with a deltanet block")
        if spec.linear_v_heads % spec.linear_k_heads:  # type: ignore[operator]
            raise fail(
                source, "linear_v_heads", spec.linear_v_heads, f"a multiple of linear_k_heads = {spec.linear_k_heads}"
            )
    if "kda" in used:
        for key in LINEAR_KEYS[2:]:
            if getattr(spec, key) is None:
                raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with a kda block")
    if spec.ngram_blocks is not None:
        _check_ngrams(spec, data, source, fail)
    if "mamba" in used:
        for key in ("ssm_inner", "ssm_state", "ssm_dt_rank"):
            if getattr(spec, key) is None:
                raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with a mamba block")


def _check_ngrams(spec: Spec, data: dict[str, Any], source: str, fail: Fail) -> None:
    """Qwen4's n-gram inputs: blocks that exist, a vocabulary and an end-of-sequence id, a vector the heads divide,
    rotary positions or none (the columns' last row is the ids), a convolution of two taps or more."""
    if any(i >= spec.N for i in spec.ngram_blocks or ()):
        raise fail(source, "ngram_blocks", list(spec.ngram_blocks or ()), f"block indices below N = {spec.N}")
    if spec.V is None or spec.ngram_eos is None:
        key, why = ("V", "a vocabulary") if spec.V is None else ("ngram_eos", "the end-of-sequence id")
        raise SpecError(f"{source}: key '{key}': missing, expected {why} with ngram_blocks")
    heads = (spec.ngram_size - 1) * spec.ngram_heads
    if spec.ngram_size < 2 or (spec.ngram_dim or spec.d) % heads:
        expected = f"a multiple of (ngram_size - 1) ngram_heads = {heads}, ngram_size 2 or more"
        raise fail(source, "ngram_dim", spec.ngram_dim or spec.d, expected)
    if spec.positional not in ("rope", "none", "alibi", "relative") or spec.embed_dim or spec.ple_dim:
        raise fail(source, "ngram_blocks", list(spec.ngram_blocks or ()), "rotary positions or none, no embed_dim")
    if spec.ngram_kernel < 2:
        raise fail(source, "ngram_kernel", spec.ngram_kernel, "2 or more taps")
    if "ngram_table" in data:
        raise fail(source, "ngram_table", data["ngram_table"], "no ngram_table by hand (ngram_blocks sets it)")


def _check_memory(spec: Spec, source: str, fail: Fail) -> None:
    """Zamba2's shared blocks: their number and the adapters' rank, blocks of their mixer alone, keys and values of
    every head where the queries' adapter's width is theirs too."""
    for key in MEMORY_KEYS[:2]:
        if getattr(spec, key) is None:
            raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with a mamba2_memory block")
    if spec.feedforward != "none" or spec.norm != "pre":
        key, value = ("feedforward", spec.feedforward) if spec.feedforward != "none" else ("norm", spec.norm)
        raise fail(source, key, value, "feedforward none and norm pre with mamba2_memory blocks (Zamba2's)")
    if spec.mem_qkv_adapters and spec.kv_heads != spec.H:
        why = f"{spec.H} (every head's: the keys' and values' adapters are 2d wide, as the queries')"
        raise fail(source, "G", spec.kv_heads, why)


__all__ = ["check_mixers", "mixers"]
