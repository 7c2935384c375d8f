"""A parsed spec document checked against the keys `Spec` declares: each key's type, then the combinations.

Every error names the source, the key, the value and what was expected, in one line.
"""

from __future__ import annotations

import difflib
import math
import sys
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..text import lookalike_hint, shown
from .choices import ATTENTIONS, DENSE, FULL, NO_FEEDFORWARD, RELATIVE, ROUTED, SLIDING
from .definition import FIELDS, REQUIRED, Spec
from .dependent import DEPENDENT, read_elsewhere
from .stacks import encoder_spec, kind_of
from .validate_altup import check_altup
from .validate_experts import check_experts
from .validate_mixers import check_mixers, mixers
from .validate_rope import check_llama4, check_relative, check_rope
from .yaml12 import MAX_DIGITS, TooLong


def _expected(name: str) -> str:
    meta = FIELDS[name].metadata
    kind, choices = meta["kind"], meta["choices"]
    return {
        "posint": "a positive integer",
        "index": "a non-negative integer",
        "posfloat": "a positive number",
        "fraction": "a number in (0, 1]",
        "bool": "true or false",
        "str": "a string",
        "choice": "one of " + ", ".join(choices),
        "scale": "none, sqrt or a positive number",
        "floats": "a list of positive numbers",
        "layers": f"a list of {' or '.join(choices)}, one per block, or a shorter pattern repeated over the blocks",
        "stack": f"a mapping of some of {', '.join(choices)}",
        "sizes": "a list of positive integers, one per block, or a shorter pattern repeated over the blocks",
        "levels": "a list of numbers in [0, 1), one per block, or a shorter pattern repeated over the blocks",
        "blocks": "a list of distinct block indices (0, 1, ...)",
    }[kind]


EXACT_FLOAT = 2**53  # up to here every integer is exactly a float, so 64.0 can only mean 64
TOO_LONG = 10**MAX_DIGITS  # the smallest integer of MAX_DIGITS + 1 digits


def _digits(value: int) -> int:
    """Decimal digits of abs(value), without str() (refused by Python past 4,300 digits)."""
    value = abs(value)
    digits = max(1, int((value.bit_length() - 1) * math.log10(2)) + 1)
    return digits + (value >= 10**digits)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < TOO_LONG


