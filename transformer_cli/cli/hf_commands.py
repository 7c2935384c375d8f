"""`tfm spec` and `tfm convert`: a Hugging Face model's tfm spec, and its weights converted both ways."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import ForceOpt, JsonOpt, app, busy, err, handled, load, out, print_json, spec_json


class SaveDType(str, Enum):
    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


class GGUFType(str, Enum):
    """What `tfm convert ... -o out.gguf` writes (gguf/write.py's TYPES)."""

    f32 = "f32"
    f16 = "f16"
    bf16 = "bf16"
    q8_0 = "q8_0"
    q4_0 = "q4_0"
    q4_k_m = "q4_k_m"


@app.command()
def spec(
    spec_path: Annotated[
        Path, typer.Argument(help="A Hugging Face model (a folder with config.json, or the file), or a .gguf file.")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Print the tfm spec a Hugging Face config.json maps to, as YAML (save it to keep or edit the spec).

    \b
    Example:
      tfm spec examples/hf/Meta-Llama-3-8B > llama3-8b.yaml
    """
    import yaml

    with handled(json_out):
        spec_, source = load(spec_path)
    if json_out:
        print_json(spec_json(spec_) | {"source": source})
        return
    text = yaml.safe_dump(spec_.to_dict(), sort_keys=False, allow_unicode=False)
    print(f"# the tfm spec of the Hugging Face model {source}\n{text}", end="")


@app.command()
def convert(
    source: Annotated[
        Path,
        typer.Argument(
            help="A Hugging Face folder or a GGUF file (to tfm's weights), or tfm's .safetensors (to a folder)."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="tfm's weights (.safetensors or .npz), the folder, or the .gguf file (--type) to write.",
        ),
    ],
    config: Annotated[
        Optional[Path],
        typer.Option("--config", help="The Hugging Face config for the folder written [default: the stored one]."),
    ] = None,
    dtype: Annotated[
        Optional[SaveDType],
        typer.Option("--dtype", help="Dtype written [default: the source's; in tfm's file bfloat16 as float32]."),
    ] = None,
    shard_size: Annotated[
        Optional[str],
        typer.Option(
            "--shard-size", help="Cut a Hugging Face checkpoint into shards of this size, with its unit (5G)."
        ),
    ] = None,
    gguf_type: Annotated[
        GGUFType, typer.Option("--type", help="A GGUF file's weights (norms, routers, positions stay f32).")
    ] = "f16",  # type: ignore[assignment]
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Convert weights between a Hugging Face folder (config.json and safetensors) and tfm's weights file.

    From a folder: tfm's .safetensors (the spec, the config.json and generation_config.json in its metadata) or
    .npz; or another folder (resharded with --shard-size, or in another --dtype; the other files copied). From
    tfm's .safetensors: a folder that transformers' from_pretrained loads, with the config stored at conversion
    (or --config). The dtype stays the source's (a bfloat16 folder comes back in bfloat16) unless --dtype says.
    Written whole or not at all; an existing output is replaced only with --force, and in an
    existing folder only config.json and the checkpoint's files are (every other file in it is kept: a file of the
    source folder is copied only where it has none, and stderr names each one kept).

    A GGUF file (llama.cpp's format) is read too, to tfm's weights file (dequantised), and written from a folder
    (with its byte-level BPE tokenizer) or from tfm's file converted from one, its weights of --type (the
    architecture its model_type names).

    \b
    Examples:
      tfm convert ./tiny-llama -o tiny-llama.safetensors
      tfm convert tiny-llama.safetensors -o ./tiny-llama-again
      tfm convert ./tiny-llama -o tiny-llama-q8_0.gguf --type q8_0
    """
    from ..api.writing import convert as write

    with handled(json_out, "tfm convert holds one tensor at a time, and the name and shape of each"):
        with busy("converting", json_out):
            done = write(source, output, config, dtype and dtype.value, shard_size, gguf_type.value, force)
    spec_, written, notes = done.spec, done.files, done.notes
    from ..text import escaped as shown

    for path in done.kept:  # a diagnostic, under --json too
        err.print(f"kept {shown(path)}: the output folder's own file, not replaced by the source's", soft_wrap=True)
    if json_out:
        print_json(spec_json(spec_) | done.to_dict())  # (what tfm.convert returns)
        return
    for path in written:
        out.print(f"wrote {shown(path)}", highlight=False)
    for note in notes:
        out.print(shown(note), highlight=False, soft_wrap=True)
