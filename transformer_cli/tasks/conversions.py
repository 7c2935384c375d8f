"""Write a Hugging Face folder (config.json and model.safetensors, or shards and their index) from tfm's weights.

The folder is written whole or not at all, and an existing one only with `overwrite`, which replaces
config.json and the checkpoint's files (and removes an earlier checkpoint's stale shards) and keeps every
other file in it (io/outputs.py). Tensors are written one at a time, each joined from tfm's tensors just
before it is written.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..components.base import INTEGER
from ..components.tensors import iter_tensors
from ..errors import SpecError
from ..files import open_regular, read_bounded
from ..gguf.model import GGUFWeights, spec_from_gguf
from ..hf.checkpoint import INDEX, SINGLE
from ..hf.config import MAX_CONFIG_BYTES, load_config, spec_of_config, stored_config
from ..hf.layouts import Rule, fixed_buffers, hf_shape, join, piece, rules, tensor_shapes
from ..hf.quant import dequantised
from ..hf.weights import OPTIONAL, checkpoint_weights, family_for
from ..io import outputs, safetensors_io
from ..io.arrays import Header, cast_finite
from ..io.safetensors_io import BFLOAT16
from ..io.weights import spec_of_weights, write_weights
from ..spec.definition import Spec
from .sources import load_weights

TORCH_NAMES = {
    np.dtype(np.float64): "float64",
    np.dtype(np.float32): "float32",
    np.dtype(np.float16): "float16",
    BFLOAT16: "bfloat16",
}
BY_NAME = {name: dtype for dtype, name in TORCH_NAMES.items()}
GENERATION = "generation_config.json"  # kept in tfm's weights file (metadata 'hf_generation_config') and written back


def _shards(sized: list[tuple[Rule, int]], shard_bytes: int | None) -> list[list[Rule]]:
    """Rules in file order, cut into consecutive shards of at most shard_bytes (one tensor may exceed it)."""
    shards: list[list[Rule]] = [[]]
    held = 0
    for rule, size in sized:
        if shard_bytes is not None and shards[-1] and held + size > shard_bytes:
            shards.append([])
            held = 0
        shards[-1].append(rule)
        held += size
    return shards


SHARD = re.compile(r"model-\d+-of-\d+\.safetensors")


def is_checkpoint_file(name: str) -> bool:
    """A file of a safetensors checkpoint as transformers names them: replaced whole when tfm writes one."""
    return name in (SINGLE, INDEX) or SHARD.fullmatch(name) is not None


def write_folder(
    folder: str | Path,
    spec: Spec,
    config: Mapping[str, Any],
    weights: Mapping[str, np.ndarray],
    dtype: Any = np.float32,
    shard_bytes: int | None = None,
    overwrite: bool = False,
    extra: list[tuple[str, outputs.Writer]] = (),  # type: ignore[assignment]
) -> tuple[list[str], list[str]]:
    """Write config.json, the weights as the config's family lays them out, and the `extra` files (a
    generation_config.json, a tokenizer); returns the files written and the `extra` ones not written.

    An existing folder (with `overwrite`) keeps every file but config.json and its checkpoint's (outputs.py): an
    `extra` file is written only where it has none of that name."""
    folder, dtype = Path(folder), np.dtype(dtype)
    shapes = tensor_shapes(spec)
    family = family_for(config)
    layout = rules(family, spec)
    sized = [(rule, math.prod(hf_shape(rule, shapes)) * dtype.itemsize) for rule in layout]
    shards = _shards(sized, shard_bytes)
    buffers = fixed_buffers(family, layout)  # (in the last shard)
    names = (
        [SINGLE]
        if len(shards) == 1
        else [f"model-{i:05d}-of-{len(shards):05d}.safetensors" for i in range(1, len(shards) + 1)]
    )
    files = [
        (name, _shard_writer(folder / name, shard, spec, shapes, weights, dtype, buffers if name == names[-1] else {}))
        for name, shard in zip(names, shards, strict=True)
    ]
    if len(shards) > 1:
        weight_map = {rule.hf: name for name, shard in zip(names, shards, strict=True) for rule in shard}
        weight_map |= dict.fromkeys(buffers, names[-1])
        index = {"metadata": {"total_size": sum(size for _, size in sized)}, "weight_map": weight_map}
        files.append((INDEX, _text(json.dumps(index, indent=2) + "\n")))
    written = dequantised(config) | {"dtype": TORCH_NAMES.get(dtype, str(dtype)), "torch_dtype": TORCH_NAMES.get(dtype)}
    files.insert(0, ("config.json", _text(json.dumps(written, indent=2) + "\n")))
    files += list(extra)
    kept = outputs.write_folder(folder, files, is_checkpoint_file, overwrite, [name for name, _ in extra])
    return [name for name, _ in files if name not in kept], kept


def _text(text: str) -> outputs.Writer:
    def write(handle: IO[bytes]) -> None:
        handle.write(text.encode())

    return write


def _shard_writer(
    path: Path,
    shard: list[Rule],
    spec: Spec,
    shapes: dict,
    weights: Mapping,
    dtype: np.dtype,
    buffers: Mapping[str, float],
) -> outputs.Writer:
    def typed(rule: Rule) -> np.dtype:  # (a table of ids as transformers holds it: int64)
        return np.dtype(np.int64) if rule.tfm and rule.tfm[0].endswith(INTEGER) else dtype

    def layout() -> Iterator[tuple[str, Header]]:
        yield from ((rule.hf, Header(hf_shape(rule, shapes), typed(rule))) for rule in shard)
        yield from ((name, Header((), dtype)) for name in buffers)

    def arrays() -> Iterator[tuple[str, np.ndarray]]:
        for rule in shard:
            joined = join(rule, {name: piece(weights, name) for name in rule.tfm}, spec)
            yield rule.hf, cast_finite(joined, typed(rule), f"{path.parent}: tensor {rule.hf}")
        for name, value in buffers.items():  # (transformers reads them from the file; it makes them in float32)
            yield name, cast_finite(np.asarray(value, np.float32), dtype, f"{path.parent}: tensor {name}")

    return safetensors_io.writer(layout, arrays(), {"format": "pt"}, path)


# -- both directions, as `tfm convert` runs them ------------------------------------------------------------


def to_tfm(folder: Path, out: Path, dtype: Any = None, overwrite: bool = False) -> tuple[Spec, int]:
    """A Hugging Face folder as tfm's weights file, tensor by tensor; its config.json is kept in the metadata
    ('hf_config') so the file converts back to the same folder. Returns the spec and the tensors written.

    dtype None keeps float64 checkpoints in float64 and writes the others (bf16, f16, f32) as float32, exactly.
    """

    if dtype == "bfloat16":
        raise SpecError(
            f"--dtype bfloat16: tfm's weights file {out} holds float64, float32 or float16 (bfloat16 "
            "values as float32, exactly); bfloat16 is for writing a Hugging Face folder"
        )
    config, spec = load_config(folder)
    weights = checkpoint_weights(folder, spec, config)
    if dtype is None:
        codes = {located.entry.code for located in weights.checkpoint.tensors.values()}
        dtype = np.float64 if codes == {"F64"} else np.float32
    dtype = np.dtype(dtype)
    tensors = list(iter_tensors(spec))
    typed = {t.name: np.dtype(np.int64) if t.name.endswith(INTEGER) else dtype for t in tensors}  # (ids: int64)
    layout = lambda: ((t.name, Header(t.shape, typed[t.name])) for t in tensors)  # noqa: E731
    where = f"{folder}: tfm's tensor"
    arrays = ((t.name, cast_finite(weights[t.name], typed[t.name], f"{where} {t.name}")) for t in tensors)
    metadata = {"hf_config": json.dumps(dequantised(config))} | _generation(folder)
    write_weights(out, layout, arrays, spec, overwrite, metadata)
    return spec, len(tensors)


def gguf_to_tfm(path: Path, out: Path, dtype: Any = None, overwrite: bool = False) -> tuple[Spec, int]:
    """A GGUF file as tfm's weights file, dequantised tensor by tensor (float32 unless dtype says: every GGML type
    dequantises to float32 values exactly). Returns the spec and the tensors written."""

    if dtype == "bfloat16":
        raise SpecError(f"--dtype bfloat16: tfm's weights file {out} holds float64, float32 or float16")
    spec = spec_from_gguf(path)
    weights = GGUFWeights(path, spec)
    dtype = np.dtype(dtype or np.float32)
    tensors = list(iter_tensors(spec))
    layout = lambda: ((t.name, Header(t.shape, dtype)) for t in tensors)  # noqa: E731
    arrays = ((t.name, cast_finite(weights[t.name], dtype, f"{path}: tfm's tensor {t.name}")) for t in tensors)
    write_weights(out, layout, arrays, spec, overwrite, {"gguf_source": path.name})
    return spec, len(tensors)


def gguf_to_hugging_face(
    path: Path, out: Path, dtype: Any = None, shard_bytes: int | None = None, overwrite: bool = False
) -> tuple[Spec, list[str]]:
    """A GGUF file as a Hugging Face folder (float32 unless dtype says), its config.json built from the metadata
    and checked to describe the file's model before anything is written."""
    from ..gguf.hf_config import MODEL_TYPE, hf_config

    spec = spec_from_gguf(path)
    weights = GGUFWeights(path, spec)
    arch = str(weights.header.metadata["general.architecture"])
    if arch not in MODEL_TYPE:  # (BERT's: the file has no pooler, which a BertModel's config cannot leave out)
        raise SpecError(
            f"{path}: tfm writes no Hugging Face folder of a GGUF {arch} file (it writes one of "
            f"{', '.join(sorted(MODEL_TYPE))}); tfm's weights file takes it: -o FILE.safetensors"
        )
    config = hf_config(spec, arch, weights.header.metadata)
    own = spec_of_config(config, f"{path}: the config.json built from its metadata")
    if own.model_keys() != spec.model_keys():
        differ = ", ".join(spec.differing_keys(own))
        raise SpecError(
            f"{path}: no Hugging Face config describes this GGUF model ({differ} would differ): not written"
        )
    written = BY_NAME.get(dtype, dtype or np.float32)
    return spec, write_folder(out, spec, config, weights, written, shard_bytes, overwrite)[0]


