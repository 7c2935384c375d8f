"""What the GGUF architectures share: an architecture's entry (spec, layout, the converter's changes to undo),
LLaMA's tensor names and spec (the template of the others), the inverse of the converter's Q/K permutation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SpecError
from ..families.gguf_keys import partial_rotary, rotated_share, rows, vocabulary
from ..families.gguf_layout import LLAMA_LAYOUT, Joined, Transform, permute, stacked_experts, unpermute
from ..families.keys import Keys
from ..families.layout import Family
from .header import Header
from .tensors import read_tensor


@dataclass(frozen=True)
class Arch:
    """One GGUF architecture: its spec from the metadata, its tensor layout, the changes to undo per tensor name
    (the part after blk.{i}.), and tensors the file holds that the model has no place for."""

    spec: Callable[[Keys, Header], dict[str, Any]]
    layout: Family
    transforms: dict[str, Transform] = field(default_factory=dict)
    experts: Family | None = None  # the layout when the file's model has experts (Mixtral's files are llama's)
    skipped: tuple[str, ...] = ("rope_freqs.weight",)
    alternatives: tuple[tuple[Callable[[Any], bool], Family], ...] = ()  # other layouts, each for the specs it is for
    redo: dict[str, Transform] = field(default_factory=dict)  # the converter's changes, to write a file
    joined: dict[str, Joined] = field(default_factory=dict)  # tensors newer converters split in pieces
    in_metadata: dict[str, float | None] = field(default_factory=dict)  # block tensors held as metadata keys

    def from_metadata(self, hf_name: str) -> str | None:
        """The metadata key holding the file's block tensor `hf_name` ('blk.3.xielu.alpha_p'), if one does."""
        short = hf_name.split(".", 2)[-1]
        held = hf_name.startswith("blk.") and short in self.in_metadata and self.in_metadata[short] is None
        return short if held else None

    def layout_of(self, spec) -> Family:
        for test, layout in self.alternatives:
            if test(spec):
                return layout
        return self.experts if spec.E and self.experts is not None else self.layout


def llama(c: Keys, header: Header) -> dict[str, Any]:
    """llama (also Mistral's and Llama 3's files; Mistral's window is not in the file, so llama.cpp and tfm run it
    without one): RMSNorm, SwiGLU, rotary, grouped-query heads, a head unless the file has no output.weight (tied);
    Qwen2's q/k/v biases and Qwen3's query/key norms where the file holds them."""
    d, H = c.count("embedding_length"), c.count("attention.head_count")
    G = c.count("attention.head_count_kv", H)
    m = c.count("attention.key_length", None) or d // H
    # (a file of experts alone may hold no dense width: Qwen3.5-MoE's, whose config has no intermediate_size)
    width = "feed_forward_length" if c.has("feed_forward_length") or not c.has("expert_count") else None
    spec: dict[str, Any] = {
        "N": c.count("block_count"),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count(width or "expert_feed_forward_length"),
        "V": vocabulary(c, header),
        "scale": "sqrt",
        "mask": "causal",
        "positional": "rope",
        "norm": "pre",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-5),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "tie_embeddings": "output.weight" not in header.tensors,
    }
    if G != H:
        spec["G"] = G
    spec |= partial_rotary(c, m)
    if c.has("context_length"):
        spec["context"] = c.count("context_length")
    spec |= rope_scaling(c, header, m)
    if "blk.0.attn_q.bias" in header.tensors:  # (Qwen2: q, k, v only)
        spec |= {"attention_bias": True, "out_bias": "blk.0.attn_output.bias" in header.tensors}
    if "blk.0.attn_q_norm.weight" in header.tensors:  # Qwen3's per-head query and key norms
        spec["qk_norm"] = True
    if c.has("expert_count"):  # Mixtral: every block's feedforward E experts of feed_forward_length, the top k
        spec |= {"E": c.count("expert_count"), "k": c.count("expert_used_count")}
    return spec


def latent(c: Keys, header: Header) -> dict[str, Any]:
    """What a file of multi-head latent attention reads as LLaMA's does: the rotary scaling (rope_freqs included) of
    its heads of key_length_mla (older files: key_length). The rest its family's reader reads (families/)."""
    m = c.count("attention.key_length_mla", None) or c.count("attention.key_length")
    return rope_scaling(c, header, m)


def sizes(c: Keys, header: Header, G_default: int | None = None) -> dict[str, Any]:
    """The sizes every architecture reads alike, causal pre-norm, scores scaled by 1/sqrt(m), a head unless the
    file has no output.weight (tied)."""
    d, H = c.count("embedding_length"), c.count("attention.head_count")
    G = c.count("attention.head_count_kv", G_default or H)
    out = {
        "N": c.count("block_count"),
        "H": H,
        "m": c.count("attention.key_length", None) or d // H,
        "d": d,
        "r": c.count("feed_forward_length"),
        "V": vocabulary(c, header),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "pre",
        "tie_embeddings": "output.weight" not in header.tensors,
    }
    if G != H:
        out["G"] = G
    if c.has("context_length"):
        out["context"] = c.count("context_length")
    return out


