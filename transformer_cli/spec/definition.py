"""The model spec: the seed's symbols N, H, m, d, r plus the standard model's variants.

Every key is declared once, as a field of `Spec` with its metadata; the loader validates against those
declarations, so an error always names the file, the key, the value and what was expected.
"""

from __future__ import annotations

import difflib
import math
import sys
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..files import read_bounded
from ..text import escaped, lookalike_hint, shown
from .yaml12 import MAX_DIGITS, TooLong, read_yaml

MAX_SPEC_BYTES = 1 << 20  # a spec is a dozen lines; anything over 1 MiB is not one

SCALES = ("none", "sqrt")
MASKS = ("none", "causal")
POSITIONALS = ("none", "sinusoidal", "learned", "rope", "relative")
ROPE_PAIRINGS = ("half", "interleaved")
ROPE_SCALINGS = ("none", "llama3", "linear", "dynamic", "yarn", "longrope")
NOT_RUN = ("linear", "dynamic", "yarn", "longrope")  # counted and planned (no parameters, no memory); not yet run
NORMS = ("none", "pre", "post")
NORM_TYPES = ("layernorm", "rmsnorm")
FEEDFORWARDS = ("plain", "gated")
ACTIVATIONS = ("relu", "gelu", "gelu_exact", "silu")


LABELS = ("name", "description", "context")  # shown, but a difference in a label is not a difference in the model


def _key(kind: str, doc: str, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"kind": kind, "doc": doc, "choices": choices}


