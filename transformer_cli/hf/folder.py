"""A Hugging Face folder as a whole: its checkpoint read against its own config.json."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np

from ..components.held import KEPT, Held, quantised
from ..errors import ArrayError
from ..io.safetensors_io import DTYPES
from ..spec.definition import Spec
from .checkpoint import Checkpoint
from .config import load_config, read_config
from .layouts import bytes_by_tensor, hf_shape, rules, tensor_shapes
from .quant import scheme_of
from .quant.base import KINDS, module
from .weights import CheckpointWeights, Fitted, check_fit, checkpoint_weights, family_for


def folder_weights(folder: Path, spec: Spec) -> CheckpointWeights:
    """The weights of a Hugging Face folder, for `spec`: the folder's config must describe the same model."""
    config, own = load_config(folder)
    if own.model_keys() != spec.model_keys():
        differ = spec.differing_keys(own)
        raise ArrayError(f"{folder}: its config.json is another model ({', '.join(differ)} differ from '{spec.label}')")
    return checkpoint_weights(folder, spec, config)


def summary(folder: Path, spec: Spec) -> dict[str, Any]:
    """What `tfm count FOLDER` says of the checkpoint, from its headers alone: files, tensors, bytes, dtypes,
    and the parameters the file holds (a tied head once), after checking that every tensor fits; the tensors it
    holds beside them that tfm does not read (a masked-LM head, buffers, tied copies) and their values. A quantised
    checkpoint's parameters are the weights' own (unpacked), beside the elements its tensors hold; its bytes and
    bits per weight are given for the packed weights (codes, scales, zero points, ... apart) and per dtype for
    the rest."""
    checkpoint = Checkpoint(folder)
    config = read_config(folder)
    fitted = check_fit(checkpoint, spec, config)
    entries = [checkpoint.tensors[name].entry for name in fitted.files.values()]
    parameters = sum(math.prod(e.shape) for e in entries)
    out: dict[str, Any] = {
        "files": len({t.shard for t in checkpoint.tensors.values()}),
        "tensors": len(checkpoint.tensors),
        "bytes": checkpoint.nbytes(),
        "dtypes": sorted({e.code for e in entries}),
        "parameters": parameters,
        "skipped": {
            "tensors": list(fitted.skipped),
            "values": sum(math.prod(checkpoint.shape(name)) for name in fitted.skipped),
        },
    }
    if fitted.scheme is None:
        return out
    plain: dict[str, dict[str, Any]] = {}
    for e in entries:
        row = plain.setdefault(e.code, {"tensors": 0, "parameters": 0, "bytes": 0})
        row["tensors"] += 1
        row["parameters"] += math.prod(e.shape)
        row["bytes"] += e.end - e.begin
    by_kind: dict[str, int] = {}  # (in the order of KINDS)
    stored_elements = parameters
    for packed in fitted.packed.values():
        for name, stored in packed.items():
            if name in checkpoint.tensors:
                entry = checkpoint.tensors[name].entry
                by_kind[stored.kind] = by_kind.get(stored.kind, 0) + entry.end - entry.begin
                stored_elements += math.prod(entry.shape)
    unpacked = sum(math.prod(shape) for shape in _packed_shapes(checkpoint, spec, config, fitted))
    packed_bytes = sum(by_kind.values())
    by_kind = {kind: by_kind[kind] for kind in KINDS if kind in by_kind}
    for row in plain.values():
        row["bits_per_weight"] = 8 * row["bytes"] / row["parameters"] if row["parameters"] else 0.0
    return out | {
        "parameters": parameters + unpacked,
        "stored_elements": stored_elements,
        "quantization": {
            "method": fitted.scheme.method,
            "scheme": fitted.scheme.label,
            "runs": fitted.scheme.refused is None,
            "packed": {
                "weights": len(fitted.packed),
                "parameters": unpacked,
                "bytes": packed_bytes,
                "bits_per_weight": 8 * packed_bytes / unpacked if unpacked else 0.0,
                "bytes_by_kind": by_kind,
            },
            "plain": plain,
        },
    }


def _packed_shapes(checkpoint: Checkpoint, spec: Spec, config: dict[str, Any], fitted: Fitted) -> list[tuple[int, ...]]:
    """The shapes of the weights the file holds packed, as the model holds them."""

    shapes = tensor_shapes(spec)
    return [hf_shape(rule, shapes) for rule in rules(family_for(config), spec) if rule.hf in fitted.packed]


def held_by_config(config: Mapping[str, Any], spec: Spec, source: str) -> Held:
    """The bytes a quantised config's checkpoint holds, from the config alone (a published config.json without its
    weights: DeepSeek-V3's FP8, gpt-oss's MXFP4): each of the blocks' matrices the method packs (as
    analysis/quantized.py counts them: not routers, norms, biases, the embedding or the head), unless the config's
    `modules_to_not_convert` names it, at the bytes of the tensors the method stores for it; every other tensor in
    16 bits, as these checkpoints keep them."""

    scheme = scheme_of(config, source)
    assert scheme is not None, "a quantised config"
    shapes = tensor_shapes(spec)
    by_hf = {rule.hf: rule for rule in rules(family_for(config), spec)}
    rule_of = {name: rule for rule in by_hf.values() for name in rule.tfm}
    quant = config.get("quantization_config") or config.get("compression_config") or {}
    kept = [str(p) for p in quant.get("modules_to_not_convert") or [] if isinstance(p, str)]

    def stored(hf: str) -> int:
        rule, shape = by_hf[hf], hf_shape(by_hf[hf], shapes)
        name = module(hf) or hf
        packed = scheme.packed(hf, shape)
        if (
            packed is None
            or any(fnmatch(name, p) or fnmatch(name, f"{p}.*") for p in kept)
            or not all(quantised(t.split("[")[0], shapes[t]) for t in rule.tfm)
        ):
            return math.prod(shape) * KEPT
        return sum(
            math.prod(max(n, 1) for n in t.shape) * np.dtype(DTYPES[t.codes[0]]).itemsize
            for t in packed.values()
            if not t.optional
        )

    return Held(f"{scheme.label}, from its config", bytes_by_tensor(rule_of, shapes, stored))
