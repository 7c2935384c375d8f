"""The GGML type llama-quantize gives each tensor of a GGUF file, for every file type it offers: a port of
src/llama-quant.cpp (llama.cpp as llama-cpp-python 0.3.36 vendors it: llama_tensor_get_type, its _impl, the
tensor categories, the counters and tensor_type_fallback), without overrides, --pure or --output-tensor-type.

The tensors are visited as llama.cpp visits them (by block, the others first, then by name): the attn_v-like tensors
(attn_v, attn_qkv, attn_kv_b) are counted in that order (use_more_bits(i, n) of their own count), the feedforward
tensors by their order among their kind, or by their block where the model has experts. An importance matrix
changes a few rules; the plan assumes one where the file type cannot be made without it (the i-quants of 3 bits and
fewer, Q2_K_S), and none otherwise (as llama-quantize runs by default)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# file type -> its default GGML type (llama_ftype_get_default_type)
FILE_TYPES = {
    "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1", "q8_0": "Q8_0", "f16": "F16", "bf16": "BF16",
    "mxfp4_moe": "MXFP4", "q2_k": "Q2_K", "q2_k_s": "Q2_K", "iq3_xs": "IQ3_S", "q3_k_s": "Q3_K", "q3_k_m": "Q3_K",
    "q3_k_l": "Q3_K", "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K", "q6_k": "Q6_K",
    "tq1_0": "TQ1_0", "tq2_0": "TQ2_0", "iq2_xxs": "IQ2_XXS", "iq2_xs": "IQ2_XS", "iq2_s": "IQ2_XS", "iq2_m": "IQ2_S",
    "iq3_xxs": "IQ3_XXS", "iq1_s": "IQ1_S", "iq1_m": "IQ1_M", "iq4_nl": "IQ4_NL", "iq4_xs": "IQ4_XS", "iq3_s": "IQ3_S",
    "iq3_m": "IQ3_S",
}  # fmt: skip
NEEDS_IMATRIX = ("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq3_xxs", "iq3_xs", "q2_k_s")
LOW_IQ = ("iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m")  # (their own rules for attn_v, ffn_down, ...)
FALLBACK = {  # tensor_type_fallback: a type whose blocks do not fit a row -> one of 32
    **dict.fromkeys(("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS"), "IQ4_NL"),
    **dict.fromkeys(("Q2_K", "Q3_K", "TQ1_0", "TQ2_0"), "Q4_0"),
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
KEPT: tuple[str, ...] = (
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
)
KEPT += ("ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "attn_rel_b.weight")
KEPT += tuple(
    f"time_mix_{x}.weight" for x in ("first", "w0", "w1", "w2", "v0", "v1", "v2", "a0", "a1", "a2", "g1", "g2")
)
KEPT += ("time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight")  # (RWKV's)
KEPT_NAMES = ("position_embd.weight", "token_types.weight")


@dataclass(frozen=True)
class Model:
    """What llama-quantize reads of the model: whether its architecture takes Falcon's rules, its blocks, query heads
    per key head, experts, and whether it is llama.cpp's 70B type (80 blocks of grouped keys). (GLM-5-Next's own
    rule, its query projections kept at Q8_0 at least, is not here: tfm writes no file of its architecture.)"""

    falcon: bool
    n_layer: int
    n_gqa: int
    n_expert: int = 0
    is_70b: bool = False


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the blocks that get more bits: the first and last eighth, and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def category(name: str) -> str:
    """tensor_get_category: output, token_embd, attn_qkv, attn_kv_b, attn_v, attn_k, attn_q, attn_output, ffn_up,
    ffn_gate, ffn_down or other."""
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    for kind in ("attn_qkv.weight", "attn_kv_b.weight", "attn_v.weight", "attn_k.weight", "attn_q.weight"):
        if kind in name:
            return kind.removesuffix(".weight")
    if "attn_output.weight" in name:
        return "attn_output"
    return next((kind for kind in ("ffn_up", "ffn_gate", "ffn_down") if kind in name), "other")


def quantised(name: str, shape: tuple[int, ...]) -> bool:
    """tensor_allows_quantization: 2-D and 3-D weights, not norms, routers, positions, small convolutions."""
    if len(shape) < 2 or not name.endswith("weight") or name in KEPT_NAMES:
        return False
    return not any(k in name for k in KEPT)


def visiting_order(names: list[str]) -> list[str]:
    """llama.cpp's order (weight_name_comparer): by block number, the tensors outside the blocks first, then by name."""

    def key(name: str) -> tuple[int, str]:
        found = re.match(r"blk\.(\d+)\.", name)
        return (int(found[1]) if found else -1, name)

    return sorted(names, key=key)