@dataclass(frozen=True)
class Spec:
    """A transformer spec; the defaults of the optional keys give the seed's plain definition."""

    N: int = field(metadata=_key("posint", "number of blocks"))
    H: int = field(metadata=_key("posint", "number of attention heads"))
    m: int = field(metadata=_key("posint", "size of one head (need not be d/H)"))
    d: int = field(metadata=_key("posint", "model size: rows of X, one column per token"))
    r: int = field(metadata=_key("posint", "hidden size of the feedforward network"))
    name: str = field(default="", metadata=_key("str", "a label for tables"))
    description: str = field(default="", metadata=_key("str", "free text"))
    context: int | None = field(
        default=None,
        metadata=_key("posint", "a label: the longest context the model was made for (Hugging Face: "
                      "max_position_embeddings); tfm plan caps what fits at it"),
    )  # fmt: skip
    scale: str | float = field(
        default="none", metadata=_key("scale", "score scale: none (1), sqrt (1/sqrt(m)) or a positive number", SCALES)
    )
    mask: str = field(default="none", metadata=_key("choice", "attention mask", MASKS))
    positional: str = field(
        default="none",
        metadata=_key(
            "choice",
            "positions: added to X (sinusoidal, learned), rotating Q and K (rope), or a learned bias per head on "
            "the scores of each distance bucket (relative: T5)",
            POSITIONALS,
        ),
    )
    max_len: int | None = field(default=None, metadata=_key("posint", "longest sequence (learned positions only)"))
    rope_theta: float = field(default=10000.0, metadata=_key("posfloat", "rotary base: pair j turns t theta^(-2j/rot)"))
    rope_fraction: float = field(
        default=1.0, metadata=_key("fraction", "rotated part of each head: rot = int(m * fraction) dims, even")
    )
    rope_pairing: str = field(
        default="half",
        metadata=_key("choice", "half: dim j with j + rot/2 (LLaMA, NeoX); interleaved: 2j with 2j+1 (GPT-J)",
                      ROPE_PAIRINGS),
    )  # fmt: skip
    rope_scaling: str = field(
        default="none",
        metadata=_key(
            "choice",
            "frequency scaling: llama3 (Llama 3.1) or none; linear, dynamic, yarn and longrope "
            "are counted and planned, not yet run",
            ROPE_SCALINGS,
        ),  # fmt: skip
    )
    rope_factor: float = field(default=8.0, metadata=_key("posfloat", "llama3: low frequencies divided by this"))
    rope_low_freq_factor: float = field(default=1.0, metadata=_key("posfloat", "llama3: wavelength > L / this: scaled"))
    rope_high_freq_factor: float = field(default=4.0, metadata=_key("posfloat", "llama3: wavelength < L / this: kept"))
    rope_original_max_len: int = field(default=8192, metadata=_key("posint", "llama3: L, the original context length"))
    norm: str = field(default="none", metadata=_key("choice", "layer norm placement", NORMS))
    norm_eps: float = field(default=1e-5, metadata=_key("posfloat", "layer norm epsilon"))
    attention_bias: bool = field(default=False, metadata=_key("bool", "biases b_Q, b_K, b_V, b_O"))
    activation: str = field(default="relu", metadata=_key("choice", "feedforward activation", ACTIVATIONS))
    norm_type: str = field(
        default="layernorm",
        metadata=_key("choice", "layernorm: (x - mean) / std * gamma + beta; rmsnorm: x / rms * gamma", NORM_TYPES),
    )
    feedforward: str = field(
        default="plain",
        metadata=_key("choice", "plain: W2 act(W1 X + b1) + b2; gated: W2 (act(W1 X) * (W3 X))", FEEDFORWARDS),
    )
    ff_bias: bool = field(default=True, metadata=_key("bool", "feedforward biases b1, b2 (and b3 when gated)"))
    V: int | None = field(
        default=None, metadata=_key("posint", "vocabulary: token ids in, V logits per column out (embedding E (d, V))")
    )
    tie_embeddings: bool = field(default=False, metadata=_key("bool", "the head is E^T (no head.W); only with V"))
    head_bias: bool = field(default=False, metadata=_key("bool", "a bias head.b (V,) on the logits; only with V"))
    head: bool = field(
        default=True,
        metadata=_key("bool", "an output head: logits out; false gives the final columns (BertModel); only with V"),
    )
    type_vocab: int | None = field(
        default=None, metadata=_key("posint", "token types, embedding.T (d, types); type 0 is added (BERT); with V")
    )
    embed_norm: bool = field(
        default=False, metadata=_key("bool", "a norm of the embedded columns, after positions and types (BERT); with V")
    )
    pooler: bool = field(
        default=False,
        metadata=_key("bool", "BERT's pooler W_p (d, d), b_p: counted, not part of the output (tanh(W_p x_0 + b_p))"),
    )
    embed_scale: str = field(
        default="none", metadata=_key("choice", "embedded columns times sqrt(d) (Gemma); only with V", ("none", "sqrt"))
    )
    parallel: bool = field(
        default=False,
        metadata=_key("bool", "parallel blocks: X + Attn(N1(X)) + FF(N2(X)) (GPT-NeoX, Falcon, Phi-2); pre-norm"),
    )
    shared_norm: bool = field(
        default=False, metadata=_key("bool", "parallel blocks with one norm, N1 = N2 (Falcon-7B, Phi-2)")
    )
    out_bias: bool | None = field(
        default=None,
        metadata=_key(
            "bool",
            "the output projection's bias b_O [default: attention_bias]; false with attention_bias "
            "true gives biases on q, k, v only (Qwen2)",
        ),
    )
    norm_bias: bool = field(default=True, metadata=_key("bool", "layernorm's beta; false: gamma only (OLMo-style)"))
    qk_norm: bool = field(
        default=False,
        metadata=_key(
            "bool",
            "a norm of each query and key head over its m entries, before rotary positions "
            "(Qwen3, OLMo 2): the spec's norm_type, gains (m,) shared by the heads",
        ),
    )
    norm_plus_one: bool = field(
        default=False, metadata=_key("bool", "rmsnorm scales by (1 + gamma), gamma starting at 0 (Gemma)")
    )
    E: int | None = field(
        default=None, metadata=_key("posint", "experts: E feedforwards and a router W_r (E, d) in each block (Mixtral)")
    )
    k: int | None = field(default=None, metadata=_key("posint", "experts per token, the top k of the router; with E"))
    window: int | None = field(
        default=None, metadata=_key("posint", "sliding window: query t sees keys t - w + 1 .. t (Mistral); causal only")
    )
    G: int | None = field(
        default=None,
        metadata=_key("posint", "key/value heads, each shared by H/G query heads (grouped-query; 1: multi-query)"),
    )
    N_enc: int | None = field(
        default=None,
        metadata=_key(
            "posint",
            "encoder blocks: an encoder-decoder, whose N blocks are the decoder's (masked self-attention, "
            "cross-attention to the encoder's output, feedforward)",
        ),
    )
    V_src: int | None = field(
        default=None,
        metadata=_key(
            "posint", "the source's own vocabulary: a separate encoder embedding (d, V_src) [default: E is shared]"
        ),
    )
    cross_H: int | None = field(default=None, metadata=_key("posint", "cross-attention heads [default: H]; with N_enc"))
    cross_m: int | None = field(default=None, metadata=_key("posint", "cross-attention head size [default: m]"))
    cross_bias: bool | None = field(
        default=None, metadata=_key("bool", "cross-attention biases [default: attention_bias]; with N_enc")
    )
    rel_buckets: int = field(default=32, metadata=_key("posint", "relative: distance buckets of the bias table"))
    rel_max_distance: int = field(
        default=128, metadata=_key("posint", "relative: distances from this one on share the last bucket")
    )
    position_offset: int | None = field(
        default=None, metadata=_key("posint", "learned: position t reads column t + offset of P (BART: 2)")
    )
    head_scale: str = field(
        default="none",
        metadata=_key("choice", "the final columns times d^-1/2 before the head (T5, tied); with V", ("none", "sqrt")),
    )

    @property
    def score_scale(self) -> float:
        """The factor that multiplies every attention score before the softmax."""
        if self.scale == "none":
            return 1.0
        if self.scale == "sqrt":
            return 1.0 / math.sqrt(self.m)
        return float(self.scale)

    @property
    def has_out_bias(self) -> bool:
        """b_O: out_bias if the spec sets it, else attention_bias."""
        return self.attention_bias if self.out_bias is None else self.out_bias

    @property
    def cross_heads(self) -> int:
        return self.cross_H or self.H

    @property
    def cross_size(self) -> int:
        return self.cross_m or self.m

    @property
    def has_cross_bias(self) -> bool:
        return self.attention_bias if self.cross_bias is None else self.cross_bias

    @property
    def kv_heads(self) -> int:
        """G: the key/value heads (H unless the spec sets G)."""
        return self.G if self.G is not None else self.H

    @property
    def rotated_dims(self) -> int:
        """Rotary positions turn the first int(m * rope_fraction) dims of each query and key head."""
        return int(self.m * self.rope_fraction)

    @property
    def label(self) -> str:
        return self.name or "unnamed"

    def summary(self) -> str:
        """One line for titles: 'gpt2-small: N=12, H=12, ..., norm=pre'."""
        keys = {k: v for k, v in self.to_dict().items() if k not in LABELS}
        return f"{escaped(self.label)}: " + ", ".join(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in keys.items()
        )

    def variant_keys(self) -> dict[str, Any]:
        """The optional model keys that differ from the seed's plain definition."""
        plain = Spec(N=1, H=1, m=1, d=1, r=1)
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in REQUIRED + LABELS and getattr(self, f.name) != getattr(plain, f.name)
        }

    def model_keys(self) -> dict[str, Any]:
        """What changes the model's function: the keys without the labels, the scale as the factor it applies."""
        keys = {k: v for k, v in self.to_dict().items() if k not in LABELS}
        return keys | {"scale": self.score_scale, "G": self.kv_heads}

    def differing_keys(self, other: Spec) -> list[str]:
        """The model keys on which two specs differ (labels aside), sorted: [] for the same model."""
        mine, theirs = self.model_keys(), other.model_keys()
        return sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))

    def to_dict(self) -> dict[str, Any]:
        """The spec as the mapping a YAML file would hold (optional keys only where set)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in REQUIRED}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        if self.context:
            out["context"] = self.context
        out.update(self.variant_keys())
        return out


FIELDS = {f.name: f for f in fields(Spec)}
REQUIRED = tuple(name for name, f in FIELDS.items() if f.default is MISSING)

ROPE_KEYS = ("rope_theta", "rope_fraction", "rope_pairing", "rope_scaling")
LLAMA3_KEYS = ("rope_factor", "rope_low_freq_factor", "rope_high_freq_factor", "rope_original_max_len")

# Keys that go with a value of another key: (other key, its values, required then). The loader and the
# JSON Schema (schema.py) both read this table.
DEPENDENT = {
    "max_len": ("positional", ("learned",), True),
    **{key: ("positional", ("rope",), False) for key in ROPE_KEYS},
    **{key: ("rope_scaling", ("llama3",), False) for key in LLAMA3_KEYS},
    "rel_buckets": ("positional", ("relative",), False),
    "rel_max_distance": ("positional", ("relative",), False),
    "position_offset": ("positional", ("learned",), False),
    "norm_eps": ("norm", ("pre", "post"), False),
    "norm_type": ("norm", ("pre", "post"), False),
}

DEFAULT_SPEC = Spec(N=2, H=4, m=8, d=32, r=64, name="default", description="built-in default spec")


def _expected(name: str) -> str:
    meta = FIELDS[name].metadata
    kind, choices = meta["kind"], meta["choices"]
    return {
        "posint": "a positive integer",
        "posfloat": "a positive number",
        "fraction": "a number in (0, 1]",
        "bool": "true or false",
        "str": "a string",
        "choice": "one of " + ", ".join(choices),
        "scale": "none, sqrt or a positive number",
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
    return (isinstance(value, str) and value in meta["choices"]) or (_is_number(value) and value > 0)


def _declared(name: str, value: Any) -> Any:
    """The value as its key declares it: 64.0 is the integer 64 (as in JSON Schema), a numeric scale a float."""
    kind = FIELDS[name].metadata["kind"]
    exact = isinstance(value, float) and value.is_integer() and abs(value) <= EXACT_FLOAT
    if kind == "posint" and exact:
        return int(value)
    if kind == "scale" and _is_number(value):
        return float(value)
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
    numeric = kind in ("posint", "posfloat", "fraction", "scale")
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
        if not _valid(key, value):
            raise _fail(source, key, data[key], _expectation(key, data[key]))
    if "name" not in values and source.endswith((".yaml", ".yml", ".json")):
        values["name"] = Path(source).stem
    spec = Spec(**values)
    _check_combinations(spec, data, source)
    return spec


def _check_combinations(spec: Spec, data: dict[str, Any], source: str) -> None:
    if "out_bias" in data and not spec.attention_bias:
        raise _fail(source, "out_bias", data["out_bias"], "no out_bias unless attention_bias is true")
    if "norm_bias" in data and spec.norm_type != "layernorm":
        raise _fail(source, "norm_bias", data["norm_bias"], "no norm_bias unless norm_type is layernorm")
    if spec.norm_plus_one and spec.norm_type != "rmsnorm":
        raise _fail(source, "norm_plus_one", True, "norm_type: rmsnorm with norm_plus_one (x / rms * (1 + gamma))")
    if (spec.E is None) != (spec.k is None):
        key, other = ("E", "k") if spec.E is None else ("k", "E")
        raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with {other}")
    if spec.E is not None and spec.k > spec.E:
        raise _fail(source, "k", spec.k, f"at most E = {spec.E} (the experts each token can choose from)")
    if spec.window is not None and spec.mask != "causal":
        raise _fail(
            source, "window", spec.window, "mask: causal with a sliding window (query t sees keys t - w + 1 .. t)"
        )
    if spec.parallel and spec.norm != "pre":
        raise _fail(source, "parallel", True, "norm: pre with parallel blocks (both sublayers read the block's input)")
    if "shared_norm" in data and not spec.parallel:
        raise _fail(source, "shared_norm", data["shared_norm"], "no shared_norm unless parallel is true")
    if spec.V and not spec.head and (spec.tie_embeddings or spec.head_bias):
        raise _fail(source, "head", False, "a head for tie_embeddings or head_bias")
    if "V_src" in data and (spec.N_enc is None or spec.V is None):
        raise _fail(
            source, "V_src", data["V_src"], "no V_src unless the spec has an encoder (N_enc) and a vocabulary V"
        )
    for key in ("cross_H", "cross_m", "cross_bias"):
        if key in data and spec.N_enc is None:
            raise _fail(source, key, data[key], f"no {key} unless the spec has an encoder (N_enc)")
    if spec.N_enc is not None:
        _check_encoder_decoder(spec, data, source)
    for key in ("tie_embeddings", "head_bias", "embed_scale", "head", "type_vocab", "embed_norm", "pooler",
                "head_scale"):  # fmt: skip
        if key in data and spec.V is None:
            raise _fail(source, key, data[key], f"no {key} unless the spec has a vocabulary V")
    if spec.H % spec.kv_heads:
        raise _fail(source, "G", data["G"], f"a divisor of H = {spec.H} (each key/value head serves H/G query heads)")
    for key, (other, values, required) in DEPENDENT.items():
        allowed = getattr(spec, other) in values
        if allowed and required and key not in data:
            raise SpecError(f"{source}: key '{key}': missing, expected {_expected(key)} when {other} is {values[0]}")
        if not allowed and key in data:
            raise _fail(source, key, data[key], f"no {key} unless {other} is {' or '.join(values)}")
    if spec.positional == "rope":
        _check_rope(spec, source)
    if spec.positional == "relative":
        _check_relative(spec, source)


def _check_relative(spec: Spec, source: str) -> None:
    """T5's buckets: each direction a stack looks in needs an exact bucket and a logarithmic one (fewer divide by
    zero, in transformers as here), and the farthest distance must lie past the exact ones."""
    unmasked = bool(spec.N_enc) or spec.mask != "causal"
    least = 4 if unmasked else 2
    if spec.rel_buckets < least:
        why = (
            "an unmasked stack splits them between keys before and after the query, each half"
            if unmasked
            else "a causal stack"
        )
        raise _fail(source, "rel_buckets", spec.rel_buckets,
                    f"at least {least} ({why} needing an exact bucket and a logarithmic one)")  # fmt: skip
    if spec.rel_max_distance <= spec.rel_buckets // 2:
        raise _fail(source, "rel_max_distance", spec.rel_max_distance, "more than rel_buckets / 2 (the exact buckets)")


def _check_encoder_decoder(spec: Spec, data: dict[str, Any], source: str) -> None:
    """An encoder-decoder's decoder masks its self-attention; the features tfm has for one stack only are refused."""
    if spec.mask != "causal":
        raise _fail(source, "N_enc", spec.N_enc, "mask: causal with an encoder (the decoder's self-attention)")
    for key in ("parallel", "E", "window", "type_vocab", "pooler"):
        if key in data and data[key] not in (None, False):
            raise _fail(source, key, data[key], f"no {key} in an encoder-decoder (N_enc)")


