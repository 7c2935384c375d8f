"""What five peer tools say for the memory of the worked examples: KV cache, weights, serving and training.

Each peer's own code is run here on the published config.json in examples/hf/<model>/ and every figure it
computes is recorded, exact (read in-process where it prints a rounded one), with the units it prints, the
command or call, and null plus the error where it refuses or crashes. Nothing is copied from elsewhere.

Environment (the venv of benchmarks/peer_counts.py, plus hf-mem; node for gpu_poor):

    python -m venv /work/peers-venv
    /work/peers-venv/bin/pip install llm-analysis==0.2.2
    PIP_FIND_LINKS=/opt/wheels /work/peers-venv/bin/pip install \
        torch==2.13.0 transformers==5.24.0 accelerate==1.15.0 rich
    /work/peers-venv/bin/pip install hf-mem==0.5.6
    apt-get install nodejs                      # Debian's node 20, for gpu_poor
    COOKBOOK=827ee3b293a63f14403f1467d08c91fda213f4e6 GPU_POOR=ad2fc0ef0e6ceeb7684363504eecc3342a5e7dc4
    git --git-dir=<EleutherAI/cookbook clone> show $COOKBOOK:calc/calc_transformer_mem.py \
        > /work/peers/calc_transformer_mem.py
    git --git-dir=<RahulSChand/gpu_poor clone> show $GPU_POOR:src/App.js > /work/peers/gpu_poor_App.js
    /work/peers-venv/bin/python benchmarks/peer_memory.py \
        --eleuther-calc /work/peers/calc_transformer_mem.py \
        --eleuther-commit $COOKBOOK \
        --gpu-poor-app /work/peers/gpu_poor_App.js \
        --gpu-poor-commit $GPU_POOR

Running the script touches no network: the Hub-only peers (accelerate's command, hf-mem) are given the local
folder as described below.

Tokens. A decoder-only example of context n caches n tokens: the EleutherAI calculator gets -s n -o 0, and
llm-analysis (which divides by the number of generated tokens, so needs at least one) gets a prompt of n - 1
and one generated token. Training runs at sequence length n with the example's batch. t5-base: a 512-token
source and a 512-token target; none of the peers has an encoder-decoder, so each reads t5 as one decoder-only
stack of num_layers = 12 layers (what their config readers take), seeing one sequence of n = 1024 tokens, or a
prompt of 512 (the source) and 512 generated tokens (the target) where it takes prompt and output apart. No peer
has a cross-attention cache.

The peers:

* EleutherAI cookbook calc/calc_transformer_mem.py (`eleuther_memory`): run as a command with its flags
  (-v -hs -a -l -ff -nl -kv -b -s [-o --infer]); the figures it prints are GiB with two decimals, so the same argv
  is also run in-process and the locals of its calc_mem() are read as it returns (kv_cache_mem, model_mem, ...).
  Defaults kept: mixed precision (2-byte weights, 4-byte gradients, 12 bytes of AdamW state), 1 GPU, ZeRO-1, no
  activation checkpointing.
* llm-analysis 0.2.2 (`llm_analysis_memory`): LLMAnalysis(ModelConfig(fields), a100-sxm-80gb, w16a16e16).
  ModelConfig(ffn_embed_dim=F) asserts F % hidden_dim == 0 (Llama, Mistral fail it): the error is recorded and
  expansion_ratio = F / hidden_dim is passed too, as in peer_counts.py. KV cache and weights come from its
  helpers (get_memory_kv_cache_per_layer x layers; get_memory_embedding + layers x get_weight_memory_per_layer
  + get_weight_memory_last_layernorm), the rest from its inference() and training() summaries. Where a call
  refuses (sequence above max_seq_len, weights or optimizer over the GPU's 80 GB), the error is recorded and the
  same call is made once more with those checks lifted (max_seq_len = n, the GPU's memory set to 10**6 GB), to
  read the figures it computes all the same: they are under "lifted", the main fields stay null.
* accelerate 1.15 `estimate-memory` (`accelerate_memory`): the command refuses a local folder (it asks the Hub
  first), so its gather_data() is called with create_empty_model replaced by the same steps on the local
  folder: AutoConfig.from_pretrained, then AutoModel.from_config(config, torch_dtype=float32) under
  init_empty_weights. Its rows for --dtypes float32 float16 are kept (it has no bfloat16; float16 is the same
  size).
* hf-mem 0.5.6 (`hf_mem_memory`): it only reads from the Hub (URLs are built from --model-id; there is no local
  path), so its own arun() is run with its HTTP client given an in-process transport (httpx2.MockTransport) that
  serves the local config.json and a safetensors header. No checkpoint is on this machine: the header is made
  from the transformers class (AutoModelForCausalLM / AutoModelForSeq2SeqLM on the meta device, bfloat16, tied
  tensors once): names, dtypes and shapes only, which is all hf-mem reads. Flags: --experimental
  --max-model-len n --batch-size b --kv-cache-dtype bfloat16.
* gpu_poor (`gpu_poor_memory`, JavaScript): its helpers (the part of src/App.js before the React component) are
  evaluated by node in a vm context, and getAllComputedData() is called as the page's handleClick does, with
  the config parsed by its getParseConfig (the path for a Hugging Face id) and context = prompt + output = n.
  It returns MB (MiB) rounded up with Math.ceil; the exact figures come from a second call with Math.ceil made
  the identity in that context.

Figures are bytes. A peer that works in floats gives a float; it is kept as an int when it is a whole number.
The JSON: "peers" holds each peer's units, what each figure includes and what it assumes (with the source lines
that say so); "examples" holds, per example and peer, the six figures (kv_cache_bytes, weights_bytes,
inference_total_bytes, inference_activation_bytes, training_total_bytes, training_activation_bytes; null where
the peer gives none or refuses), what it printed, the calls, the errors, and what varies with the model
(head size, KV heads, and implied_kv_elements_per_token_per_layer = KV bytes / (tokens x batch x layers x 2),
to set beside the config's 2 x KV heads x head size). Paths are shown relative to the repository.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from peer_memory_calculators import LA_GPU, accelerate_memory, eleuther_memory, llm_analysis_memory
from peer_memory_common import (
    EXAMPLES,
    OUT,
    T5_SOURCE,
    T5_TARGET,
    GiB,
    implied_kv_elements,
    load_config,
    plan,
)
from peer_memory_hub import gpu_poor_memory, hf_mem_memory

# ---------------------------------------------------------------------------------------------------- main
PEERS = ("eleuther", "llm_analysis", "accelerate", "hf_mem", "gpu_poor")


def hoist(examples: dict) -> dict:
    """Each peer's text that is the same in every example (units, what a figure includes, what it assumes and
    the source lines saying so), taken out of the examples into one entry per peer."""
    peers: dict = {}
    for name in PEERS:
        recs = [ex["peers"][name] for ex in examples.values()]
        common: dict = {"assumed": {}}
        for key in ("units", "includes"):
            if all(r[key] == recs[0][key] for r in recs):
                common[key] = recs[0][key]
                for r in recs:
                    r.pop(key, None)
        for key, value in list(recs[0]["assumed"].items()):
            if all(r["assumed"].get(key) == value for r in recs):
                common["assumed"][key] = value
                for r in recs:
                    r["assumed"].pop(key, None)
        peers[name] = common
    return peers


def gib(x) -> str:
    return "—" if x is None else f"{x / GiB:,.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eleuther-calc", type=Path, default=Path("/work/peers/calc_transformer_mem.py"))
    ap.add_argument("--eleuther-commit", default="unknown", help="EleutherAI/cookbook commit of the script")
    ap.add_argument("--gpu-poor-app", type=Path, default=Path("/work/peers/gpu_poor_App.js"))
    ap.add_argument("--gpu-poor-commit", default="unknown", help="RahulSChand/gpu_poor commit of src/App.js")
    ap.add_argument("--node", default=shutil.which("node") or "", help="node executable ('' when there is none)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    from rich.console import Console
    from rich.table import Table

    accelerate_cache: dict = {}
    examples: dict = {}
    js_cases = []
    for key, model, hub_id, n, batch in EXAMPLES:
        raw, f = load_config(model)
        p = plan(model, n)
        if model not in accelerate_cache:
            accelerate_cache[model] = accelerate_memory(model, f)
        peers = {
            "eleuther": eleuther_memory(model, f, p, batch, args.eleuther_calc),
            "llm_analysis": llm_analysis_memory(model, raw["model_type"], f, p, batch),
            "accelerate": accelerate_cache[model],
            "hf_mem": hf_mem_memory(model, hub_id, p, batch),
        }
        examples[key] = {
            "model": model,
            "hub_id": hub_id,
            "context": n,
            "batch": batch,
            "dtype": "bfloat16",
            "sliding_window": raw.get("sliding_window"),
            "tokens": p,
            "config_fields": f,
            "peers": peers,
        }
        js_cases.append({"config": raw, "n": n, "batch": batch})
        print(key, "done", file=sys.stderr)
    for (key, *_), gp in zip(EXAMPLES, gpu_poor_memory(js_cases, args.gpu_poor_app, args.node), strict=True):
        examples[key]["peers"]["gpu_poor"] = gp

    for ex in examples.values():
        f, tokens = ex["config_fields"], ex["tokens"]["n"]
        for peer in ex["peers"].values():
            if peer["kv_cache_bytes"] is not None:
                implied = implied_kv_elements(peer["kv_cache_bytes"], tokens, ex["batch"], f["layers"])
                peer["assumed"]["implied_kv_elements_per_token_per_layer"] = implied
        ex["config_kv_elements_per_token_per_layer"] = 2 * f["kv_heads"] * f["head_dim"]

    console = Console(width=160)
    labels = {
        "kv_cache_bytes": "KV",
        "weights_bytes": "weights",
        "inference_total_bytes": "serve",
        "inference_activation_bytes": "act (inf)",
        "training_total_bytes": "train",
        "training_activation_bytes": "act (train)",
    }
    for key, ex in examples.items():
        table = Table(title=f"{key} (GiB; '—' none, '!' refused: see errors)")
        table.add_column("peer")
        for label in labels.values():
            table.add_column(label, justify="right")
        for name in PEERS:
            peer = ex["peers"][name]
            cells = []
            for q in labels:
                call = "kv_cache" if q.startswith("kv") else q.split("_")[0]
                cells.append("!" if peer[q] is None and call in peer["errors"] else gib(peer[q]))
            table.add_row(name, *cells)
        console.print(table)

    result = {
        "about": __doc__.split("\n\n")[0],
        "conventions": {
            "tokens": "decoder-only: the cache holds n = context tokens (EleutherAI -s n -o 0; llm-analysis "
            "prompt n-1 + 1 generated; hf-mem --max-model-len n; gpu_poor context n); training at sequence n. "
            f"t5-base: source {T5_SOURCE} + target {T5_TARGET}, read by every peer as a 12-layer decoder-only "
            "stack over n = 1024 tokens (prompt 512 + 512 generated where a peer takes them apart)",
            "dtype": "bfloat16 (16-bit) weights, activations and KV cache; training in each peer's mixed precision",
            "gpu": f"llm-analysis: {LA_GPU}; no other peer takes a GPU for these figures",
        },
        "versions": {
            "eleuther_cookbook_commit": args.eleuther_commit,
            "llm-analysis": version("llm-analysis"),
            "accelerate": version("accelerate"),
            "hf-mem": version("hf-mem"),
            "httpx2": version("httpx2"),
            "gpu_poor_commit": args.gpu_poor_commit,
            "node": subprocess.run([args.node, "--version"], capture_output=True, text=True).stdout.strip()
            if args.node
            else None,
            "transformers": version("transformers"),
            "torch": version("torch"),
        },
        "peers": hoist(examples),
        "examples": examples,
    }
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
