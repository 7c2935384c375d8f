"""llama.cpp's own logits on the GGUF files the tests write, beside tfm's and transformers' (the reference
tests/formats/test_gguf.py holds to 1e-10): how far llama.cpp, computing in float32, is from both.

llama-cpp-python builds llama.cpp from source (a C++ toolchain and cmake; minutes on 2 cores), in its own venv:

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python==0.3.36
    python benchmarks/gguf_llama_cpp.py --llama-python /tmp/lcpp/bin/python --json benchmarks/gguf_llama_cpp.json

(`--families A B --types F32 Q8_0` for some; the JSON keeps the other rows; `--written-by tfm` for the files
`tfm convert FOLDER -o FILE.gguf` writes, rows marked "(tfm's file)".)

Each file is the test's (the converter's steps) with `tokenizer.ggml.model = "no_vocab"` (and `{arch}.vocab_size`)
added, which llama.cpp needs to load a file without a tokenizer; llama.cpp runs it with an F32 KV cache
(type_k = type_v = 0; its default F16 cache alone costs about 1e-4), 2 threads, all logits. Errors are
max |a - b| / max |b| over the logits of 13 tokens.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "formats")]

RUNNER = """
import sys, numpy as np
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=64, logits_all=True, verbose=False, n_threads=2, type_k=0, type_v=0)
ids = [int(x) for x in sys.argv[2].split(",")]
llm.eval(ids)
np.save(sys.argv[3], np.array(llm.scores[: len(ids)], dtype=np.float64))
"""
TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]


WRITTEN = ("F32", "F16", "BF16", "Q8_0", "Q4_0")  # the types `tfm convert` writes (q4_k_m aside)


def _tfm_written(model, path: Path, qtype: str) -> str | None:
    """`model` saved as a folder and written by `tfm convert`; None, or what it said when it refused."""
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    folder = path.with_suffix("")
    model.save_pretrained(folder)
    ran = CliRunner().invoke(app, ["convert", str(folder), "-o", str(path), "--type", qtype.lower()])
    return None if ran.exit_code == 0 else " ".join(ran.output.split())[:200]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-python", default="/tmp/lcpp/bin/python", help="a Python with llama-cpp-python")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--families", nargs="*", default=None)
    ap.add_argument("--types", nargs="*", default=TYPES, help="GGML types to write (default: all eight)")
    ap.add_argument(
        "--written-by",
        choices=("converter", "tfm"),
        default="converter",
        help="the files: as the converter writes them (the tests' writer), or by `tfm convert FOLDER -o FILE.gguf`",
    )
    args = ap.parse_args()

    import gguf_files
    from gguf_files import dequantised_model, write_gguf
    from helpers_gguf import FAMILIES
    from helpers_hf_transformers import IDS, build, relative, theirs
    from hf_exact import exact

    from transformer_cli import Transformer
    from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf

    plain = gguf_files._metadata

    def loadable(writer, cfg) -> None:  # llama.cpp's no_vocab mode takes the vocabulary's size from {arch}.vocab_size
        plain(writer, cfg)
        writer.add_tokenizer_model("no_vocab")
        if gguf_files.ARCHS[cfg.model_type] != "LLAMA":  # (LlamaModel writes it already)
            writer.add_vocab_size(cfg.vocab_size)

    gguf_files._metadata = loadable
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.families or FAMILIES:
            for qtype in args.types:
                model = build(name)
                path = Path(tmp) / f"{name}-{qtype}.gguf"
                if args.written_by == "tfm":
                    if qtype not in WRITTEN:
                        continue
                    written = _tfm_written(model, path, qtype)
                    if written is not None:  # (refused: the architecture cannot hold this model)
                        results[f"{name} {qtype} (tfm's file)"] = {"tfm_convert_refused": written}
                        print(f"{name:24} {qtype:5} tfm convert refused: {written}", flush=True)
                        continue
                else:
                    write_gguf(model, path, qtype)
                spec = spec_from_gguf(path)
                ours = Transformer(spec, GGUFWeights(path, spec))(IDS)[0]  # (V, n) of the first sequence
                reference = theirs(exact(dequantised_model(copy.deepcopy(model), qtype)), IDS)[0]
                out = Path(tmp) / "scores.npy"
                ran = subprocess.run(
                    [args.llama_python, "-c", RUNNER, str(path), ",".join(map(str, IDS[0])), str(out)],
                    capture_output=True,
                    text=True,
                )
                row = {"tfm_vs_transformers": relative(ours, reference)}
                if ran.returncode == 0:
                    llama = np.load(out).T
                    row |= {
                        "llama_cpp_vs_tfm": relative(llama, ours),
                        "llama_cpp_vs_transformers": relative(llama, reference),
                    }
                else:
                    row["llama_cpp_error"] = (ran.stderr.strip().splitlines() or ["failed"])[-1]
                results[f"{name} {qtype}" + (" (tfm's file)" if args.written_by == "tfm" else "")] = row
                shown = " ".join(f"{k} {v:.1e}" if isinstance(v, float) else f"{k}: {v}" for k, v in row.items())
                print(f"{name:24} {qtype:5} {shown}", flush=True)
    if args.json:  # (rows of other families and types kept: a run of some updates theirs)
        kept = json.loads(args.json.read_text()) if args.json.exists() else {}
        args.json.write_text(json.dumps(kept | results, indent=2) + "\n")


if __name__ == "__main__":
    main()
