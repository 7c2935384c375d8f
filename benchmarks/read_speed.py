"""How fast tfm reads a checkpoint, per format (issue 47), beside `safetensors` and `cat`, in GB/s of the file.

    python benchmarks/read_speed.py [--folder DIR] [--llama-python /tmp/lcpp/bin/python] [--json out.json]

The files are benchmarks/cold_start.py's checkpoint (TinyLlama-1.1B's sizes, random bfloat16 weights, 2.2 GB;
built if missing) as each format holds it: the folder itself, `tfm convert` to float16 and float32 folders, to four
bfloat16 shards, to tfm's own weights file (float32), and to GGUF f16, q8_0 and q4_0; an FP8 folder with block
scales of 128 x 128 (DeepSeek's format, made by the tests' quantiser: the head and embedding stay bfloat16); with
--llama-python (a Python with llama-cpp-python), the Q4_K_M file llama.cpp's quantiser makes from the f16 one.

Each reader runs in a fresh process with the file in the page cache (`cat` first, unmeasured), and is timed from
opening the file to every tensor decoded into float32 (the dtype tfm's pass needs; float16 tensors widened too):
- tfm: a folder's tensors as every command reads them (tfm's weights mapping: an FP8 weight decoded and times its
  block scales), tfm's own file's as it loads, a GGUF file's as `gguf/tensors.read_tensor` dequantises them (tfm's
  own Q8_0 and Q4_0 loops, the gguf package's dequantisers for the rest);
- safetensors: `safetensors.numpy.load_file` (float16 and float32 only: NumPy has no bfloat16), and for bfloat16
  and FP8 `safetensors.torch.load_file` with `.float()` (FP8: without its scales); for GGUF, the gguf package's
  `GGUFReader` and `dequantize`;
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
from cold_start import checkpoint  # noqa: E402
from gguf_budget import gguf_files  # noqa: E402

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
elif path.is_dir():  # tfm's tensors as every command reads them (an FP8 weight times its block scales)
    import transformer_cli as tfm
    from transformer_cli.tasks.sources import load_weights
    weights = load_weights(path, tfm.load(path).spec)
    for name in weights:
        np.asarray(weights[name], dtype=np.float32)
else:
    from transformer_cli.io import safetensors_io
    for array in safetensors_io.load(path).values():
        np.asarray(array, dtype=np.float32)
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


TESTS = Path(__file__).resolve().parent.parent / "tests"
FP8 = f"""
import sys
from pathlib import Path
sys.path[:0] = [{str(TESTS)!r}, {str(TESTS / "formats")!r}]
from quantized_files import fp8_folder
fp8_folder(Path(sys.argv[1]), Path(sys.argv[2]), block=128)
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
    folder = checkpoint(args.folder)
    work = tempfile.TemporaryDirectory()  # (gigabytes of files: removed at the end)
    scratch = Path(work.name)
    tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder)]
    files = {"safetensors bf16": folder}
    for name, options in {
        "safetensors f16": ["--dtype", "float16"],
        "safetensors f32": ["--dtype", "float32"],
        "safetensors bf16, 4 shards": ["--dtype", "bfloat16", "--shard-size", "600MB"],
    }.items():
        files[name] = scratch / name.replace(" ", "-").replace(",", "")
        subprocess.run([*tfm, "-o", str(files[name]), *options], check=True, capture_output=True)
    files["safetensors FP8 (blocks of 128)"] = scratch / "fp8"
    subprocess.run([sys.executable, "-c", FP8, str(folder), str(files["safetensors FP8 (blocks of 128)"])], check=True)
    files["tfm's .safetensors f32"] = scratch / "tfm.safetensors"
    subprocess.run([*tfm, "-o", str(files["tfm's .safetensors f32"]), "--dtype", "float32"], check=True)
    made = gguf_files(folder, scratch, args.llama_python)  # F16, and Q4_K_M by llama.cpp's quantiser
    files["GGUF f16"] = made["F16"]
    for kind in ("q8_0", "q4_0"):
        files[f"GGUF {kind}"] = scratch / f"m-{kind}.gguf"
        subprocess.run([*tfm, "-o", str(files[f"GGUF {kind}"]), "--type", kind], check=True, capture_output=True)
    if "Q4_K_M" in made:
        files["GGUF Q4_K_M"] = made["Q4_K_M"]
    results = {}
    print(f"{'':30} {'GB':>6} {'tfm GB/s':>9} {'peer GB/s':>10} {'cat GB/s':>9} {'tfm/peer':>9} {'tfm/cat':>8}")
    for name, path in files.items():
        cat_seconds(path)  # into the page cache
        peer_kind = "torch" if "bf16" in name or "FP8" in name else "numpy"
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