def _is_number(value: Any) -> bool:
    """A finite number that fits a float (the model computes in floats)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return _is_int(value) and abs(value) <= sys.float_info.max


def _is_text(value: Any) -> bool:
    """A string that is text: no lone surrogate (a JSON or YAML escape such as \\ud800 can make one)."""
    return isinstance(value, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)


def _valid(name: str, value: Any) -> bool:
    meta = FIELDS[name].metadata
    kind = meta["kind"]
    if kind == "posint":
        return _is_int(value) and value > 0
    if kind == "index":
        return _is_int(value) and value >= 0
    if kind == "posfloat":
        return _is_number(value) and value > 0
    if kind == "fraction":
        return _is_number(value) and 0 < value <= 1
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return _is_text(value)
    if kind == "choice":
        return isinstance(value, str) and value in meta["choices"]
    if kind == "floats":
        return isinstance(value, (list, tuple)) and len(value) > 0 and all(_is_number(v) and v > 0 for v in value)
    if kind in ("sizes", "levels"):
        fits = (lambda v: _is_int(v) and v > 0) if kind == "sizes" else (lambda v: _is_number(v) and 0 <= v < 1)
        return isinstance(value, (list, tuple)) and len(value) > 0 and all(fits(v) for v in value)
    if kind == "blocks":  # (distinct block indices)
        ints = isinstance(value, (list, tuple)) and all(_is_int(v) and v >= 0 for v in value)
        return ints and len(set(value)) == len(value)
    if kind == "stack":
        return isinstance(value, tuple) and len(value) > 0 and all(_valid(k, v) for k, v in value)
    if kind == "layers":
        return (
            isinstance(value, (list, tuple))
            and len(value) > 0
            and all(isinstance(v, str) and v in meta["choices"] for v in value)
        )
    return (isinstance(value, str) and value in meta["choices"]) or (_is_number(value) and value > 0)


def _declared(name: str, value: Any) -> Any:
    """The value as its key declares it: 64.0 is the integer 64 (as in JSON Schema), a numeric scale a float."""
    kind = FIELDS[name].metadata["kind"]
    exact = isinstance(value, float) and value.is_integer() and abs(value) <= EXACT_FLOAT
    if kind in ("posint", "index") and exact:
        return int(value)
    if kind == "scale" and _is_number(value):
        return float(value)
    if kind in ("layers", "blocks") and isinstance(value, list):
        return tuple(value)
    if kind == "stack" and isinstance(value, dict):  # (key, value) pairs in the order the keys are declared
        keys = FIELDS[name].metadata["choices"]
        return tuple((k, _declared(k, value[k])) for k in keys if k in value) if set(value) <= set(keys) else value
    if kind in ("floats", "levels") and isinstance(value, (list, tuple)) and all(map(_is_number, value)):
        return tuple(float(v) for v in value)
    if kind == "sizes" and isinstance(value, list):
        return tuple(int(v) if isinstance(v, float) and v.is_integer() else v for v in value)
    return value


def _shown_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]  # as YAML spells them
    if isinstance(value, int) and abs(value) >= TOO_LONG:
        return repr(TooLong(_digits(value)))
    if isinstance(value, str):
        return f"'{shown(value)}'"
    return shown(repr(value))


def _expectation(name: str, value: Any) -> str:
    """What the key expects, with the reason where the value looks right but is not."""
    expected, kind = _expected(name), FIELDS[name].metadata["kind"]
    numeric = kind in ("posint", "index", "posfloat", "fraction", "scale")
    if numeric and isinstance(value, (TooLong, int)) and not isinstance(value, bool) and not _is_int(value):
        return f"{expected} of at most {MAX_DIGITS:,} digits"
    if kind == "posint" and isinstance(value, float) and value.is_integer() and abs(value) > EXACT_FLOAT:
        return f"{expected} (a float this large is not exact: write its digits)"
    if isinstance(value, str) and not _is_text(value):
        odd = next(c for c in value if 0xD800 <= ord(c) <= 0xDFFF)
        return f"{expected} of characters, and a lone surrogate (U+{ord(odd):04X}) is not one"
    if kind == "bool" and value in ("yes", "no", "on", "off", "y", "n"):
        return f"{expected} (YAML 1.2 reads {value} as a string)"
    return expected


def _fail(source: str, key: str, value: Any, expected: str) -> SpecError:
    return SpecError(f"{source}: key '{key}': got {_shown_value(value)}, expected {expected}")


bad_key = _fail  # the one-line error a kind's own check (a component's `check_keys`) raises


def _unknown_key(source: str, key: Any) -> SpecError:
    text = key if isinstance(key, str) else _shown_value(key)
    hint = lookalike_hint(text, list(FIELDS)) if isinstance(key, str) else ""
    if not hint:
        close = difflib.get_close_matches(text, list(FIELDS), n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
    known = "" if hint else f"; known keys: {', '.join(FIELDS)}"  # the whole list only when no key is close
    return SpecError(f"{source}: unknown key '{shown(text)}'{hint}{known}")


def spec_from_mapping(data: Any, source: str = "spec") -> Spec:
    """Validate a parsed YAML document and build the Spec; `source` names it in errors."""
    if not isinstance(data, dict):
        kind = "an empty document" if data is None else f"a {type(data).__name__}"
        raise SpecError(f"{source}: expected a mapping of keys (N, H, m, d, r, ...), got {kind}")
    for key in data:
        if not isinstance(key, str) or key not in FIELDS:
            raise _unknown_key(source, key)
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise SpecError(f"{source}: missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    values = {key: _declared(key, value) for key, value in data.items()}
    for key, value in values.items():
        if FIELDS[key].metadata["kind"] == "stack" and isinstance(value, tuple):  # its own keys named in errors
            for sub, given in value:
                if not _valid(sub, given):
                    raise _fail(source, f"{key}.{sub}", data[key][sub], _expectation(sub, data[key][sub]))
        if not _valid(key, value):
            raise _fail(source, key, data[key], _expectation(key, data[key]))
    if "name" not in values and source.endswith((".yaml", ".yml", ".json")):
        values["name"] = Path(source).stem
    spec = Spec(**values)
    _check_combinations(spec, data, source)
    return spec


def _check_combinations(spec: Spec, data: dict[str, Any], source: str) -> None:
    if data.get("out_bias") is False and not spec.attention_bias:
        raise _fail(source, "out_bias", False, "no out_bias: false unless attention_bias is true (no bias to drop)")
    if "norm_bias" in data and spec.norm_type != "layernorm":
        raise _fail(source, "norm_bias", data["norm_bias"], "no norm_bias unless norm_type is layernorm")
    if spec.norm_plus_one and not spec.norm_affine:
        raise _fail(source, "norm_plus_one", True, "the norms' gains to scale by 1 + gamma (norm_affine is false)")
    if spec.norm_plus_one and spec.norm == "none" and not spec.final_norm and spec.hc_form != "gated":  # (its own)
        raise _fail(source, "norm_plus_one", True, "a norm to scale by 1 + gamma (norm is none)")
    check_experts(spec, data, source, _fail)
    check_altup(spec, data, source, _fail)
    check_mixers(spec, data, source, _fail)
    if "qk_norm_over" in data and not spec.qk_norm:
        raise _fail(source, "qk_norm_over", data["qk_norm_over"], "no qk_norm_over without qk_norm")
    check_llama4(spec, data, source, _fail, _expected)
    _check_layers(spec, data, source)
    if spec.parallel and spec.norm != "pre":
        raise _fail(source, "parallel", True, "norm: pre with parallel blocks (both sublayers read the block's input)")
    if "shared_norm" in data and not spec.parallel:
        raise _fail(source, "shared_norm", data["shared_norm"], "no shared_norm unless parallel is true")
    if (
        spec.V
        and not spec.head
        and (spec.tie_embeddings or spec.head_bias or spec.logit_softcap or spec.logit_scale != 1.0)
    ):
        raise _fail(source, "head", False, "a head for tie_embeddings, head_bias, logit_scale or logit_softcap")
    if spec.V and spec.embed_dim and not spec.head and not spec.embed_project:
        raise _fail(source, "embed_dim", spec.embed_dim, "no embed_dim without a head (its projection out feeds it)")
    if not spec.first_attn_norm and (spec.norm != "pre" or spec.block_groups or spec.N_enc):
        raise _fail(source, "first_attn_norm", False, "norm: pre, one stack, no block_groups (block 0 its own)")
    if spec.block_groups is not None and spec.block_groups > spec.N:
        raise _fail(source, "block_groups", spec.block_groups, f"at most N = {spec.N} (the blocks that share weights)")
    for key in ("attention_layers", "feedforward_layers", "positional_layers"):
        if spec.block_groups is not None and key in data:
            raise _fail(
                source, "block_groups", spec.block_groups, f"blocks alike (no {key}) where blocks share weights"
            )
    if spec.head_transform != "none" and (not spec.V or not spec.head or spec.embed_dim or spec.norm == "none"):
        raise _fail(source, "head_transform", spec.head_transform, "V, a head, a norm and no embed_dim")
    if spec.V and spec.embed_project and (not spec.embed_dim or spec.head):
        raise _fail(source, "embed_project", True, "embed_dim and head: false (the head would read d, not d_e)")
    if "V_src" in data and (spec.N_enc is None or spec.V is None):
        raise _fail(
            source, "V_src", data["V_src"], "no V_src unless the spec has an encoder (N_enc) and a vocabulary V"
        )
    for key in ("cross_H", "cross_m", "cross_G", "cross_bias", "encoder"):
        if key in data and spec.N_enc is None:
            raise _fail(source, key, data[key], f"no {key} unless the spec has an encoder (N_enc)")
    if spec.N_enc is not None:
        _check_encoder_decoder(spec, data, source)
    for key in (
        "tie_embeddings",
        "head_bias",
        "embed_scale",
        "head",
        "type_vocab",
        "embed_norm",
        "pooler",
        "head_scale",
        "pad_id",
        "logit_softcap",
        "logit_scale",
        "embed_dim",
        "embed_project",
    ):
        if key in data and spec.V is None:
            raise _fail(source, key, data[key], f"no {key} unless the spec has a vocabulary V")
    if spec.H % spec.kv_heads:
        raise _fail(source, "G", data["G"], f"a divisor of H = {spec.H} (each key/value head serves H/G query heads)")
    for key, (other, values, required) in DEPENDENT.items():
        allowed = getattr(spec, other) in values or read_elsewhere(spec, key)
        if allowed and required and key not in data:
            raise SpecError(f"{source}: key '{key}': missing, expected {_expected(key)} when {other} is {values[0]}")
        if not allowed and key in data:
            raise _fail(source, key, data[key], f"no {key} unless {other} is {' or '.join(values)}")
    for key in ("attn_gate_fn", "attn_gate_per_head"):
        if key in data and not spec.attn_gate:
            raise _fail(source, key, data[key], f"no {key} without attn_gate")
    ATTENTIONS[spec.attention].check_keys(spec, data, source)  # what the kind needs of the other keys
    if spec.positional == "rope":
        check_rope(spec, source, _expected)
    if spec.positional in RELATIVE:
        check_relative(spec, source, _fail)
    if spec.positional == "disentangled" and (spec.kv_heads != spec.H or spec.N_enc or spec.mask == "causal"):
        raise _fail(source, "positional", "disentangled", "G = H, one stack, unmasked (DeBERTa's encoder)")
    if spec.positional == "disentangled" and not 2 <= spec.rel_buckets // 2 + 1 < spec.rel_max_distance:
        raise _fail(
            source, "rel_max_distance", spec.rel_max_distance, "more than rel_buckets / 2 + 1, rel_buckets >= 2"
        )


def _check_shared(spec: Spec, data: dict[str, Any], source: str) -> None:
    """kv_shared: fewer than N blocks, standard attention, each sharing block's kind (full or sliding) with a block of
    its own keys and values before them; kv_reused is each block's, not a key to set."""
    if data.get("kv_reused"):
        raise _fail(source, "kv_reused", True, "no kv_reused by hand (kv_shared sets it on the blocks that share)")
    if "kv_shared_r" in data and spec.kv_shared is None:
        raise _fail(source, "kv_shared_r", data["kv_shared_r"], "no kv_shared_r without kv_shared")
    S = spec.kv_shared
    if S is None:
        return
    if S >= spec.N or spec.attention != "standard" or spec.N_enc is not None:
        raise _fail(source, "kv_shared", S, f"below N = {spec.N}, with standard attention in one stack")
    kinds = [spec.window is not None and kind_of(spec.attention_layers, i, SLIDING) == SLIDING for i in range(spec.N)]
    if not set(kinds[spec.N - S :]) <= set(kinds[: spec.N - S]):
        raise _fail(source, "kv_shared", S, "a block of each sharing block's kind (full, sliding) before them")


