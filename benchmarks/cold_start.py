"""The cold start (issues 42 and 47): a LLaMA-shaped bfloat16 checkpoint of TinyLlama's dims read and run once, from
a fresh process, by `tfm run` and by transformers, with wall time and peak RSS beside each other in the same run,
rounds interleaved.

    python benchmarks/cold_start.py [--folder DIR] [--rounds 2] [--quick] [--json results.json]

The checkpoint: TinyLlama-1.1B's sizes (d = 2048, H = 32, G = 4, r = 5632, 22 blocks, V = 32000), random weights,
saved by transformers in bfloat16 as one model.safetensors (2.2 GB), built once into --folder (default: a folder
under the system's temporary directory, kept for the next run). --quick: 4 blocks instead of 22. The input: 96
token ids. Each round runs, each in a fresh process with the file in the page cache (one unmeasured read first):
- `tfm run FOLDER -i ids.npy -o y.npy` (float32, tfm's default for a checkpoint);
- `tfm run` with every block prepared just in time (the library's Transformer(keep_blocks=1), as a streamed pass);
- transformers: `from_pretrained(dtype=bfloat16)` and a forward pass; the same with dtype=float32.
Peak RSS is the run's own (os.wait4's ru_maxrss in a small process watching it: a child's figure starts at its
parent's resident size). The ratios are tfm's over transformers' bfloat16 run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SIZES = dict(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
)
TOKENS = 96

BUILD = """
import sys, torch, transformers
torch.manual_seed(0)
config = transformers.LlamaConfig(**{sizes})
model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(sys.argv[1])
"""

TRANSFORMERS = """
import sys, numpy as np, torch, transformers
dtype = getattr(torch, sys.argv[2])
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=dtype)
with torch.no_grad():
    model(torch.from_numpy(np.load(sys.argv[3])))
"""

JUST_IN_TIME = """
import sys, numpy as np
from pathlib import Path
from transformer_cli.model.transformer import Transformer
from transformer_cli.tasks.sources import load_weights, spec_at
spec, _, _ = spec_at(Path(sys.argv[1]))
model = Transformer(spec, load_weights(Path(sys.argv[1]), spec), np.float32, keep_blocks=1)
np.save(sys.argv[2], model.forward(np.load(sys.argv[3])))
"""


# the run's own peak: measured by a small intermediate process, since a child's ru_maxrss starts at its parent's
# resident size when it was forked (the benchmark's own, with the results so far) and exec keeps that figure
WATCH = """
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - start
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(child.stderr.read().decode()[-400:])
print(wall, usage.ru_maxrss * 1024)
"""


def measured(command: list[str]) -> tuple[float, int]:
    """Wall seconds and the run's own peak RSS in bytes."""
    done = subprocess.run([sys.executable, "-c", WATCH, *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed: {done.stderr[-400:]}")
    wall, rss = done.stdout.split()
    return float(wall), int(rss)


def build(folder: Path, blocks: int) -> None:
    if (folder / "model.safetensors").exists():
        return
    sizes = SIZES | {"num_hidden_layers": blocks}
    print(f"building {folder} ({blocks} blocks, bfloat16) ...", flush=True)
    subprocess.run([sys.executable, "-c", BUILD.format(sizes=sizes), str(folder)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    blocks = 4 if args.quick else SIZES["num_hidden_layers"]
    folder = args.folder or Path(tempfile.gettempdir()) / f"tfm-cold-start-{blocks}"
    build(folder, blocks)
    scratch = Path(tempfile.mkdtemp())
    ids = scratch / "ids.npy"
    np.save(ids, np.random.default_rng(0).integers(1, SIZES["vocab_size"], size=(1, TOKENS)))
    subprocess.run(["cat", str(folder / "model.safetensors")], stdout=subprocess.DEVNULL, check=True)  # cached
    runs = {
        "tfm run": [sys.executable, "-m", "transformer_cli", "run", str(folder), "-i", str(ids), "-o"],
        "tfm, blocks just in time": [sys.executable, "-c", JUST_IN_TIME, str(folder)],
        "transformers bfloat16": [sys.executable, "-c", TRANSFORMERS, str(folder), "bfloat16", str(ids)],
        "transformers float32": [sys.executable, "-c", TRANSFORMERS, str(folder), "float32", str(ids)],
    }
    results: dict[str, list[tuple[float, int]]] = {name: [] for name in runs}
    for r in range(args.rounds):
        for name, command in runs.items():
            out = scratch / f"y-{r}-{len(results[name])}.npy"
            full = command + [str(out), "--force"] if name == "tfm run" else command
            if name == "tfm, blocks just in time":
                full = command + [str(out), str(ids)]
            results[name].append(measured(full))
            print(
                f"round {r + 1} {name}: {results[name][-1][0]:.1f} s, {results[name][-1][1] / 1e9:.2f} GB", flush=True
            )
    base_wall = statistics.median(w for w, _ in results["transformers bfloat16"])
    base_rss = statistics.median(m for _, m in results["transformers bfloat16"])
    size = (folder / "model.safetensors").stat().st_size
    print(f"\n{blocks} blocks, {size / 1e9:.2f} GB of bfloat16, {TOKENS} tokens, medians of {args.rounds} rounds")
    print(f"{'':28} {'wall s':>8} {'peak GB':>8} {'wall / tr bf16':>15} {'RSS / tr bf16':>14}")
    table = {}
    for name, values in results.items():
        wall, rss = statistics.median(w for w, _ in values), statistics.median(m for _, m in values)
        table[name] = {
            "wall_s": wall,
            "peak_rss_bytes": rss,
            "wall_ratio": wall / base_wall,
            "rss_ratio": rss / base_rss,
        }
        print(f"{name:28} {wall:8.1f} {rss / 1e9:8.2f} {wall / base_wall:15.2f} {rss / base_rss:14.2f}")
    if args.json:
        args.json.write_text(json.dumps({"blocks": blocks, "bytes": size, "tokens": TOKENS, "runs": table}, indent=1))


if __name__ == "__main__":
    main()
