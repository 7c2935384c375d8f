"""`tfm init` and `tfm convert` as library calls: which writer a source and an output name, the output checked
(never one of the inputs; an existing one replaced only with `overwrite`), then written whole or not at all.
The writers themselves are io/weights.py's and conversions.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OptionError, OutputError, TfmError
from ..io.weights import FORMATS  # tfm's weights files
from ..options import named
from ..spec.definition import Spec
from ..tasks.sources import is_hugging_face, spec_at

GGUF_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m")  # gguf/write.py's TYPES
SAVE_DTYPES = ("float64", "float32", "float16", "bfloat16")
FILE_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]*")  # '.txt', '.pt': a file's; 'Llama-3.1-8B' names a folder


@dataclass
class Written:
    """What a call wrote: the model's spec, the files, and for `init` the seed, tensors and parameters, for
    `convert` the source; to_dict() is the command's --json (without the spec)."""

    spec: Spec
    files: list[str]
    tensors: int | None = None
    parameters: int | None = None
    notes: list[str] = field(default_factory=list)  # what a GGUF file keeps of the folder's tokenizer
    kept: list[str] = field(default_factory=list)  # the output folder's own files, not replaced by the source's
    source: str | None = None  # convert's input
    seed: int | None = None  # init's: seeded weights

    def to_dict(self) -> dict[str, Any]:
        """`tfm init --json` (seeded weights: the output, the seed, tensors and parameters), else `tfm convert
        --json` (the source, the files written, the output folder's own files kept, a GGUF file's tokenizer)."""
        if self.seed is not None:
            return {"output": self.files[0], "seed": self.seed, "tensors": self.tensors, "parameters": self.parameters}
        return {"source": self.source, "written": self.files, "kept": self.kept} | (
            {"tokenizer": self.notes[0]} if self.notes else {}
        )


@named()
def init(
    path: str | Path | None, output: str | Path, seed: int = 0, overwrite: bool = False, max_memory: str | None = None
) -> Written:
    """`tfm init`: seeded float64 weights for the spec at `path` (None: the built-in default) as .npz or
    .safetensors (the spec in its metadata); for a Hugging Face config, an output without those extensions is a
    Hugging Face folder (config.json and model.safetensors in float32) that tfm and transformers load."""
    from ..analysis.memory import check_memory
    from ..io.outputs import check_folder_output, check_output_path
    from ..io.weights import weights_format
    from ..tasks.seeded import init_memory, write_init

    path = None if path is None else Path(path)
    output = Path(output)
    spec, _, _ = spec_at(path)
    if path is not None and is_hugging_face(path) and output.suffix.lower() not in FORMATS:
        from ..hf.config import read_config
        from ..tasks.seeded import init_folder, init_folder_memory

        check_folder_output(output, [path], overwrite)
        check_memory(init_folder_memory(spec, read_config(path)), max_memory, "writing these weights")
        tensors, parameters = init_folder(path, output, spec, seed, overwrite=overwrite)
    else:
        weights_format(output)
        check_output_path(output, [path], overwrite)
        check_memory(init_memory(spec, output), max_memory, "writing these weights")
        tensors, parameters = write_init(output, spec, seed, overwrite=overwrite)
    return Written(spec, [str(output)], tensors, parameters, seed=seed)