def to_gguf(source: Path, out: Path, type_name: str = "f16", overwrite: bool = False) -> tuple[Spec, int, str]:
    """A Hugging Face folder (with its tokenizer), or tfm's .safetensors written from one (its config in the
    metadata), as a GGUF file of `type_name` weights (f32, f16, bf16, q8_0, q4_0). Returns the spec, the tensors
    written and what was written of the tokenizer."""
    from ..gguf.write import write_gguf

    if source.is_dir():
        config, spec = load_config(source)
        weights: Mapping[str, np.ndarray] = checkpoint_weights(source, spec, config)
    else:
        stored = spec_of_weights(source) if source.suffix.lower() == ".safetensors" else None
        kept = safetensors_io.peek(source)[1].get("hf_config") if stored is not None else None
        if stored is None or kept is None:
            raise SpecError(
                f"{source}: a GGUF file is written from a Hugging Face folder, or from tfm's .safetensors "
                "converted from one (it keeps the config.json, whose model_type names the "
                "architecture)"
            )
        config, spec = stored_config(kept, f"{source}: metadata 'hf_config'"), stored
        weights = load_weights(source, spec)
    folder = source if source.is_dir() else None
    tensors, said = write_gguf(out, spec, str(config.get("model_type")), weights, type_name, overwrite, folder)
    return spec, tensors, said