def _check_layers(spec: Spec, data: dict[str, Any], source: str) -> None:
    """Per-layer kinds: at most one per block, with what they choose between, and not all of the other kind."""
    for key, needs, other in (("attention_layers", "window", FULL), ("feedforward_layers", "E", DENSE)):
        if key not in data:
            continue
        kinds = data[key]
        # (blocks without a feedforward beside dense ones, none routed: Nemotron-H's without experts)
        unrouted = key == "feedforward_layers" and NO_FEEDFORWARD in kinds and ROUTED not in kinds
        if getattr(spec, needs) is None and not unrouted:
            raise _fail(source, key, kinds, f"no {key} without {needs} (what its kinds choose between)")
        if unrouted and spec.E is not None:
            raise _fail(source, key, kinds, "some routed block (with no block routed, drop E and k)")
        if len(kinds) > spec.N:
            raise _fail(source, key, kinds, f"at most N = {spec.N} kinds (one per block)")
        if set(kinds) == {other}:
            kind = FIELDS[key].metadata["choices"][0]
            raise _fail(source, key, kinds, f"some {kind} block (with every block {other}, drop {needs} and {key})")
    if "positional_layers" in data and spec.positional != "rope":
        kinds = data["positional_layers"]
        raise _fail(source, "positional_layers", kinds, "no positional_layers without positional rope")
    if "positional_layers" in data and len(data["positional_layers"]) > spec.N:
        raise _fail(
            source, "positional_layers", data["positional_layers"], f"at most N = {spec.N} kinds (one per block)"
        )
    _check_shared(spec, data, source)
    if spec.local_G is not None and spec.H % spec.local_G:
        raise _fail(source, "local_G", spec.local_G, f"a divisor of H = {spec.H}")
    own = ("rope_local_theta",) if "shared_kv" in mixers(spec) else ()  # (DeepSeek-V4's sliding blocks' base too)
    for key in ("rope_local_theta", "rope_local_fraction", "local_G", "local_sinks", "full_m"):
        if key in data and spec.attention_layers is None and key not in own:
            raise _fail(source, key, data[key], f"no {key} without attention_layers (sliding blocks beside full ones)")
    if "attention_layers" in data and spec.positional in RELATIVE:
        raise _fail(
            source,
            "attention_layers",
            data["attention_layers"],
            "no attention_layers with relative positions (their bias is counted over one window)",
        )