@named()
def convert(
    source: str | Path,
    output: str | Path,
    config: str | Path | None = None,
    dtype: str | None = None,
    shard_size: str | int | None = None,
    gguf_type: str = "f16",
    overwrite: bool = False,
) -> Written:
    """`tfm convert`: a Hugging Face folder to tfm's weights file (.safetensors or .npz), to another folder
    (resharded, or in another dtype) or to a GGUF file (of `gguf_type`); tfm's .safetensors back to a folder
    (its stored config, or `config`); a GGUF file to tfm's weights or to a folder. `shard_size` in bytes or with
    its unit ("5G") cuts a folder's checkpoint into shards; `dtype` is written (the source's by default)."""
    from ..analysis.units import size
    from ..io.outputs import check_folder_output, check_output_path
    from ..io.weights import weights_format

    source, output = Path(source), Path(output)
    config = None if config is None else Path(config)
    if dtype is not None and dtype not in SAVE_DTYPES:
        raise OptionError(f"--dtype {dtype}: expected one of {', '.join(SAVE_DTYPES)}")
    shard_bytes = None if shard_size is None else size(shard_size, "--shard-size")
    to_file = output.suffix.lower() in FORMATS
    _check_output_kind(source, output, to_file, config)
    if output.suffix.lower() == ".gguf":
        from ..tasks.conversions import to_gguf

        if gguf_type not in GGUF_TYPES:
            raise OptionError(f"--type {gguf_type}: expected one of {', '.join(GGUF_TYPES)}")
        if source.suffix.lower() == ".gguf":
            raise TfmError(
                f"{output}: tfm writes GGUF files from a Hugging Face folder or tfm's .safetensors; "
                f"{source} is a GGUF file already"
            )
        check_output_path(output, [source], overwrite)
        spec, _, said = to_gguf(source, output, gguf_type, overwrite=overwrite)
        return Written(spec, [str(output)], notes=[said], source=str(source))
    if source.suffix.lower() == ".gguf":
        from ..tasks.conversions import gguf_to_hugging_face, gguf_to_tfm

        if to_file:
            weights_format(output)
            check_output_path(output, [source], overwrite)
            spec, _ = gguf_to_tfm(source, output, dtype, overwrite=overwrite)
            return Written(spec, [str(output)], source=str(source))
        check_folder_output(output, [source], overwrite)
        spec, files = gguf_to_hugging_face(source, output, dtype, shard_bytes, overwrite)
        return Written(spec, [str(output / f) for f in files], source=str(source))
    if source.is_dir() and to_file:
        from ..tasks.conversions import to_tfm

        for given, option in ((shard_size, "--shard-size"), (config, "--config")):
            if given is not None:
                raise TfmError(
                    f"{option}: applies only when writing a Hugging Face folder; here the folder "
                    f"{source} is read (with its own config.json) and tfm's weights file {output} "
                    "written"
                )
        weights_format(output)
        check_output_path(output, [source], overwrite)
        spec, _ = to_tfm(source, output, dtype, overwrite=overwrite)
        return Written(spec, [str(output)], source=str(source))
    if source.is_dir():  # folder to folder: resharded, or in another dtype
        from ..tasks.conversions import reshard

        if config is not None:
            raise TfmError(
                f"--config: {source} is written again with its own config.json; --config names the "
                "config for tfm's weights file"
            )
        check_folder_output(output, [source], overwrite)
        spec, (files, kept) = reshard(source, output, dtype, shard_bytes, overwrite)
        return Written(spec, [str(output / f) for f in files], kept=[str(output / f) for f in kept], source=str(source))
    from ..tasks.conversions import to_hugging_face

    check_folder_output(output, [source, config], overwrite)
    spec, (files, kept) = to_hugging_face(source, output, config, dtype, shard_bytes, overwrite)
    return Written(spec, [str(output / f) for f in files], kept=[str(output / f) for f in kept], source=str(source))


def _check_output_kind(source: Path, output: Path, to_file: bool, config: Path | None) -> None:
    """Refuse an output `convert` cannot write as named: a file of another extension (it would be a folder of that
    name), or tfm's weights file from tfm's weights file. (An input as the output is refused first, as such.)"""
    from ..io.outputs import refuse_inputs

    refuse_inputs(output, [source, config])
    suffix = output.suffix.lower()
    if not to_file and suffix != ".gguf" and FILE_SUFFIX.fullmatch(suffix) and not output.is_dir():
        raise OutputError(
            f"{output}: tfm convert writes a folder (a new one named without an extension such as "
            f"'{output.suffix}', or an existing one), or a .safetensors, .npz or .gguf file"
        )
    if to_file and not source.is_dir() and source.suffix.lower() != ".gguf":
        raise OutputError(
            f"{output}: tfm's weights file is written from a Hugging Face folder or a GGUF file; from "
            f"{source} tfm convert writes a folder or a .gguf file"
        )