def file_types(tensors: dict[str, tuple[int, ...]], ftype: str, model: Model, imatrix: bool | None = None) -> dict:
    """Each tensor's GGML type (None: kept in the source's type) in a file of `ftype`, the tensors' shapes numpy's
    (rows on the last axis); `imatrix` None: as the file type needs one (NEEDS_IMATRIX)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    imatrix = ftype in NEEDS_IMATRIX if imatrix is None else imatrix
    default = FILE_TYPES[ftype]
    quantises = default not in ("F16", "BF16", "F32")
    names = visiting_order(list(tensors))
    tied = "output.weight" not in tensors
    counted = {"attn_v": 0, "ffn_down": 0, "ffn_gate": 0, "ffn_up": 0}
    total_v = sum(1 for n in names if category(n) in ("attn_v", "attn_qkv", "attn_kv_b"))
    out: dict[str, str | None] = {}
    for name in names:
        shape = tensors[name]
        if not quantised(name, shape):
            out[name] = None
            continue
        kind = default
        if quantises:
            cat = category(name)
            rules = _Rules(ftype, model, imatrix, tied, total_v, counted, name, shape)
            kind = rules.type_of(cat, kind)
            row = shape[-1]
            if row % GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]:
                kind = FALLBACK.get(kind, kind)
                if row % GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]:
                    kind = "F16"
        out[name] = kind
    return out


@dataclass
class _Rules:
    """llama_tensor_get_type_impl for one tensor, the counters shared across the file's tensors."""

    ftype: str
    model: Model
    imatrix: bool
    tied: bool
    total_v: int
    counted: dict
    name: str
    shape: tuple[int, ...]

    def layer(self, kind: str) -> tuple[int, int]:
        """(i, n) of a feedforward tensor: its block where the model has experts, else its place among its kind."""
        i = self.counted[kind]
        self.counted[kind] += 1
        if self.model.n_expert > 1:
            i = int(re.match(r"blk\.(\d+)\.", self.name)[1])  # type: ignore[index]
        return i, self.model.n_layer

    def type_of(self, cat: str, new: str) -> str:  # noqa: C901 (llama.cpp's one function, branch by branch)
        f, m = self.ftype, self.model
        if cat == "output" or (self.tied and cat == "token_embd"):
            if f == "mxfp4_moe" or m.falcon or self.shape[-1] % _block(new):
                return "Q8_0"
            if f in ("iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
                return "Q5_K"
            return new if new == "Q8_0" else "Q6_K"
        if f == "mxfp4_moe":
            return "MXFP4" if len(self.shape) == 3 and self.shape[0] > 1 else "Q8_0"
        if cat == "token_embd":
            if f in ("iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"):
                return "Q2_K"
            if f in ("iq2_s", "iq2_m", "iq3_xxs"):
                return "IQ3_S"
            return "Q4_K" if f in ("tq1_0", "tq2_0") else new
        v_like = cat in ("attn_v", "attn_qkv", "attn_kv_b")
        if f in LOW_IQ:
            return self._low_iq(cat, v_like, new)
        if v_like:
            return self._attn_v(new)
        if cat == "attn_k":
            return "Q8_0" if m.n_expert == 8 else "IQ3_XXS" if f == "iq3_xs" else "IQ2_S" if f == "iq3_xxs" else new
        if cat == "attn_q":
            return "IQ3_XXS" if f == "iq3_xs" else "IQ2_S" if f == "iq3_xxs" else new
        if cat == "ffn_down":
            return self._ffn_down(new)
        if cat == "attn_output":
            return self._attn_output(new)
        if cat in ("ffn_gate", "ffn_up"):
            i, layers = self.layer(cat)
            return "IQ3_XXS" if f == "iq3_xs" and layers // 8 <= i < 7 * layers // 8 else new
        return new

    def _low_iq(self, cat: str, v_like: bool, new: str) -> str:
        f, m = self.ftype, self.model
        wider = f in ("iq2_s", "iq2_m")
        if v_like:
            self.counted["attn_v"] += 1
            if m.n_gqa >= 4 or m.n_expert >= 4:
                return "Q4_K"
            return "IQ3_S" if wider else "Q2_K"
        if m.n_expert == 8 and cat == "attn_k":
            return "Q4_K"
        if cat == "ffn_down":
            i = self.counted["ffn_down"]
            self.counted["ffn_down"] += 1
            return ("IQ3_S" if wider else "Q2_K") if i < m.n_layer // 8 else new
        if cat == "attn_output":
            if m.n_expert == 8:
                return "Q5_K"
            return "IQ2_XXS" if f in ("iq1_s", "iq1_m") else "IQ3_S" if wider else new
        return new

    def _attn_v(self, new: str) -> str:
        f, m = self.ftype, self.model
        i, n = self.counted["attn_v"], self.total_v
        self.counted["attn_v"] += 1
        if f == "q2_k":
            new = "Q4_K" if m.n_gqa >= 4 else "Q3_K"
        elif f == "q2_k_s" and m.n_gqa >= 4:
            new = "Q4_K"
        elif f == "iq3_xxs":
            new = "Q4_K" if m.n_gqa >= 4 else "IQ3_S" if not self.imatrix else "IQ3_XXS"
        elif f in ("iq3_xs", "iq3_s") and m.n_gqa >= 4:
            new = "Q4_K"
        elif f == "iq3_m":
            new = "Q4_K"
        elif f == "q3_k_m":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif f == "q3_k_l":
            new = "Q5_K"
        elif f in ("iq4_nl", "iq4_xs") and m.n_gqa >= 4:
            new = "Q5_K"
        elif f in ("q4_k_m", "q5_k_m") and use_more_bits(i, n):
            new = "Q6_K"
        elif f == "q4_k_s" and i < 4:
            new = "Q5_K"
        if m.is_70b and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"
        return "Q8_0" if m.n_expert == 8 else new

    def _ffn_down(self, new: str) -> str:
        f, m = self.ftype, self.model
        i, n = self.layer("ffn_down")
        falcon, more = m.falcon, use_more_bits(i, n)
        if f == "q2_k":
            return "Q3_K"
        if f == "q2_k_s":
            return "Q4_K" if i < n // 8 else new
        if f == "iq3_xxs" and not self.imatrix:
            return "Q4_K" if i < n // 8 else "Q3_K"
        if f == "q3_k_m":
            return "Q5_K" if i < n // 16 else "Q4_K" if not falcon or more else "Q3_K"
        if f == "iq3_m" and (i < n // 8 or (m.n_expert == 8 and more)):
            return "Q4_K"
        if f == "q3_k_l":
            return "Q4_K" if falcon else "Q5_K"
        if f == "q4_k_m":
            if falcon:
                return "Q6_K" if i < n // 16 else "Q5_K" if more else "Q4_K"
            return "Q6_K" if more else new
        if i < n // 8 and f in ("iq4_nl", "iq4_xs") and not self.imatrix:
            return "Q5_K"
        if f == "q5_k_m" and more:
            return "Q6_K"
        if f == "q4_k_s" and not falcon and i < n // 8:
            return "Q5_K"
        if f in ("q4_0", "q5_0") and self.imatrix and i < n // 8:
            return "Q4_1" if f == "q4_0" else "Q5_1"
        return new

    def _attn_output(self, new: str) -> str:
        f, m = self.ftype, self.model
        if m.falcon:
            return "Q4_K" if f == "q3_k_l" else new
        if m.n_expert == 8:
            lifted = ("q2_k", "iq3_xs", "iq3_xxs", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq3_s", "iq3_m")
            return "Q5_K" if f in (*lifted, "iq4_xs") else new
        own = {"q2_k": "Q3_K", "iq3_xxs": "IQ3_S", "q3_k_m": "Q4_K", "q3_k_l": "Q5_K", "iq3_m": "Q4_K"}
        return own.get(f, new)


def _block(kind: str) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    return GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]


__all__ = ["FILE_TYPES", "Model", "NEEDS_IMATRIX", "file_types", "use_more_bits"]
