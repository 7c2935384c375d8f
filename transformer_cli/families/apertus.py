"""Apertus (ApertusForCausalLM, the Swiss AI initiative's): LLaMA's attention with an RMSNorm of each query and key
head (biases on all four projections with attention_bias), a plain MLP down(xielu(up x)) whose xIELU activation has
two parameters per block (tfm's feedforward xielu; another hidden_act is a plain MLP of that activation), the
norms named attention_layernorm and feedforward_layernorm, LLaMA 3's scaled rotary of base 12e6 by default. Without
rope_parameters transformers 5.24 sets that default whatever a flat rope_theta says: tfm follows it and says so.
The activation's beta (1/2) and eps (-1e-6) are buffers in its files that transformers fixes: checked, not read.
Its GGUF files (apertus, ApertusModel's converter): LLaMA's names, Q and K as stored (llama.cpp turns halves), and
the four xIELU numbers as metadata lists of one per block (xielu.alpha_p, alpha_n, beta, eps), llama.cpp applying
the same softplus to the two parameters; llama.cpp runs xIELU whatever the activation, so only xIELU is written."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spec.definition import Spec
from .checkpoints import _LLAMA_GLOBALS, _llama_names
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family, linear_names, norm_names
from .parts import default_rope, llama_like
from .record import Gguf, Record

DEFAULT_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 12000000.0,
    "factor": 8.0,
    "original_max_position_embeddings": 8192,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    c = default_rope(c, DEFAULT_ROPE, "5.24's ApertusConfig sets LLaMA 3's rotary of base 12e6 when no rope_parameters")
    act = c.text("hidden_act", "xielu")
    G = c.nullable_count("num_key_value_heads", None)
    if act == "xielu":  # (its own feedforward kind; the spec's activation then unused)
        c = Keys({k: v for k, v in c.data.items() if k != "hidden_act"}, c.source, notes=c.notes)
    plain = llama_like(c, G, None, 1e-5, False, 65536, theta=12e6)
    ff = {"feedforward": "xielu"} if act == "xielu" else {"feedforward": "plain"}
    return plain | ff | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Apertus's config.json (its rotary as rope_parameters)."""
    out = shared_keys(spec)
    rotary = {"rope_type": "default", "rope_theta": out.pop("rope_theta")} | out.pop("rope_scaling", {})
    act = "xielu" if spec.feedforward == "xielu" else spec.activation
    return out | {"rope_parameters": rotary, "attention_bias": spec.attention_bias, "hidden_act": act}


APERTUS = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if ours.startswith("attention.")}
    | linear_names("ff.{}1", "mlp.up_proj")
    | linear_names("ff.{}2", "mlp.down_proj")
    | {"ff.alpha_p": "mlp.act_fn.alpha_p", "ff.alpha_n": "mlp.act_fn.alpha_n"}
    | norm_names("norm1", "attention_layernorm")
    | norm_names("norm2", "feedforward_layernorm"),
    _LLAMA_GLOBALS,
    fixed_buffers=(("mlp.act_fn.beta", 0.5), ("mlp.act_fn.eps", -1e-6)),
)


XIELU = {"xielu.alpha_p": None, "xielu.alpha_n": None, "xielu.beta": 0.5, "xielu.eps": -1e-6}  # (None: read)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes, rotary and per-head norms with xIELU's feedforward: its four lists one number per block, the
    fixed two as transformers fixes them (to float32)."""
    lists = Keys(header.metadata, c.source)
    for key, fixed in XIELU.items():
        values = lists.data.get(key)
        if not isinstance(values, list) or len(values) != spec["N"]:
            raise lists.fail(key, values, f"a list of {spec['N']} numbers, one per block")
        if fixed is not None and any(v != np.float32(fixed) for v in values):
            raise lists.refuse(key, values, f"tfm's xIELU has {fixed} in every block, as transformers fixes it")
    if spec.get("out_bias"):  # (Apertus's attention_bias is all four projections')
        spec = {k: v for k, v in spec.items() if k != "out_bias"}
    return spec | {"feedforward": "xielu", "qk_norm": True}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("ff.")}
    | linear_names("ff.{}1", "ffn_up", "W")
    | linear_names("ff.{}2", "ffn_down", "W")
    | {"ff.alpha_p": "xielu.alpha_p", "ff.alpha_n": "xielu.alpha_n"},
    LLAMA_LAYOUT.globals_,
)
GGUF = Gguf("apertus", GGUF_LAYOUT, gguf_spec, in_metadata=XIELU)


def apertus1p5(c: Keys) -> dict[str, Any]:
    """Apertus1p5TextForCausalLM (Apertus 1.5's text model): Apertus's, its vocabulary holding the visual and audio
    codes too; a head narrower than the vocabulary (output_vocab_size) tfm cannot hold: refused, and with a tied
    head transformers drops it (followed, said)."""
    V, narrow = c.count("vocab_size", 266752), c.nullable_count("output_vocab_size", None)
    if narrow is not None and narrow != V:
        if c.flag("tie_word_embeddings", False):
            c.ignored("output_vocab_size", "5.24's Apertus 1.5 ties its head to the whole vocabulary")
        else:
            raise c.refuse("output_vocab_size", narrow, f"tfm's head is as wide as the vocabulary, {V}")
    return spec(c)


_SKIPPED = (r"\.mlp\.act_fn\.(beta|eps)$",)  # (xIELU's fixed constants, buffers in its files)
RECORDS = (
    Record("apertus", "ApertusForCausalLM", spec, APERTUS, config, GGUF, config_alone=True, skipped=_SKIPPED),
    Record(
        "apertus1p5_text",
        "Apertus1p5TextForCausalLM",
        apertus1p5,
        APERTUS,
        config,
        config_alone=True,
        aliases=((r"^model\.language_model\.", "model."),),  # (its multimodal files' text stack)
        skipped=(*_SKIPPED, r"^model\.(vision|audio)_tokenizer\."),
    ),
)

__all__ = ["RECORDS"]
