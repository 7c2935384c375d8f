"""The README's worked examples: tfm plan's figures beside what five peer tools say (benchmarks/peer_memory.json,
each peer run here on its own code). Shared by the test that holds the README to them and by
`python tests/worked_examples.py`, which prints the tables to paste."""

from __future__ import annotations

import json
from pathlib import Path

from transformer_cli.analysis.memory import human
from transformer_cli.analysis.plan import plan
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).parent.parent
PEERS = json.loads((ROOT / "benchmarks" / "peer_memory.json").read_text())["examples"]
EXAMPLES = {  # the key in peer_memory.json: (the folder, b, n, n_src), all in bfloat16
    "Meta-Llama-3-8B@8k": ("Meta-Llama-3-8B", 1, 8192, None),
    "Meta-Llama-3-8B@128k": ("Meta-Llama-3-8B", 1, 131072, None),
    "Llama-2-70b@4k,b8": ("Llama-2-70b", 8, 4096, None),
    "Mistral-7B-v0.1@32k": ("Mistral-7B-v0.1", 1, 32768, None),
    "gemma-7b@8k": ("gemma-7b", 1, 8192, None),
    "falcon-7b@2k": ("falcon-7b", 1, 2048, None),
    "t5-base@512+512": ("t5-base", 1, 512, 512),
}


def _label(key: str) -> str:
    folder, b, n, n_src = EXAMPLES[key]
    source = f", source {n_src}" if n_src else ""
    return f"{folder}, n = {n:,}{source}" + (f", b = {b}" if b > 1 else "")


def _peer(key: str, peer: str, figure: str) -> str:
    value = PEERS[key]["peers"][peer].get(figure)
    if value is not None:
        return human(value)
    errors = [e for k, e in PEERS[key]["peers"][peer].get("errors", {}).items() if figure.startswith(k)]
    if errors:  # an exception, or a warning that it has no such figure ("no KV cache: ...")
        return "none" if errors[0].startswith("no ") else "refused"
    return "—"


def _tfm(key: str) -> dict:
    folder, b, n, n_src = EXAMPLES[key]
    spec = spec_from_config(ROOT / "examples" / "hf" / folder)
    return plan(spec, b, n, n_src, hardware=()).to_dict()


def kv_rows() -> list[str]:
    rows = []
    for key in EXAMPLES:
        peers = [_peer(key, p, "kv_cache_bytes") for p in ("eleuther", "llm_analysis", "hf_mem", "gpu_poor")]
        rows.append(f"| {_label(key)} | **{human(_tfm(key)['kv_cache_bytes'])}** | " + " | ".join(peers) + " |")
    return rows


def total_rows() -> list[str]:
    rows = []
    for key in EXAMPLES:
        p = _tfm(key)
        serving = f"**{human(p['serving']['fused_attention']['total'])}**"
        training = f"**{human(p['training']['total']['fused_attention'])}**"
        peers_serving = [_peer(key, x, "inference_total_bytes") for x in ("eleuther", "hf_mem", "gpu_poor")]
        peers_training = [
            _peer(key, x, "training_total_bytes") for x in ("eleuther", "accelerate", "gpu_poor", "llm_analysis")
        ]
        rows.append(
            f"| {_label(key)} | {serving} | "
            + " | ".join(peers_serving)
            + f" | {training} | "
            + " | ".join(peers_training)
            + " |"
        )
    return rows


if __name__ == "__main__":
    print("\n".join(kv_rows()))
    print()
    print("\n".join(total_rows()))
