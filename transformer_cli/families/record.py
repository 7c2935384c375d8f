"""A model family in one record: what tfm knows of it, in every format, found in one place.

As llama.cpp's convert_hf_to_gguf.py registers one class per family by the architectures it serves, a family here
is one module holding one `Record` (its registry line is in families/__init__.py). The formats read their tables
from the registry: hf/ reads config.json with `spec` and a checkpoint with `checkpoint`, gguf/ reads and writes
the file with `gguf`, and a GGUF file's model goes back to a config.json with `config`. Both directions of each
mapping sit side by side, so the inverse tables (a GGUF architecture's model_type, a model_type's architecture)
are derived, not written twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..spec.definition import Spec
from .gguf_layout import Joined, Transform
from .keys import Keys
from .layout import Family


def _none(spec: Spec) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Gguf:
    """The family's GGUF architecture: its `general.architecture`, its tensor names, its `{arch}.*` keys read (from
    the spec of the shared reader `base`, gguf/archs.py) and written, and the converter's changes to its tensors."""

    arch: str
    layout: Family
    spec: Callable[[Keys, Any, dict[str, Any]], dict[str, Any]]  # (its keys, the file's header, base's spec) -> spec
    metadata: Callable[[Spec], dict[str, Any]] = _none  # the {arch}.* keys beyond the shared ones, to write
    base: str = "llama_like"  # the shared reader (gguf/archs.BASES): LLaMA's, Phi-3's, or the sizes alone
    transforms: Mapping[str, Transform] = field(default_factory=dict)  # per tensor name in a block: to undo
    redo: Mapping[str, Transform] = field(default_factory=dict)  # the same changes made, to write a file
    # the config.json model_type of a file's model where its spec decides it (llama with experts: mixtral); None:
    # the record's own; asked of the architecture's first record (GGUF_ARCHS)
    model_type: Callable[[Spec], str] | None = None
    experts: Family | None = None  # the layout when the file's model has experts (Mixtral's files are llama's)
    skipped: tuple[str, ...] = ("rope_freqs.weight",)  # the file's tensors the model has no place for
    # other layouts, each for the specs its test is true of (the first true), else `layout`
    alternatives: tuple[tuple[Callable[[Any], bool], Family], ...] = ()
    window_always: bool = False  # attention.sliding_window written (0: none) with or without a window (Phi-3)
    llama_cpp_slides: bool = True  # llama.cpp's cache slides with the file's window (Phi-3's: it disables it)
    quantize_as_falcon: bool = False  # llama-quantize's exceptions for LLM_ARCH_FALCON in its mixes (gguf/mixes.py)
    read_only: bool = False  # files read, none written, no config.json made of one (BERT's: no pooler in the file)
    joined: Mapping[str, Joined] = field(default_factory=dict)  # tensors newer converters write in pieces
    rms_epsilon: bool = False  # the norms' eps written as layer_norm_rms_epsilon whatever their type (PhiMoE)
    router_typed: bool = False  # the router stored in the weights' type, not F32 (DBRX's tensor_force_quant)
    extra: Callable[[Spec], dict[str, Any]] | None = None  # tensors the converter makes (Gemma 4's rope_freqs)
    # block tensors of one number the file holds as a metadata key of one per block (Apertus's xIELU parameters),
    # by key; a number: a key of that value in every block that tfm fixes (the layout names no tensor for it)
    in_metadata: Mapping[str, float | None] = field(default_factory=dict)
    # the model as a file holds it, where the converter folds into the weights what no key holds (Falcon-H1's
    # multipliers): (spec, weights) -> (the file's spec, its weights)
    held_model: Callable[[Spec, Mapping[str, Any]], tuple[Spec, Mapping[str, Any], str]] | None = None
    # (and what the user is told of it: "" for nothing)
    writes: Callable[[Spec], bool] | None = None  # for a Record's gguf_also: the specs written as this architecture


@dataclass(frozen=True)
class Record:
    """One Hugging Face model_type: its transformers class, its config.json read as a spec (`spec`) and written from
    one (`config`: the family's own keys, the shared sizes and rotary are gguf/hf_config.py's), its checkpoint's
    tensor names (and other names published files use for them: `aliases`, tried in order; the layout of a config
    where the config decides it: `checkpoint_for`; tensors outside the model, skipped: `skipped`; a part a file may
    leave out: `optional`), its GGUF architecture, and for LoRA the names peft gives a mixture's stacked experts and
    router (hf/lora_modules.py)."""

    model_type: str
    hf_class: str
    spec: Callable[[Keys], dict[str, Any]]
    checkpoint: Family
    config: Callable[[Spec], dict[str, Any]] = _none
    gguf: Gguf | None = None
    gguf_also: tuple[Gguf, ...] = ()  # other architectures of its files, each written where its `writes` says
    aliases: tuple[tuple[str, str], ...] = ()
    lora_stacked: tuple[str, str, str, str] | None = None  # gate, up, down experts and router, as peft names them
    lora_router: str | None = None  # the router's name where it is a linear module of its own ("*": as stored)
    config_alone: bool = False  # `config` is every key (the family names its sizes its own way): no shared ones
    # the checkpoint layout where the config.json decides it (Falcon's attention options); None: `checkpoint`
    checkpoint_for: Callable[[Mapping[str, Any]], Family] | None = None
    skipped: tuple[str, ...] = ()  # patterns of checkpoint tensors outside the model (heads, buffers): not read
    optional: tuple[str, Any, tuple[str, ...]] | None = None  # (spec key, its value without the part, its tensors)


__all__ = ["Gguf", "Record"]
