"""Per GGUF type, tfm's logits on a file against both of the tests' references, and the bits per weight tfm reports
beside the file's real size: (1) transformers' model built from the file's dequantised weights (float64, its
float32 rotary recomputed in float64), (2) transformers' own GGUF loader (`from_pretrained(gguf_file=...)`, its own
dequantisation and its own inverse of the converter's permutation, float64).

    python benchmarks/gguf_types.py --json benchmarks/gguf_types.json

The model is a LLaMA (d 256, r 512, 4 heads, 2 key/value heads, 2 blocks, V 97, rows of 256 so that every type
holds whole blocks); F32 to Q5_1 are the gguf package's quantiser on its weights, the K-quants and IQ4 (which the
package cannot write) random blocks with moderate scales, the reference then being what the package dequantises.
Errors are max |a - b| / max |b| over the logits of 2 x 13 tokens. The loader's 1e-10 on this model is the file's
float32 rms epsilon: transformers reads it as 9.99999975e-06, tfm as the shortest decimal that stores as it (1e-05,
config.json's); with transformers' epsilon set to 1e-05 the F32 file agrees to 1.5e-15.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "formats")]

WRITTEN = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")
RANDOM = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS")


def measure(qtype: str, folder: Path) -> dict:
    import torch
    import transformers
    from gguf_files import dequantised_model, write_gguf, write_random_quantised
    from helpers_hf_transformers import IDS, relative, theirs
    from hf_exact import exact

    from transformer_cli import Transformer, count_params
    from transformer_cli.gguf.model import GGUFWeights, gguf_summary, spec_from_gguf

    cfg = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).double().eval()
    path = folder / f"{qtype}.gguf"
    if qtype in WRITTEN:
        write_gguf(model, path, qtype)
        reference = dequantised_model(copy.deepcopy(model), qtype)
    else:
        write_random_quantised(model, path, qtype)  # (the model now holds what the package dequantises)
        reference = model
    spec = spec_from_gguf(path)
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=path.name, dtype=torch.float64)
    summary = gguf_summary(path, spec)
    parameters = count_params(spec).total
    return {
        "vs_dequantised_transformers": relative(ours, theirs(exact(reference), IDS)),
        "vs_transformers_gguf_loader": relative(ours, theirs(exact(loaded.eval()), IDS)),
        "bits_per_weight_reported": summary["bits_per_weight"],
        "type_bits_per_weight": summary["types"].get(qtype, {}).get("bits_per_weight"),
        "file_bytes": path.stat().st_size,
        "file_bits_per_parameter": 8 * path.stat().st_size / parameters,
        "tensor_bits_per_parameter": 8 * summary["tensor_bytes"] / parameters,
        "parameters": parameters,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for qtype in WRITTEN + RANDOM:
            figures[qtype] = measure(qtype, Path(tmp))
            f = figures[qtype]
            print(
                f"{qtype:7} vs dequantised {f['vs_dequantised_transformers']:.1e}  vs transformers' GGUF loader "
                f"{f['vs_transformers_gguf_loader']:.1e}  bits/weight reported {f['bits_per_weight_reported']:.2f} "
                f"(the type's {f['type_bits_per_weight']})  file {f['file_bytes']:,} B = "
                f"{f['file_bits_per_parameter']:.2f} bits/parameter",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