def _check_rope(spec: Spec, source: str) -> None:
    """What the rope keys' types cannot say: whole pairs of rotated dims, and llama3's two bands in order."""
    rot = spec.rotated_dims
    if rot < 2 or rot % 2:
        raise SpecError(
            f"{source}: keys 'm', 'rope_fraction': int(m * rope_fraction) = int({spec.m} * {spec.rope_fraction!r})"
            f" = {rot} rotated dims per head, expected an even number of at least 2"
        )
    if spec.rope_scaling == "llama3" and not spec.rope_high_freq_factor > spec.rope_low_freq_factor:
        raise SpecError(
            f"{source}: key 'rope_high_freq_factor': got {spec.rope_high_freq_factor!r}, expected more than "
            f"rope_low_freq_factor = {spec.rope_low_freq_factor!r}"
        )


def _refuse_other_formats(path: Path, head: bytes) -> None:
    """A weights or array file given where a spec was expected (by its extension or its first bytes)."""
    safetensors = len(head) > 8 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 1 << 32
    if path.suffix.lower() in (".safetensors", ".npz") or safetensors or head.startswith(b"PK\x03\x04"):
        raise SpecError(f"{path}: is a weights file, expected a YAML spec (pass it with -w)")
    if path.suffix.lower() == ".npy" or head.startswith(b"\x93NUMPY"):
        raise SpecError(f"{path}: is a .npy array, expected a YAML spec (pass an input with -i)")


