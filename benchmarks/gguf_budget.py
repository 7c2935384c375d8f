"""GGUF files of the cold-start checkpoint under a budget (issue 42), beside llama.cpp running the same files.

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python==0.3.36 numpy
    python benchmarks/gguf_budget.py [--llama-python /tmp/lcpp/bin/python] [--json benchmarks/gguf_budget.json]

The checkpoint is benchmarks/cold_start.py's (TinyLlama-1.1B's sizes, random bfloat16 weights; built if missing).
`tfm convert` writes it as an F16 GGUF file; llama.cpp's own quantiser (`llama_model_quantize`, the function behind
`llama-quantize`, through llama-cpp-python) makes the Q4_K_M file from it: llama-quantize's mix of Q4_K and Q6_K
tensors. Both files carry `tokenizer.ggml.model = "no_vocab"`, which llama.cpp needs to load a file without a
tokenizer (tfm ignores it).

Each file is run on 96 token ids, each run a fresh process with the file in the page cache:
- `tfm run FILE --dtype float32 --max-memory 1400M` (a third of the float32 copy): its logits against the model
  with every block made up front from the same file (the library's `Model.transformer`), which must agree to the
  bit;
- llama.cpp (`Llama(...).eval(ids)`, 2 threads, all logits, its default F16 KV cache, the file memory-mapped, no
  repacking of the weights: its repacked Q4_K kernels crashed here): wall time and peak RSS, and how far its logits
  (computed with its own quantised kernels: Q8_K activations against Q4_K and Q6_K weights) are from tfm's, which
  dequantises the weights exactly and computes in float32.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import BUDGET, SIZES, TOKENS, checkpoint, measured  # noqa: E402

BUDGETS = {"F16": BUDGET, "Q4_K_M": BUDGET}  # a third of the float32 copy (4.4 GB), for each file

LOADABLE = """
import sys, gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata
reader = gguf.GGUFReader(sys.argv[1])
arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
writer = gguf.GGUFWriter(sys.argv[2], arch=arch, endianess=reader.endianess)
tokenizer = MetadataDetails(gguf.GGUFValueType.STRING, "no_vocab")
copy_with_new_metadata(reader, writer, {gguf.Keys.Tokenizer.MODEL: tokenizer}, [])
"""

QUANTIZE = """
import sys, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
params.nthread = 2
if llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), params) != 0:
    sys.exit("llama_model_quantize failed")
"""

LLAMA = """
import sys, numpy as np
import llama_cpp.llama_cpp as lc
default = lc.llama_model_default_params
def params():  # no repacking of the weights (llama.cpp's --no-repack): it crashed here on Q4_K (SIGSEGV)
    p = default()
    p.use_extra_bufts = False
    return p
lc.llama_model_default_params = params
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=128, logits_all=True, verbose=False, n_threads=2)
ids = [int(x) for x in np.load(sys.argv[2]).reshape(-1)]
llm.eval(ids)
np.save(sys.argv[3], np.array(llm.scores[: len(ids)], dtype=np.float32).T)
"""


def gguf_files(folder: Path, scratch: Path, llama_python: str | None) -> dict[str, Path]:
    """The checkpoint as an F16 GGUF file (`tfm convert`, marked no_vocab so llama.cpp loads it) and, given a Python
    with llama-cpp-python, the Q4_K_M file llama.cpp's quantiser makes from it: {"F16": ..., "Q4_K_M": ...}."""
    files = {"F16": scratch / "m-f16.gguf"}
    plain = scratch / "plain-f16.gguf"
    tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder), "-o", str(plain), "--type", "f16"]
    subprocess.run(tfm, check=True, capture_output=True)
    subprocess.run([sys.executable, "-c", LOADABLE, str(plain), str(files["F16"])], check=True, capture_output=True)
    plain.unlink()
    if llama_python:
        files["Q4_K_M"] = scratch / "m-q4_k_m.gguf"
        quantize = [llama_python, "-c", QUANTIZE, str(files["F16"]), str(files["Q4_K_M"])]
        subprocess.run(quantize, check=True, capture_output=True)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, help="the cold-start checkpoint (default: cold_start.py's)")
    parser.add_argument("--llama-python", default="/tmp/lcpp/bin/python", help="a Python with llama-cpp-python")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = tempfile.TemporaryDirectory()  # (gigabytes of files: removed at the end)
    scratch = Path(work.name)
    files = gguf_files(checkpoint(args.folder), scratch, args.llama_python)
    tfm = [sys.executable, "-m", "transformer_cli"]
    ids = scratch / "ids.npy"
    np.save(ids, np.random.default_rng(0).integers(1, SIZES["vocab_size"], size=(1, TOKENS)))

    import transformer_cli as tfm_lib

    results: dict[str, dict] = {}
    for kind, path in files.items():
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # in the page cache
        ours, theirs = scratch / f"tfm-{kind}.npy", scratch / f"llama-{kind}.npy"
        runs = {
            f"tfm run, --max-memory {BUDGETS[kind]}": [*tfm, "run", str(path), "-i", str(ids), "-o", str(ours)]
            + ["--force", "--dtype", "float32", "--max-memory", BUDGETS[kind]],
            "llama.cpp": [args.llama_python, "-c", LLAMA, str(path), str(ids), str(theirs)],
        }
        figures: dict[str, list[tuple[float, int]]] = {name: [] for name in runs}
        for r in range(args.rounds):
            for name, command in runs.items():
                figures[name].append(measured(command))
                wall, rss = figures[name][-1]
                print(f"{kind} round {r + 1} {name}: {wall:.1f} s, {rss / 1e9:.2f} GB", flush=True)
        up_front = tfm_lib.load(path).transformer("float32").forward(np.load(ids))[0]  # (V, n) of the one sequence
        got, llama = np.load(ours)[0], np.load(theirs)
        results[kind] = {
            "bytes": path.stat().st_size,
            "runs": {
                name: {
                    "wall_s": float(np.median([w for w, _ in v])),
                    "peak_rss_bytes": int(np.median([m for _, m in v])),
                }
                for name, v in figures.items()
            },
            "bounded_vs_up_front_max_rel": float(np.max(np.abs(got - up_front)) / np.max(np.abs(up_front))),
            "llama_cpp_vs_tfm_max_rel": float(np.max(np.abs(llama - got)) / np.max(np.abs(got))),
            "same_top_token": float(np.mean(np.argmax(llama, axis=0) == np.argmax(got, axis=0))),
        }
        del up_front
        print(kind, json.dumps({k: v for k, v in results[kind].items() if k != "runs"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"tokens": TOKENS, "budgets": BUDGETS, "files": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
