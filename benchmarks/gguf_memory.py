"""Peak memory of `tfm count` and `tfm run` on a GGUF file of about 1 GB, beside the file's size: count reads the
header alone; run reads one tensor at a time, dequantised into the model's own arrays (float32 or float64).

    python benchmarks/gguf_memory.py --json benchmarks/gguf_memory.json

The file is a LLaMA of 17 blocks (d 2048, 16 heads of 128, 8 key/value heads, r 5632, V 32000, untied) whose weights
are random Q8_0 blocks (scales 0.002), norms F32, written with the gguf package's writer. Peak memory is the
maximum resident set size of the command's process (GNU time's %M), in a fresh process each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

N, D, H, G, M, R, V = 17, 2048, 16, 8, 128, 5632, 32000


def write(path: Path) -> None:
    import gguf

    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in (
        ("block_count", N),
        ("embedding_length", D),
        ("feed_forward_length", R),
        ("attention.head_count", H),
        ("attention.head_count_kv", G),
        ("vocab_size", V),
        ("context_length", 4096),
        ("rope.dimension_count", M),
    ):
        writer.add_uint32(f"llama.{key}", value)
    writer.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    shapes = {"token_embd.weight": (V, D), "output.weight": (V, D), "output_norm.weight": (D,)}
    for i in range(N):
        shapes |= {
            f"blk.{i}.attn_norm.weight": (D,),
            f"blk.{i}.ffn_norm.weight": (D,),
            f"blk.{i}.attn_q.weight": (H * M, D),
            f"blk.{i}.attn_k.weight": (G * M, D),
            f"blk.{i}.attn_v.weight": (G * M, D),
            f"blk.{i}.attn_output.weight": (D, H * M),
            f"blk.{i}.ffn_gate.weight": (R, D),
            f"blk.{i}.ffn_up.weight": (R, D),
            f"blk.{i}.ffn_down.weight": (D, R),
        }
    q8 = gguf.GGMLQuantizationType.Q8_0
    scale = np.frombuffer(np.float16(0.002).tobytes(), dtype=np.uint8)
    for name, shape in shapes.items():
        if len(shape) == 1:
            writer.add_tensor(name, np.ones(shape, dtype=np.float32))
            continue
        raw = rng.integers(0, 256, size=(shape[0], shape[1] // 32, 34), dtype=np.uint8)
        raw[:, :, :2] = scale
        writer.add_tensor(name, raw.reshape(shape[0], -1), raw_dtype=q8)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def peak(command: list[str]) -> tuple[int, str]:
    """(maximum resident set size in bytes, the command's last line), GNU time's %M."""
    ran = subprocess.run(["/usr/bin/time", "-f", "PEAK %M", *command], capture_output=True, text=True)
    kib = int(next(line for line in ran.stderr.splitlines() if line.startswith("PEAK")).split()[1])
    return kib * 1024, (ran.stdout.strip().splitlines() or ran.stderr.strip().splitlines() or [""])[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    tfm = [sys.executable, "-m", "transformer_cli"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llama-1g-q8_0.gguf"
        write(path)
        np.save(Path(tmp) / "ids.npy", np.arange(64).reshape(1, 64) % V)
        size = path.stat().st_size
        out = {"file_bytes": size}
        out["count"] = peak([*tfm, "count", str(path)])[0]
        for dtype in ("float32", "float64"):
            out[f"run_{dtype}"] = peak(
                [
                    *tfm,
                    "run",
                    str(path),
                    "--input",
                    str(Path(tmp) / "ids.npy"),
                    "--dtype",
                    dtype,
                    "-o",
                    str(Path(tmp) / f"y-{dtype}.npy"),
                ]
            )[0]
        params = (
            sum(int(np.prod(s)) for s in [(V, D)] * 2) + N * (2 * D + D * (H + 2 * G) * M + D * H * M + 3 * R * D) + D
        )
        out["parameters"] = params
    for key, value in out.items():
        print(
            f"{key:14} {value:>15,}" + (f"  ({value / size:.2f}x the file)" if key.startswith(("count", "run")) else "")
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