def _generation(folder: Path) -> dict[str, str]:
    """The folder's generation_config.json (stop tokens, sampling defaults) as metadata, if it has one."""

    path = folder / GENERATION
    if not path.is_file():
        return {}
    text = read_bounded(path, MAX_CONFIG_BYTES, "a generation_config.json", SpecError).decode("utf-8", "replace")
    stored_config(text, str(path))  # a JSON object, or a one-line error naming the file
    return {"hf_generation_config": text}


def _source_dtype(codes: set[str]) -> np.dtype:
    """What a folder's tensors are written back as by default: their own type when they share one."""
    dtypes: dict[str, np.dtype] = {"F64": np.dtype(np.float64), "F16": np.dtype(np.float16), "BF16": BFLOAT16}
    return dtypes.get(next(iter(codes)) if len(codes) == 1 else "", np.dtype(np.float32))


def reshard(
    folder: Path, out: Path, dtype: Any = None, shard_bytes: int | None = None, overwrite: bool = False
) -> tuple[Spec, tuple[list[str], list[str]]]:
    """A Hugging Face folder written again as one (resharded, or in another dtype; dtype None keeps the source's),
    with every other regular file of the folder (generation_config.json, the tokenizer's) copied as it is where
    the output has none. Returns the spec, the files written and the files of the output kept instead."""

    config, spec = load_config(folder)
    weights = checkpoint_weights(folder, spec, config)
    if dtype is None:
        dtype = _source_dtype({located.entry.code for located in weights.checkpoint.tensors.values()})
    others = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name != "config.json" and not is_checkpoint_file(p.name)
    )
    extra = [(p.name, _copier(p)) for p in others]
    return spec, write_folder(out, spec, config, weights, BY_NAME.get(dtype, dtype), shard_bytes, overwrite, extra)