def _read_text(path: Path) -> str:
    if not path.exists() and not path.is_symlink():
        raise SpecError(f"{path}: no such spec file")
    raw = read_bounded(path, MAX_SPEC_BYTES, "a YAML spec file", SpecError)  # a regular file, never a FIFO
    _refuse_other_formats(path, raw[:16])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: byte {exc.start} is not UTF-8; expected a UTF-8 text file") from None


def load_spec(path: str | Path | None) -> Spec:
    """Load and validate a YAML spec file (read as YAML 1.2, see yaml12.py); `None` gives the built-in default."""
    if path is None:
        return DEFAULT_SPEC
    path = Path(path)
    return spec_from_mapping(read_yaml(_read_text(path), str(path)), str(path))


def check_length(spec: Spec, n: int, where: str) -> None:
    """Refuse a sequence longer than the spec's learned positions cover (every command that takes n asks here)."""
    if spec.positional == "learned" and spec.max_len is not None and n > spec.max_len:
        raise SpecError(
            f"{where}: n = {n}, expected at most max_len = {spec.max_len} (learned positions of {spec.label})"
        )


__all__ = ["DEFAULT_SPEC", "DEPENDENT", "FIELDS", "REQUIRED", "Spec", "check_length", "load_spec", "spec_from_mapping"]
