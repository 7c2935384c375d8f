"""What every peer of benchmarks/peer_memory.py shares: the worked examples, the figures' names, how a figure is
recorded and quoted, the config and tfm's plan of each example."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HF_DIR = ROOT / "examples" / "hf"
OUT = Path(__file__).resolve().parent / "peer_memory.json"
GiB = 1024**3

# (key, model folder, Hugging Face id, context n, batch); t5: source + target (see the docstring).
EXAMPLES = [
    ("Meta-Llama-3-8B@8k", "Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B", 8192, 1),
    ("Meta-Llama-3-8B@128k", "Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B", 131072, 1),
    ("Llama-2-70b@4k,b8", "Llama-2-70b", "meta-llama/Llama-2-70b-hf", 4096, 8),
    ("Mistral-7B-v0.1@32k", "Mistral-7B-v0.1", "mistralai/Mistral-7B-v0.1", 32768, 1),
    ("gemma-7b@8k", "gemma-7b", "google/gemma-7b", 8192, 1),
    ("falcon-7b@2k", "falcon-7b", "tiiuae/falcon-7b", 2048, 1),
    ("t5-base@512+512", "t5-base", "google-t5/t5-base", 1024, 1),
]
T5_SOURCE, T5_TARGET = 512, 512
QUANTITIES = (
    "kv_cache_bytes",
    "weights_bytes",
    "inference_total_bytes",
    "inference_activation_bytes",
    "training_total_bytes",
    "training_activation_bytes",
)


def num(x):
    """A peer's number as it computed it: an int when it is whole, else the float."""
    if x is None:
        return None
    return int(x) if float(x).is_integer() else float(x)


def record(**kw) -> dict:
    out = dict.fromkeys(QUANTITIES)
    out.update(includes={}, printed={}, units="", calls=[], errors={}, assumed={}, note="")
    out.update(kw)
    return out


def quote(path: Path, needle: str, label: str) -> dict:
    """The source lines from the one holding `needle` until its brackets close: file, line numbers, text."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if needle in line)
    depth, end = 0, start
    for end in range(start, len(lines)):
        depth += lines[end].count("(") - lines[end].count(")")
        if depth <= 0:
            break
    return {"file": label, "lines": f"{start + 1}-{end + 1}", "text": "\n".join(lines[start : end + 1]).strip()}


def load_config(model: str) -> tuple[dict, dict]:
    """The config.json and the architecture in one vocabulary (peer_counts.fields)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peer_counts import fields, quiet

    raw = json.loads((HF_DIR / model / "config.json").read_text())
    cfg = {k: v for k, v in raw.items() if k != "model_type"}
    with quiet():
        f = fields({"name": model, "model_type": raw["model_type"], "config": cfg})
    return raw, f


def plan(model: str, n: int) -> dict:
    """Tokens as each kind of peer takes them (see the docstring)."""
    if model == "t5-base":
        return {"n": n, "prompt": T5_SOURCE, "generate": T5_TARGET, "eleuther_s": T5_SOURCE, "eleuther_o": T5_TARGET}
    return {"n": n, "prompt": n - 1, "generate": 1, "eleuther_s": n, "eleuther_o": 0}


def implied_kv_elements(kv, tokens: int, batch: int, layers: int) -> float:
    """K+V elements per token per layer that a KV figure implies at 2 bytes an element (2 x KV heads x head size)."""
    return num(kv / (tokens * batch * layers * 2))