LLAMA3 = {"rope_low_freq_factor": 1.0, "rope_high_freq_factor": 4.0, "rope_original_max_len": 8192}  # Meta's values
# the (low, high) bands Meta publishes, tried in order: Llama 3.1's, Llama 4's (its factors only 1 or the factor;
# where no pair falls between the bands the two give the same factors, read as Llama 3.1's)
BANDS = ((1.0, 4.0), (1.0, 1.0))


def rope_scaling(c: Keys, header: Header, m: int) -> dict[str, Any]:
    """The rotary scaling the file says: rope.scaling.type linear or yarn with their keys, or (Llama 3.1+) none but
    a rope_freqs.weight tensor of per-pair factors, which the converter computes from Llama 3's formula: read back as
    that formula with Meta's bands and original context (the file holds only the factors; they are checked to be
    what the formula gives, to float32 precision)."""
    kind = c.text("rope.scaling.type", "none")
    if kind == "linear":
        return {"rope_scaling": "linear", "rope_factor": c.number("rope.scaling.factor")}
    if kind == "yarn":
        out: dict[str, Any] = {
            "rope_scaling": "yarn",
            "rope_factor": c.number("rope.scaling.factor"),
            "rope_original_max_len": c.count("rope.scaling.original_context_length"),
        }
        for ours, theirs in (
            ("rope_beta_fast", "yarn_beta_fast"),
            ("rope_beta_slow", "yarn_beta_slow"),
            ("rope_attention_factor", "yarn_attn_factor"),
        ):
            if c.has(f"rope.scaling.{theirs}"):
                out[ours] = c.number(f"rope.scaling.{theirs}")
        return out
    if kind != "none":
        raise c.refuse("rope.scaling.type", kind, "tfm reads GGUF rope scaling linear, yarn, or Llama 3's rope_freqs")
    if "rope_freqs.weight" not in header.tensors:
        return {}

    factors = read_tensor(header, "rope_freqs.weight").astype(np.float64)
    factor, base = float(factors.max()), c.number("rope.freq_base", 10000.0)
    for low, high in BANDS:
        expected = _llama3_factors(base, m, factor, low, high)
        if factors.shape == expected.shape and np.allclose(factors, expected, rtol=1e-6, atol=0):
            bands = {"rope_low_freq_factor": low, "rope_high_freq_factor": high}
            return {"rope_scaling": "llama3", "rope_factor": factor} | LLAMA3 | bands
    raise SpecError(
        f"{header.path}: tensor rope_freqs.weight: factors that are not Llama 3's formula (factor {factor:g}, bands "
        "1 and 4 or 1 and 1, original context 8192): tfm reads no other per-pair factors"
    )


def proportional(c: Keys, header: Header) -> dict[str, Any]:
    """Gemma 4's full layers' rotary as its converter stores it: rope_freqs.weight, a factor per pair of the head
    (key_length / 2), 1 for the pairs that turn and 1e30 (no angle) for the rest: the share of the head that turns
    (rope_fraction), its pairs j and j + m/2 (llama.cpp's neox rotation over the whole head)."""
    m = c.count("attention.key_length")
    if "rope_freqs.weight" not in header.tensors:
        raise SpecError(f"{header.path}: tensor rope_freqs.weight: missing, expected the full layers' pair factors")
    factors = read_tensor(header, "rope_freqs.weight").astype(np.float64)
    turned = int(np.sum(factors == 1.0))
    if factors.shape != (m // 2,) or not np.all(factors[:turned] == 1.0) or not np.all(factors[turned:] >= 1e29):
        why = f"{m // 2} factors of 1 (pairs that turn) then 1e30 (pairs that do not)"
        raise SpecError(f"{header.path}: tensor rope_freqs.weight: expected {why}")
    return {} if turned == m // 2 else {"rope_fraction": rotated_share(2 * turned, m)}


def _llama3_factors(base: float, m: int, factor: float, low: float = 1.0, high: float = 4.0) -> np.ndarray:
    """convert_hf_to_gguf.py's rope_freqs for Llama 3 (LlamaModel.generate_extra_tensors), with the bands `low` and
    `high` (equal bands: no pair between them) and Meta's original context."""
    freqs = 1.0 / base ** (np.arange(0, m, 2) / m)
    wavelength = 2 * np.pi / freqs
    original = LLAMA3["rope_original_max_len"]
    with np.errstate(divide="ignore", invalid="ignore"):  # (equal bands: the blend is never taken)
        smooth = (original / wavelength - low) / (high - low)
        between = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelength < original / high, 1.0, np.where(wavelength > original / low, factor, between))


__all__ = [
    "LLAMA_LAYOUT",
    "Arch",
    "Joined",
    "Transform",
    "latent",
    "llama",
    "permute",
    "proportional",
    "rows",
    "sizes",
    "stacked_experts",
    "unpermute",
    "vocabulary",
]