def _copier(path: Path) -> outputs.Writer:
    def copy(handle) -> None:

        with open_regular(path, "a file to copy", SpecError) as source:
            shutil.copyfileobj(source, handle, 1 << 20)

    return copy


def to_hugging_face(
    path: Path,
    out: Path,
    config_path: Path | None = None,
    dtype: Any = None,
    shard_bytes: int | None = None,
    overwrite: bool = False,
) -> tuple[Spec, tuple[list[str], list[str]]]:
    """tfm's weights file (with its spec) as a Hugging Face folder. The config is the one stored by `to_tfm`, or
    the one at `config_path`, which must describe the same model. dtype None keeps the file's. Returns the spec,
    the files written and the files of the output kept instead (its own generation_config.json)."""

    spec = spec_of_weights(path)
    if spec is None:  # an .npz, or a .safetensors not written by tfm
        raise SpecError(
            f"{path}: carries no tfm spec, so no model to write as a folder; convert from the .safetensors that "
            "tfm init or tfm convert FOLDER writes (it holds the spec and the config.json)"
        )
    if config_path is not None:
        config, own = load_config(config_path)
    else:
        stored = safetensors_io.peek(path)[1].get("hf_config")
        if stored is None:
            raise SpecError(f"{path}: holds no Hugging Face config ('hf_config'); name one with --config CONFIG")
        config = stored_config(stored, f"{path}: metadata 'hf_config'")
        own = spec_of_config(config, f"{path}: metadata 'hf_config'")
    own = _optional_as_in(own, spec, config)
    if own.model_keys() != spec.model_keys():
        differ = spec.differing_keys(own)
        raise SpecError(f"{config_path or path}: the config is another model ({', '.join(differ)} differ)")
    weights = load_weights(path, spec)
    if dtype is None:  # the file's, or bfloat16 where it came from a bfloat16 folder (float32 holds it exactly)
        dtype = next(iter(weights.values())).dtype
        if dtype == np.float32 and (config.get("dtype") or config.get("torch_dtype")) == "bfloat16":
            dtype = BFLOAT16
    generation = safetensors_io.peek(path)[1].get("hf_generation_config")
    extra = [(GENERATION, _text(generation))] if generation else []
    return spec, write_folder(out, spec, config, weights, BY_NAME.get(dtype, dtype), shard_bytes, overwrite, extra)


def _optional_as_in(own: Spec, spec: Spec, config: Mapping[str, Any]) -> Spec:
    """The config's spec with its optional part (a BERT pooler) as the weights have it: both are the model."""

    key = OPTIONAL.get(str(config.get("model_type")), (None,))[0]
    return replace(own, **{key: getattr(spec, key)}) if key and getattr(own, key) and not getattr(spec, key) else own