def _check_encoder_decoder(spec: Spec, data: dict[str, Any], source: str) -> None:
    """An encoder-decoder's decoder masks its self-attention; the features tfm has for one stack only are refused;
    the encoder's own keys make a stack of their own (its heads grouped, its kinds with a window)."""
    if spec.mask != "causal":
        raise _fail(source, "N_enc", spec.N_enc, "mask: causal with an encoder (the decoder's self-attention)")
    if spec.norm == "output":
        raise _fail(source, "norm", spec.norm, "pre, post, sandwich or none in an encoder-decoder (N_enc)")
    if spec.cross_heads % spec.cross_kv_heads:
        raise _fail(source, "cross_G", spec.cross_G, f"a divisor of the {spec.cross_heads} cross-attention heads")
    enc, own = encoder_spec(spec), dict(spec.encoder or ())
    if enc.H % enc.kv_heads:
        raise _fail(source, "encoder.G", enc.kv_heads, f"a divisor of the encoder's H = {enc.H}")
    if enc.d != spec.d and not spec.V_src and spec.V:
        raise _fail(source, "encoder.d", enc.d, f"d = {spec.d} unless the source has its own embedding (V_src)")
    kinds = own.get("attention_layers")
    sliding = set(kinds or ()) != {FULL}  # (all full: the encoder without the decoder's window)
    if kinds is not None and ((enc.window is None and sliding) or len(kinds) > enc.N):
        why = f"at most N_enc = {enc.N} kinds, a window for the sliding ones (the encoder's or the decoder's)"
        raise _fail(source, "encoder.attention_layers", list(kinds), why)
    if spec.positional == "alibi":
        raise _fail(source, "positional", "alibi", "none, sinusoidal, learned, rope or relative in an encoder-decoder")
    for key in (
        "parallel",
        "E",
        "type_vocab",
        "pooler",
        "embed_dim",
        "embed_project",
        "block_groups",
        "head_transform",
    ):
        if key in data and data[key] not in (None, False, "none"):
            raise _fail(source, key, data[key], f"no {key} in an encoder-decoder (N_enc)")


__all__ = ["spec_from_mapping"]
