"""Summarise llm-analysis' JSON outputs (run_llm_analysis.sh) in GiB: the tool's "GB" strings are bytes / 1024^3.

python benchmarks/plan_peers/summarize_llm_analysis.py [folder] [tag]    # default: this folder, tag "git"
"""

import json
import sys
from pathlib import Path

GIB = 1024**3
TRAINING = ["weight", "gradient", "optimizer_state", "activation", "estimated_bwd_prefetch", "estimated_peak"]
SERVING = ["weight", "kv_cache", "prefill_activation", "decode_activation"]


def main(folder: Path, tag: str) -> None:
    for path in sorted(folder.glob(f"la_{tag}_*.json")):
        run = json.loads(path.read_text())
        parts = TRAINING if "estimated_peak_memory_per_gpu" in run else SERVING
        figures = " ".join(f"{p.replace('estimated_', '')}={run[p + '_memory_per_gpu'] / GIB:.3f}" for p in parts)
        print(path.stem, f"params={run['num_params_total']:.4g}", figures)
        if "kv_cache_memory_per_gpu" in run:  # the sum is ours: the tool prints no total for serving
            total = sum(run[p + "_memory_per_gpu"] for p in ("weight", "kv_cache", "prefill_activation"))
            print(f"   weights + KV cache + prefill activations = {total / GIB:.3f} GiB (summed here)")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here, sys.argv[2] if len(sys.argv) > 2 else "git")
