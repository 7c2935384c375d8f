"""Record the GGML type llama-quantize gives each tensor, for every file type it offers, on small models
(tests/data/llama_quantize_types_2.json.gz, read by tests/formats/test_gguf_mixes.py).

Each model is built small and random by transformers, written as an F32 GGUF file by `tfm convert` (no tokenizer in
the folder: tfm marks the file no_vocab, which llama.cpp loads), and quantised by llama.cpp's own
`llama_model_quantize` (the function behind `llama-quantize`, through llama-cpp-python: a reference for the test
data, never a dependency of tfm), without an importance matrix; each tensor's type is read back with gguf's
GGUFReader. A file type llama.cpp refuses without an importance matrix is recorded as refused.

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python==0.3.36 numpy
    PYTHONPATH=. python scripts/record_quant_types.py /tmp/lcpp/bin/python [LLAMA_QUANTIZE]

With the path of the llama-quantize tool built from the same source (the sdist's vendor/llama.cpp: cmake -B build
-DLLAMA_BUILD_TOOLS=ON; cmake --build build --target llama-quantize), every file type is also made with an importance
matrix (one of ones for every tensor, in its legacy format), as the file types of 3 bits and fewer need one.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).parents[1] / "tests" / "data" / "llama_quantize_types_2.json.gz"
VERSION = "llama-cpp-python 0.3.36 (its vendored llama.cpp, src/llama-quant.cpp)"
FTYPES = (
    "Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ1_S IQ1_M IQ2_XXS "
    "IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE F16 BF16"
).split()
_LLAMA = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
              head_dim=64, rms_norm_eps=1e-6, tie_word_embeddings=False)  # fmt: skip
MODELS = {  # name: (model class, config class, config)
    "llama8": ("LlamaForCausalLM", "LlamaConfig", _LLAMA | dict(num_hidden_layers=8)),
    "llama16-gqa4-tied": ("LlamaForCausalLM", "LlamaConfig", _LLAMA | dict(  # (n_gqa 4: i-quants' attn_v rule)
        num_hidden_layers=16, num_attention_heads=8, num_key_value_heads=2, head_dim=32, tie_word_embeddings=True)),
    "llama4-rows96": ("LlamaForCausalLM", "LlamaConfig", _LLAMA | dict(  # (rows of 96: no whole blocks of 256)
        num_hidden_layers=4, hidden_size=96, intermediate_size=160, num_attention_heads=3, num_key_value_heads=3,
        head_dim=32)),
    "mixtral4-8experts": ("MixtralForCausalLM", "MixtralConfig", _LLAMA | dict(  # (8 experts' rules)
        num_hidden_layers=4, intermediate_size=256, num_local_experts=8, num_experts_per_tok=2)),
}  # fmt: skip

QUANTIZE = """
import sys, llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + sys.argv[3])
params.nthread = 2
sys.exit(0 if llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), params) == 0 else 3)
"""


def imatrix(path: Path, gguf_file: Path) -> None:
    """An importance matrix of ones for every tensor of two or more axes (its rows' length, times its experts), in
    llama.cpp's legacy format: the entries, each its name, one call and its values; then the chunks (1)."""
    import struct

    import gguf

    entries = []
    for t in gguf.GGUFReader(gguf_file).tensors:
        shape = [int(x) for x in t.shape]  # (GGML's order: the row's length first)
        if len(shape) >= 2 and t.name.endswith("weight"):
            entries.append((t.name, shape[0] * (shape[2] if len(shape) > 2 else 1)))
    out = struct.pack("<i", len(entries))
    for name, count in entries:
        raw = name.encode()
        out += (
            struct.pack("<i", len(raw)) + raw + struct.pack("<ii", 1, count) + struct.pack(f"<{count}f", *[1.0] * count)
        )
    path.write_bytes(out + struct.pack("<i", 1))


def main(llama_python: str, llama_quantize: str | None = None) -> None:
    import gguf
    import torch
    import transformers

    from transformer_cli.hf.config import spec_from_config

    cases, models = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (model_class, config_class, keys) in MODELS.items():
            torch.manual_seed(0)
            model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys))
            model.save_pretrained(folder / name)
            models[name] = spec_from_config(folder / name).to_dict()
            tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder / name)]
            subprocess.run([*tfm, "-o", str(folder / f"{name}.gguf"), "--type", "f32"], check=True)
            source = folder / f"{name}.gguf"  # (marked no_vocab by tfm: the folder has no tokenizer)
            for ftype in FTYPES:
                out = folder / f"{name}-{ftype}.gguf"
                done = subprocess.run([llama_python, "-c", QUANTIZE, str(source), str(out), ftype], capture_output=True)
                case = {"model": name, "ftype": ftype}
                if done.returncode != 0:
                    said = done.stderr.decode(errors="replace").strip().splitlines()
                    cases.append(case | {"refused": said[-1] if said else f"exit {done.returncode}"})
                    continue
                reader = gguf.GGUFReader(out)
                cases.append(case | {"types": {t.name: t.tensor_type.name for t in reader.tensors}})
                out.unlink()
                print(name, ftype, "ok", flush=True)
            if llama_quantize is None:
                continue
            imatrix(folder / f"{name}.imatrix", source)
            for ftype in FTYPES:
                out = folder / f"{name}-{ftype}-imatrix.gguf"
                made = [llama_quantize, "--imatrix", str(folder / f"{name}.imatrix"), str(source), str(out), ftype]
                done = subprocess.run(made, capture_output=True)
                case = {"model": name, "ftype": ftype, "imatrix": True}
                if done.returncode != 0:
                    said = done.stderr.decode(errors="replace").strip().splitlines()
                    cases.append(case | {"refused": said[-1] if said else f"exit {done.returncode}"})
                    continue
                cases.append(case | {"types": {t.name: t.tensor_type.name for t in gguf.GGUFReader(out).tensors}})
                out.unlink()
                print(name, ftype, "with an importance matrix ok", flush=True)
    source = f"{VERSION}; no importance matrix; each tensor's type read back with gguf's GGUFReader"
    found = {"source": source, "models": models, "cases": cases}
    OUT.write_bytes(gzip.compress(json.dumps(found, separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
