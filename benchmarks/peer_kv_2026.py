"""What three peers say for the KV cache of 2026's models (docs/plan.md, "The KV caches of 2026's models"):
DeepSeek-V3, gpt-oss-120b and gemma-2-27b at 32,768 tokens, batch 1, bfloat16, from tests/data/real-models-2.json,
each peer run here on its own code, beside tfm's figure. Writes benchmarks/peer_kv_2026.json.

    /work/peers-venv/bin/pip install hf-mem==0.5.6   # beside peer_counts.py's environment (llm-analysis 0.2.2)
    /work/peers-venv/bin/python benchmarks/peer_kv_2026.py --eleuther-calc /work/peers/calc_transformer_mem.py \\
        --eleuther-commit 827ee3b293a63f14403f1467d08c91fda213f4e6

* hf-mem: hf_mem.safetensors.kv_cache.compute_safetensors_kv_cache_size(config, "BF16", n, batch), the config
  being the file's keys with its model_type.
* llm-analysis: LLMAnalysis(ModelConfig(layers, heads, d, V, key/value heads), ...).get_memory_kv_cache_per_layer
  (batch, n, 2 bytes) times the layers (its own GPU and parallelism defaults; the KV figure does not use them).
* EleutherAI: calc/calc_transformer_mem.py run as a command with its flags (peer_memory_calculators.eleuther_memory,
  -s n -o 0 --infer), its exact figure read in-process.
tfm's figure is tfm's own (transformer_cli.analysis.kv_cache), on the same config.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("DeepSeek-V3", "gpt-oss-120b", "gemma-2-27b")
TOKENS, BATCH = 32768, 1


def hf_mem_kv(config: dict) -> int:
    from hf_mem.safetensors.kv_cache import compute_safetensors_kv_cache_size

    return int(compute_safetensors_kv_cache_size(config, "BF16", TOKENS, BATCH))


def llm_analysis_kv(config: dict) -> int:
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import DtypeConfig, GPUConfig, ModelConfig, ParallelismConfig

    model = ModelConfig(
        name=config["model_type"],
        num_layers=config["num_hidden_layers"],
        n_head=config["num_attention_heads"],
        hidden_dim=config["hidden_size"],
        vocab_size=config["vocab_size"],
        num_key_value_heads=config.get("num_key_value_heads"),
    )
    gpu = GPUConfig(
        name="a100-80gb",
        mem_per_GPU_in_GB=80,
        hbm_bandwidth_in_GB_per_sec=2039,
        intra_node_bandwidth_in_GB_per_sec=300,
        intra_node_min_message_latency=8e-6,
        peak_fp16_TFLOPS=312,
        peak_i8_TFLOPS=624,
        peak_i4_TFLOPS=1248,
        inter_node_bandwidth_in_GB_per_sec=25,
    )
    analysis = LLMAnalysis(model, gpu, DtypeConfig(), ParallelismConfig())
    return int(analysis.get_memory_kv_cache_per_layer(BATCH, TOKENS, 2) * config["num_hidden_layers"])


def tfm_kv(config: dict) -> int:
    sys.path.insert(0, str(ROOT))
    from transformer_cli.analysis.kv_cache import kv_cache_bytes
    from transformer_cli.hf.config import spec_from_config

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps(config))
        return int(kv_cache_bytes(spec_from_config(Path(folder)), BATCH, TOKENS, "bfloat16"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eleuther-calc", type=Path, default=Path("/work/peers/calc_transformer_mem.py"))
    ap.add_argument("--eleuther-commit", default="unknown")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "peer_kv_2026.json")
    args = ap.parse_args()
    from peer_counts import fields, quiet
    from peer_memory_calculators import eleuther_memory
    from peer_memory_common import plan

    entries = {e["name"]: e for e in json.loads((ROOT / "tests/data/real-models-2.json").read_text())}
    results = {}
    for name in MODELS:
        config = {"model_type": entries[name]["model_type"]} | entries[name]["config"]
        with quiet():
            eleuther = eleuther_memory(name, fields(entries[name]), plan(name, TOKENS), BATCH, args.eleuther_calc)
            printed = eleuther["printed"].get("inference", {}).get("KV Cache Memory")
            results[name] = {
                "tfm": tfm_kv(config),
                "hf_mem": hf_mem_kv(config),
                "llm_analysis": llm_analysis_kv(config),
                "eleuther": eleuther["kv_cache_bytes"],
                "eleuther_calls": eleuther["calls"],
                "eleuther_printed": printed,
            }
        row = results[name]
        print(name, *(f"{k} {row[k]:,}" for k in ("tfm", "hf_mem", "llm_analysis", "eleuther")))
    results["_about"] = {
        "tokens": TOKENS,
        "batch": BATCH,
        "bytes_per_value": 2,
        "eleuther_cookbook_commit": args.eleuther_commit,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
