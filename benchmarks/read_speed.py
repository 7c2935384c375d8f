"""How fast tfm reads a checkpoint, per format (issue 47), beside `safetensors` and `cat`, in GB/s of the file.

    python benchmarks/read_speed.py [--folder DIR] [--llama-python /tmp/lcpp/bin/python] [--json out.json]

The files are benchmarks/cold_start.py's checkpoint (TinyLlama-1.1B's sizes, random bfloat16 weights, 2.2 GB;
built if missing) as each format holds it: the folder itself, `tfm convert` to float16 and float32 folders, to four
bfloat16 shards, to tfm's own weights file (float32), and to GGUF f16, q8_0 and q4_0; with --llama-python (a Python
with llama-cpp-python), the Q4_K_M file llama.cpp's quantiser makes from the f16 one.

Each reader runs in a fresh process with the file in the page cache (`cat` first, unmeasured), and is timed from
opening the file to every tensor decoded into float32 (the dtype tfm's pass needs; float16 tensors widened too):
- tfm: a folder's or tfm file's tensors as `Checkpoint.read` decodes them (the path every command takes), a GGUF
  file's as `gguf/tensors.read_tensor` dequantises them (the gguf package's dequantisers);
- safetensors: `safetensors.numpy.load_file` (float16 and float32 only: NumPy has no bfloat16), and for bfloat16
  `safetensors.torch.load_file` with `.float()`; for GGUF, the gguf package's `GGUFReader` and `dequantize`;
- cat: the file's size over the time `cat FILE > /dev/null` takes (the page cache's speed, the ceiling).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import SIZES, build  # noqa: E402
from gguf_budget import LOADABLE, QUANTIZE  # noqa: E402

TFM = """
import sys, time, numpy as np
from pathlib import Path
start = time.perf_counter()
path = Path(sys.argv[1])
if path.suffix == ".gguf":
    from transformer_cli.gguf.header import read_header
    from transformer_cli.gguf.tensors import read_tensor
    header = read_header(path)
    for name in header.tensors:
        np.asarray(read_tensor(header, name), dtype=np.float32)
else:
    from transformer_cli.hf.checkpoint import Checkpoint
    from transformer_cli.io import safetensors_io
    if path.is_dir():
        checkpoint = Checkpoint(path)
        read = checkpoint.read
        names = list(checkpoint.tensors)
    else:
        tensors = safetensors_io.load(path)
        names, read = list(tensors), tensors.__getitem__
    for name in names:
        np.asarray(read(name), dtype=np.float32)
print(time.perf_counter() - start)
"""

PEER = """
import sys, time, numpy as np
from pathlib import Path
start = time.perf_counter()
path = Path(sys.argv[1])
if path.suffix == ".gguf":
    import gguf
    from gguf.quants import dequantize
    for t in gguf.GGUFReader(path).tensors:
        np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
else:
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    for file in files:
        if sys.argv[2] == "numpy":
            from safetensors.numpy import load_file
            for array in load_file(file).values():
                np.asarray(array, dtype=np.float32)
        else:
            import torch
            from safetensors.torch import load_file
            for tensor in load_file(file).values():
                tensor.float()
print(time.perf_counter() - start)
"""


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.safetensors")) if path.is_dir() else path.stat().st_size


def seconds(command: list[str]) -> float:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{' '.join(command[:4])} failed: {done.stderr.strip()[-300:]}", flush=True)
        return float("nan")
    return float(done.stdout.split()[-1])


def cat_seconds(path: Path) -> float:
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    start = time.perf_counter()
    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--llama-python", help="a Python with llama-cpp-python, for the Q4_K_M file")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.gettempdir()) / f"tfm-cold-start-{SIZES['num_hidden_layers']}"
    build(folder, SIZES["num_hidden_layers"])
    scratch = Path(tempfile.mkdtemp())
    tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder)]
    files = {"safetensors bf16": folder}
    for name, options in {
        "safetensors f16": ["--dtype", "float16"],
        "safetensors f32": ["--dtype", "float32"],
        "safetensors bf16, 4 shards": ["--dtype", "bfloat16", "--shard-size", "600MB"],
    }.items():
        files[name] = scratch / name.replace(" ", "-").replace(",", "")
        subprocess.run([*tfm, "-o", str(files[name]), *options], check=True, capture_output=True)
    files["tfm's .safetensors f32"] = scratch / "tfm.safetensors"
    subprocess.run([*tfm, "-o", str(files["tfm's .safetensors f32"]), "--dtype", "float32"], check=True)
    for kind in ("f16", "q8_0", "q4_0"):
        files[f"GGUF {kind}"] = scratch / f"m-{kind}.gguf"
        subprocess.run([*tfm, "-o", str(files[f"GGUF {kind}"]), "--type", kind], check=True, capture_output=True)
    if args.llama_python:
        loadable = scratch / "loadable-f16.gguf"
        subprocess.run([sys.executable, "-c", LOADABLE, str(files["GGUF f16"]), str(loadable)], check=True)
        files["GGUF Q4_K_M"] = scratch / "m-q4_k_m.gguf"
        subprocess.run([args.llama_python, "-c", QUANTIZE, str(loadable), str(files["GGUF Q4_K_M"])], check=True)
        loadable.unlink()
    results = {}
    print(f"{'':30} {'GB':>6} {'tfm GB/s':>9} {'peer GB/s':>10} {'cat GB/s':>9} {'tfm/peer':>9} {'tfm/cat':>8}")
    for name, path in files.items():
        cat_seconds(path)  # into the page cache
        peer_kind = "torch" if "bf16" in name else "numpy"
        peer = None if name.startswith("tfm's") else [sys.executable, "-c", PEER, str(path), peer_kind]
        figures: dict[str, list[float]] = {"tfm": [], "peer": [], "cat": []}
        for _ in range(args.rounds):
            figures["tfm"].append(seconds([sys.executable, "-c", TFM, str(path)]))
            if peer:
                figures["peer"].append(seconds(peer))
            figures["cat"].append(cat_seconds(path))
        gb = size(path) / 1e9
        speed = {k: gb / min(v) if v else None for k, v in figures.items()}
        results[name] = {"bytes": size(path), "seconds": figures, "gb_per_s": speed}
        results[name]["peer"] = None if not peer else ("gguf" if path.suffix == ".gguf" else f"safetensors.{peer_kind}")
        ratio = f"{speed['tfm'] / speed['peer']:9.2f}" if speed["peer"] else f"{'-':>9}"
        peer_speed = f"{speed['peer']:10.2f}" if speed["peer"] else f"{'-':>10}"
        print(
            f"{name:30} {gb:6.2f} {speed['tfm']:9.2f} {peer_speed} {speed['cat']:9.2f} {ratio}"
            f" {speed['tfm'] / speed['cat']:8.2f}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
