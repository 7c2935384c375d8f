"""The Hugging Face config.json of a GGUF file's model, for `tfm convert FILE.gguf -o FOLDER`: the model_type its
architecture comes from (or the one its record's Gguf.model_type chooses by the spec: llama with experts, mixtral),
and the keys transformers reads to build that model. The config is checked by reading it back: its spec must be the
file's, or the folder is not written."""

from __future__ import annotations

from typing import Any

from ..families import GGUF_OF, RECORDS
from ..families.config_keys import rope_keys, size_keys
from ..hf.families import FAMILIES
from ..spec.definition import Spec
from .archs import MODEL_TYPE

CLASSES = {kind: model_class for kind, (model_class, _) in FAMILIES.items()}  # a model_type's transformers class


def hf_config(spec: Spec, arch: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config.json transformers builds the GGUF file's model from (its special tokens from the metadata's
    tokenizer.ggml.*_token_id, else none: a family's default padding id may lie past a small vocabulary)."""
    tokens = {
        f"{kind}_token_id": (metadata or {}).get(f"tokenizer.ggml.{name}_token_id")
        for kind, name in (("pad", "padding"), ("bos", "bos"), ("eos", "eos"))
    }
    return hf_model_config(spec, arch) | tokens


def hf_model_config(spec: Spec, arch: str) -> dict[str, Any]:
    """The keys that make the model: the shared sizes and rotary keys and the family's own (its record's `config`),
    or the family's alone (`config_alone`: it names its sizes its own way)."""
    kind, first = MODEL_TYPE[arch], GGUF_OF.get(arch)
    if first is not None and first.model_type is not None:
        kind = first.model_type(spec)  # (the family's way: llama with experts is mixtral, a tied T5 head mT5)
    record = RECORDS[kind]
    out: dict[str, Any] = {"architectures": [CLASSES[kind]], "model_type": kind}
    if record.config_alone:
        return out | record.config(spec)
    out |= size_keys(spec) | rope_keys(spec)
    if spec.norm_type == "layernorm":
        out["layer_norm_eps"] = spec.norm_eps
    out |= record.config(spec)
    if spec.norm_type == "rmsnorm":
        out["rms_norm_eps"] = spec.norm_eps
    return out


__all__ = ["MODEL_TYPE", "hf_config"]
