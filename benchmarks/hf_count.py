"""How long `tfm count FOLDER` takes on a Hugging Face checkpoint of real size: it reads only the headers.

    python benchmarks/hf_count.py            # Llama-2-7B and Mixtral-8x7B shapes, bf16, sharded like the hub's

The checkpoints are made here with the real tensor names and shapes of examples/hf/<model>/config.json (as tfm
lays them out, the layout the transformers tests check) and the data left as holes in sparse files: the files
have their full size (13.5 GB for Llama-2-7B in bf16) but take no disk, and `tfm count` reads none of the data
anyway, so the timing is the one a real checkpoint gets from a warm page cache.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from transformer_cli.hf.config import config_path, read_config, spec_from_config
from transformer_cli.hf.layouts import hf_shape, rules, tensor_shapes
from transformer_cli.hf.weights import family_for

ROOT = Path(__file__).resolve().parent.parent
SHARD_BYTES = 5 << 30  # the hub's usual 5 GB shards


def sparse_checkpoint(model: str, folder: Path) -> int:
    """A sharded bf16 checkpoint of `model`'s real names and shapes, its data holes; returns its size in bytes."""
    source = ROOT / "examples" / "hf" / model
    config, spec = read_config(config_path(source)), spec_from_config(source)
    shapes = tensor_shapes(spec)
    tensors = [(rule.hf, hf_shape(rule, shapes)) for rule in rules(family_for(config), spec)]
    shards: list[list[tuple[str, tuple[int, ...]]]] = [[]]
    held = 0
    for name, shape in tensors:
        size = 2 * math.prod(shape)
        if shards[-1] and held + size > SHARD_BYTES:
            shards.append([])
            held = 0
        shards[-1].append((name, shape))
        held += size
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, 1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for name, shape in shard:
            size = 2 * math.prod(shape)
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
            weight_map[name] = file
            offset += size
        head = json.dumps(header).encode()
        head += b" " * (-len(head) % 8)
        with open(folder / file, "wb") as handle:
            handle.write(len(head).to_bytes(8, "little") + head)
            handle.truncate(8 + len(head) + offset)  # the data: a hole
        total += 8 + len(head) + offset
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(config))
    return total


def timed(args: list[str], repeat: int = 5) -> float:
    """Best wall-clock seconds of a command over `repeat` runs (after one warm-up)."""
    best = math.inf
    for i in range(repeat + 1):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        if i:
            best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    console = Console()
    table = Table(title="tfm count on a Hugging Face checkpoint folder (headers only)", title_justify="left")
    for column in ("model", "checkpoint", "shards", "tfm count FOLDER", "tfm count CONFIG (no checkpoint)"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for model in ("Llama-2-7b", "Mixtral-8x7B-v0.1"):
        with tempfile.TemporaryDirectory() as tmp:
            size = sparse_checkpoint(model, Path(tmp))
            tfm = [sys.executable, "-m", "transformer_cli", "count"]
            with_checkpoint = timed([*tfm, tmp])
            config_only = timed([*tfm, str(ROOT / "examples" / "hf" / model / "config.json")])
            shards = len(list(Path(tmp).glob("*.safetensors")))
            table.add_row(
                model,
                f"{size / 1e9:.1f} GB bf16",
                str(shards),
                f"{with_checkpoint * 1e3:.0f} ms",
                f"{config_only * 1e3:.0f} ms",
            )
    console.print(table)
    console.print("Best of 5 runs, each a new process (Python start-up and imports included).")


if __name__ == "__main__":
    main()
