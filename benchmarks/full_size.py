"""A full-size checkpoint on this machine (issue 42): a Llama-3-8B-shaped bfloat16 folder (16 GB) run and verified
under `--max-memory 8G`, half its bfloat16 size and a quarter of its float32 copy, from a fresh process.

    python benchmarks/full_size.py [--folder DIR] [--json results.json]

The folder: Llama-3-8B's config (d = 4096, 32 blocks, H = 32, G = 8, r = 14336, V = 128256) with random bfloat16
weights, written here once into --folder (default: under the system's temporary directory, kept for the next run),
in shards of two blocks as transformers saves them. To write 16 GB in minutes, one block's random tensors are
drawn and written for every block (the bytes differ in nothing the pass depends on: each block is read, upcast
and run as any other). Measured, each in a fresh process, the file in the page cache when it fits there:
- `tfm run FOLDER -i ids.npy -o y.npy --max-memory 8G` (16 token ids; float32, streamed);
- `tfm verify FOLDER --seq-len 16 --dtype float32 --tol 1e-4 --max-memory 8G` (every check; a given tolerance,
  since the float64 twin that sets one from the rounding needs 12.7 GiB);
- `tfm plan FOLDER -n 16 --memory 8G --hardware this`: the mode and the pass time it predicts.
Peak RSS is each run's own (a small process watching it, as benchmarks/cold_start.py measures).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from cold_start import measured  # noqa: E402 - the same watcher of a run's wall time and peak RSS

CONFIG = dict(
    architectures=["LlamaForCausalLM"],
    model_type="llama",
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)
BUDGET = "8G"
TOKENS = 16


def bfloat16(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Random bfloat16 bits (uint16) of N(0, scale^2): the float32's top halves."""
    values = (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).view(np.uint32)
    return (values >> np.uint32(16)).astype(np.uint16)


def build(folder: Path) -> None:
    """The folder, shard by shard (two blocks each; the embedding with the first, the head with the last)."""
    if (folder / "model.safetensors.index.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    print(f"building {folder} (16 GB of bfloat16) ...", flush=True)
    rng = np.random.default_rng(0)
    d, r, V, N = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"], CONFIG["num_hidden_layers"]
    kv = d // CONFIG["num_attention_heads"] * CONFIG["num_key_value_heads"]
    block = {
        "self_attn.q_proj.weight": bfloat16(rng, (d, d), d**-0.5),
        "self_attn.k_proj.weight": bfloat16(rng, (kv, d), d**-0.5),
        "self_attn.v_proj.weight": bfloat16(rng, (kv, d), d**-0.5),
        "self_attn.o_proj.weight": bfloat16(rng, (d, d), (2 * N * d) ** -0.5),
        "mlp.gate_proj.weight": bfloat16(rng, (r, d), d**-0.5),
        "mlp.up_proj.weight": bfloat16(rng, (r, d), d**-0.5),
        "mlp.down_proj.weight": bfloat16(rng, (d, r), (2 * N * r) ** -0.5),
    }
    ones = (np.ones(d, np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    shards = N // 2
    index: dict[str, str] = {}
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        tensors: dict[str, np.ndarray] = {}
        if s == 0:
            tensors["model.embed_tokens.weight"] = bfloat16(rng, (V, d), 1.0)
        for i in (2 * s, 2 * s + 1):
            tensors |= {f"model.layers.{i}.{k}": v for k, v in block.items()}
            tensors[f"model.layers.{i}.input_layernorm.weight"] = ones
            tensors[f"model.layers.{i}.post_attention_layernorm.weight"] = ones
        if s == shards - 1:
            tensors["model.norm.weight"] = ones
            tensors["lm_head.weight"] = bfloat16(rng, (V, d), d**-0.5)
        save_bfloat16(tensors, folder / name)
        index |= {k: name for k in tensors}
        print(f"  {name}", flush=True)
    (folder / "config.json").write_text(json.dumps(CONFIG, indent=1))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}, indent=1))


def save_bfloat16(tensors: dict[str, np.ndarray], path: Path) -> None:
    """A safetensors file of bfloat16 tensors given as their bits (uint16), written one after the other."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, bits in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(bits.shape), "data_offsets": [offset, offset + bits.nbytes]}
        offset += bits.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with path.open("wb") as handle:
        handle.write(len(text).to_bytes(8, "little") + text)
        for bits in tensors.values():
            np.ascontiguousarray(bits).tofile(handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "tfm-llama3-8b-bf16")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    build(args.folder)
    scratch = Path(tempfile.mkdtemp())
    ids = scratch / "ids.npy"
    np.save(ids, np.random.default_rng(0).integers(1, CONFIG["vocab_size"], size=(1, TOKENS)))
    tfm = [sys.executable, "-m", "transformer_cli"]
    folder, budget = str(args.folder), ["--max-memory", BUDGET]
    plan = subprocess.run(
        [*tfm, "plan", folder, "-n", str(TOKENS), "--memory", BUDGET, "--hardware", "this", "--json"],
        capture_output=True,
        text=True,
    )
    runs_here = json.loads(plan.stdout).get("runs_here") if plan.returncode == 0 else plan.stderr.strip()
    print(f"tfm plan: {runs_here}", flush=True)
    runs = {
        f"tfm run --max-memory {BUDGET}": [*tfm, "run", folder, "-i", str(ids), "-o", str(scratch / "y.npy"), *budget],
        f"tfm verify --seq-len {TOKENS} --tol 1e-4 --max-memory {BUDGET}": [
            *tfm,
            "verify",
            folder,
            "--seq-len",
            str(TOKENS),
            "--dtype",
            "float32",
            "--tol",
            "1e-4",
            *budget,
        ],
    }
    table = {}
    for name, command in runs.items():
        wall, rss = measured(command)
        table[name] = {"wall_s": wall, "peak_rss_bytes": rss}
        print(f"{name}: {wall:.1f} s, {rss / 1e9:.2f} GB peak", flush=True)
    if args.json:
        args.json.write_text(
            json.dumps({"budget": BUDGET, "tokens": TOKENS, "plan": runs_here, "runs": table}, indent=1)
        )


if __name__ == "__main__":
    main()
