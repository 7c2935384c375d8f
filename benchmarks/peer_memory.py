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
import asyncio
import contextlib
import dataclasses
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from unittest import mock

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


# ------------------------------------------------------------------------------------------ EleutherAI calc
def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # its __main__ block does not run on import
    return mod


def _calc_locals(mod, argv: list[str]) -> dict:
    """calc_mem(args)'s local variables as it returns: the unrounded figures behind its printed GiB."""
    seen: dict = {}

    def profiler(frame, event, _arg):
        if event == "return" and frame.f_code is mod.calc_mem.__code__:
            seen.update(frame.f_locals)

    sys.setprofile(profiler)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            mod.calc_mem(mod.config_parser().parse_args(argv))
    finally:
        sys.setprofile(None)
    return seen


def eleuther_memory(model: str, f: dict, p: dict, batch: int, calc: Path) -> dict:
    """calc_transformer_mem.py with flags, once with --infer and once for training; exact figures in-process."""
    out = record(units="GiB (1024**3), two decimals: 'Total KV Cache Memory: 2.00 GiB'")
    base = ["-v", f["vocab"], "-hs", f["d"], "-a", f["heads"], "-l", f["layers"], "-ff", f["ffn"] / f["d"]]
    base += ["-nl", 3 if f["gated"] else 2, "-kv", f["kv_heads"] / f["heads"], "-b", batch]
    runs = {
        "inference": [*base, "--infer", "-s", p["eleuther_s"], "-o", p["eleuther_o"]],
        "training": [*base, "-s", p["n"]],
    }
    mod = _load_module(calc, "calc_transformer_mem")
    values = {}
    for mode, argv in runs.items():
        argv = [str(a) for a in argv]
        out["calls"].append("python calc_transformer_mem.py " + " ".join(argv))
        proc = subprocess.run([sys.executable, str(calc), *argv], capture_output=True, text=True, cwd=calc.parent)
        if proc.returncode != 0:
            out["errors"][mode] = proc.stderr.strip().splitlines()[-1]
            continue
        printed = dict(re.findall(r"^Total ([^:]+): (.+)$", proc.stdout, re.M))
        out["printed"][mode] = printed
        values[mode] = _calc_locals(mod, argv)
    inf, trn = values.get("inference"), values.get("training")
    if inf:
        out.update(
            kv_cache_bytes=num(inf["kv_cache_mem"]),
            weights_bytes=num(inf["model_mem"]),
            inference_total_bytes=num(inf["single_replica_mem_gib"] * GiB),
            inference_activation_bytes=num(inf["activation_mem"]),
        )
        out["parameters"] = num(inf["total_params"])
    if trn:
        out.update(
            training_total_bytes=num(trn["single_replica_mem_gib"] * GiB),
            training_activation_bytes=num(trn["activation_mem"]),
        )
        out["training_terms"] = {
            k: num(trn[k]) for k in ("model_mem", "gradient_mem", "optimizer_mem", "activation_mem")
        }
    if model == "t5-base":
        out["note"] = _eleuther_hf_path(mod, calc, model, p, batch)
    out["includes"] = {
        "weights": "parameters x 2 bytes; parameters = 2 V d (embedding and head always, even tied) + d x -s "
        "(a learned position table of the sequence length) + attention 2(1 + kv ratio) d^2 L + MLP nl ff d^2 L",
        "inference_total": "activations of one layer + KV cache + weights (+ misc 0)",
        "inference_activation": "one layer at the peak: s b d (16 x 2 + 2)",
        "training_total": "weights 2 B/param + gradients 4 B/param + AdamW 12 B/param (fp32 copy, m, v) + "
        "activations of all layers without checkpointing (Korthikanti et al. Table 2: s b d L (34 + 5 a s / d))",
    }
    out["assumed"] = {
        "kv_per_token_per_layer": "2 bytes x hidden_size: one d-vector, no separate K and V, -kv not used",
        "kv_tokens": "-s + -o (its default -o 1 would cache one token more; -o 0 here)",
        "head_dim": "none (hidden_size used whole)",
        "kv_heads": "none in the cache; -kv enters the parameter count only",
        "sliding_window": "no such input",
        "cross_attention_cache": "none (decoder-only)",
        "source": [
            quote(calc, "per_gpu_kv_cache_mem = bytes_per_param", "calc/calc_transformer_mem.py"),
            quote(calc, "args.hidden_size * ((16", "calc/calc_transformer_mem.py"),
        ],
    }
    return out


def _eleuther_hf_path(mod, calc: Path, model: str, p: dict, batch: int) -> str:
    """Its own Hugging Face path (--hf_model_name_or_path, a local folder works) on t5: what it does."""
    folder = str(HF_DIR / model)
    argv = ["--hf_model_name_or_path", folder, "--infer", "-o", str(p["eleuther_o"]), "-b", str(batch)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(calc), *argv, "-s", str(p["eleuther_s"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    err = proc.stderr.strip().splitlines()[-1] if proc.returncode else "no error"
    with mock.patch.dict(os.environ, {"HF_HUB_OFFLINE": "1"}), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = _calc_locals(mod, argv)
    a = seen["args"]
    return (
        "flags read t5 as a 12-layer decoder-only stack (no encoder, no cross-attention). Its own Hugging Face "
        f"path, python calc_transformer_mem.py --hf_model_name_or_path examples/hf/{model} --infer "
        f"-s {p['eleuther_s']} -o {p['eleuther_o']}, exits with {err} (given -s, it prints the config's "
        "max_position_embeddings, which T5 lacks); without -s it reads none of T5's keys (d_model, num_layers, "
        f"num_heads) and computes its built-in defaults: {a.num_layers} layers, hidden {a.hidden_size}, "
        f"{a.num_attention_heads} heads, sequence {a.sequence_length}, ffn factor {a.ffn_expansion_factor}: "
        f"weights {num(seen['model_mem'])} B, KV cache {num(seen['kv_cache_mem'])} B"
    )


# --------------------------------------------------------------------------------------------- llm-analysis
LA_GPU = "a100-sxm-80gb"
LA_DTYPE = "w16a16e16"
UNBOUNDED_GB = 10**6


def llm_analysis_memory(model: str, model_type: str, f: dict, p: dict, batch: int) -> dict:
    """llm-analysis 0.2.2 on ModelConfig(fields), a100-sxm-80gb, w16a16e16 (16-bit weights, activations, KV)."""
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import ModelConfig, get_dtype_config_by_name, get_gpu_config_by_name
    from llm_analysis.logger import logger
    from llm_analysis.utils import _num_to_string
    from peer_counts import llm_analysis_fields, quiet

    logger.setLevel(logging.ERROR)
    out = record(
        units="bytes in the dict inference()/training() return ('summary'); its log prints them with "
        "_num_to_string: round(x / 1024**3, 2) + ' GB'",
        summary={},
        lifted={},
    )
    kw = llm_analysis_fields(model, f, model_type)
    try:
        cfg = ModelConfig(**kw)
    except AssertionError as e:
        out["errors"]["ModelConfig"] = (
            f"ModelConfig(ffn_embed_dim={f['ffn']}) without expansion_ratio: AssertionError: {e}"
        )
        kw["expansion_ratio"] = f["ffn"] / f["d"]
        cfg = ModelConfig(**kw)
    gpu, dtype = get_gpu_config_by_name(LA_GPU), get_dtype_config_by_name(LA_DTYPE)
    call_args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    prefix = f"LLMAnalysis(ModelConfig({call_args}), {LA_GPU}, {LA_DTYPE})"
    with quiet():
        la = LLMAnalysis(cfg, gpu, dtype)
        layers = cfg.num_layers
        out["kv_cache_bytes"] = num(la.get_memory_kv_cache_per_layer(batch, p["n"]) * layers)
        out["weights_bytes"] = num(
            la.get_memory_embedding()
            + la.get_weight_memory_per_layer() * layers
            + la.get_weight_memory_last_layernorm()
        )
    out["calls"] += [
        f"{prefix}.get_memory_kv_cache_per_layer({batch}, {p['n']}) * {layers}",
        f"{prefix}: get_memory_embedding() + get_weight_memory_per_layer() * {layers} + "
        "get_weight_memory_last_layernorm()",
    ]

    def attempt(method: str, keys: tuple[str, ...], **kwargs) -> dict | None:
        """The call as is; if it refuses, the error, then once more with max_seq_len and GPU memory lifted."""
        out["calls"].append(f"{prefix}.{method}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
        try:
            with quiet():
                summary = getattr(LLMAnalysis(cfg, gpu, dtype), method)(**kwargs)
            out["summary"][method] = {k: num(summary[k]) for k in keys}
            out["printed"][method] = {k: f"{_num_to_string(summary[k])}B" for k in keys}
            return summary
        except (AssertionError, TypeError) as e:
            out["errors"][method] = f"{type(e).__name__}: {e}"
        lifted_cfg = dataclasses.replace(cfg, max_seq_len=max(cfg.max_seq_len or 0, p["n"]))
        lifted_gpu = dataclasses.replace(gpu, mem_per_GPU_in_GB=UNBOUNDED_GB)
        with quiet():
            summary = getattr(LLMAnalysis(lifted_cfg, lifted_gpu, dtype), method)(**kwargs)
        changed = {"gpu_memory_GB": [gpu.mem_per_GPU_in_GB, UNBOUNDED_GB]}
        if lifted_cfg.max_seq_len != cfg.max_seq_len:
            changed["max_seq_len"] = [cfg.max_seq_len, lifted_cfg.max_seq_len]
        out["lifted"][method] = {"changed": changed, **{k: num(summary[k]) for k in keys}}
        return None

    inf_keys = (
        "kv_cache_memory_per_gpu",
        "weight_memory_per_gpu",
        "prefill_activation_memory_per_gpu",
        "decode_activation_memory_per_gpu",
    )
    trn_keys = (
        "weight_memory_per_gpu",
        "gradient_memory_per_gpu",
        "optimizer_state_memory_per_gpu",
        "activation_memory_per_gpu",
        "(weight+op_state+grad+act)_memory_per_gpu",
    )
    inf = attempt(
        "inference", inf_keys, batch_size_per_gpu=batch, seq_len=p["prompt"], num_tokens_to_generate=p["generate"]
    )
    trn = attempt("training", trn_keys, batch_size_per_gpu=batch, seq_len=p["n"], mlp_gated_linear_units=f["gated"])
    if inf:
        out["inference_activation_bytes"] = num(inf["prefill_activation_memory_per_gpu"])
        assert num(inf["kv_cache_memory_per_gpu"]) == out["kv_cache_bytes"]
    if trn:
        out["training_total_bytes"] = num(trn["(weight+op_state+grad+act)_memory_per_gpu"])
        out["training_activation_bytes"] = num(trn["activation_memory_per_gpu"])
    out["includes"] = {
        "weights": "16-bit: one V x d embedding (get_num_params_embedding defaults to shared_embedding=True, so an "
        "untied head is not counted) + per layer attention 2d^2 + 2d^2 kv/H, MLP 2 d ffn (two matrices, no gate), "
        "2d norm + a final d norm",
        "inference_total": "not given: inference() only checks weights + KV cache + decode activations against "
        "the GPU's memory (and weights + prefill activations); the summary has the terms, no total",
        "inference_activation": "prefill_activation_memory_per_gpu: the largest of one layer's activations at the "
        "prompt length and the logits V x prompt x 2 bytes",
        "training_total": "(weight+op_state+grad+act)_memory_per_gpu: 16-bit weights + fp32 gradients (4 B/param) + "
        "Adam 12 B/param (fp32 master weights, m, v) + activations of all layers (flash attention, no "
        "recomputation, fp32 layernorm inputs) + the logits + the final norm; no ZeRO",
    }
    src = Path(sys.modules[LLMAnalysis.__module__].__file__)
    out["assumed"] = {
        "head_dim": num(cfg.hidden_dim / cfg.n_head),
        "kv_heads": cfg.num_key_value_heads,
        "kv_per_token_per_layer": "2 (K, V) x kv_heads x hidden_dim / n_head x 2 bytes",
        "sliding_window": "no such field in ModelConfig",
        "cross_attention_cache": "none (one stack, decoder-only)",
        "source": [
            quote(src, "head_dim = self.model_config.hidden_dim", "llm_analysis/analysis.py"),
            quote(src, "memory_kv_cache_per_layer = (2 *", "llm_analysis/analysis.py"),
        ],
    }
    return out


# --------------------------------------------------------------------------------------------- accelerate
def accelerate_memory(model: str, f: dict) -> dict:
    """accelerate estimate-memory: the command on the folder (refused), then its gather_data() on it."""
    import torch
    from accelerate import init_empty_weights
    from accelerate.commands import estimate
    from accelerate.utils import convert_bytes
    from peer_counts import quiet
    from transformers import AutoConfig, AutoModel

    folder = str(HF_DIR / model)
    out = record(units="convert_bytes: labelled 'GB' but 1024**3 bytes (GiB), round(x, 2): '14.96 GB'")
    argv = [folder, "--library_name", "transformers", "--dtypes", "float32", "float16"]
    shown = [f"examples/hf/{model}", *argv[1:]]
    out["calls"].append("HF_HUB_OFFLINE=1 accelerate estimate-memory " + " ".join(shown))
    exe = str(Path(sys.executable).parent / "accelerate")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([exe, "estimate-memory", *argv], capture_output=True, text=True, env=env)
    if proc.returncode:
        out["errors"]["command"] = proc.stderr.strip().splitlines()[-1].replace(folder, shown[0])

    def create_local_model(model_name, library_name, trust_remote_code=False, access_token=None):
        # create_empty_model's transformers branch, without the Hub look-up (verify_on_hub / model_info).
        config = AutoConfig.from_pretrained(model_name, trust_remote_code=trust_remote_code)
        with init_empty_weights():
            return AutoModel.from_config(config, torch_dtype=torch.float32, trust_remote_code=trust_remote_code)

    out["calls"].append(
        f"accelerate.commands.estimate.gather_data(estimate_command_parser().parse_args({shown!r})) with "
        "create_empty_model -> AutoModel.from_config(AutoConfig.from_pretrained(folder), torch_dtype=torch.float32) "
        "under init_empty_weights()"
    )
    with quiet(), mock.patch.object(estimate, "create_empty_model", create_local_model):
        rows = estimate.gather_data(estimate.estimate_command_parser().parse_args(argv))
    table = {}
    for dtype, largest, total, training in rows:
        table[dtype] = {
            "largest_layer": num(largest),
            "total_size": num(total),
            "training_terms": {k: num(v) for k, v in training.items()},
            "training_using_adam": num(max(training.values())),
        }
        out["printed"][dtype] = {
            "Largest Layer": convert_bytes(largest),
            "Total Size": convert_bytes(total),
            "Training using Adam": convert_bytes(max(training.values())),
        }
    out["rows"] = table
    out["weights_bytes"] = table["float16"]["total_size"]
    out["training_total_bytes"] = table["float16"]["training_using_adam"]
    with quiet():
        empty = create_local_model(folder, "transformers")
        with torch.device("meta"):
            plain = AutoModel.from_config(AutoConfig.from_pretrained(folder), torch_dtype=torch.float32)
    cls, n_empty, n_plain = (
        type(empty).__name__,
        sum(t.numel() for t in empty.parameters()),
        sum(t.numel() for t in plain.parameters()),
    )
    notes = [f"{cls}: AutoModel builds the bare model, without the output head"]
    if not f["tied"]:
        notes[0] += f" (this model's untied V x d head, {f['vocab'] * f['d']:,} parameters, is left out)"
    if n_empty != n_plain:
        notes.append(
            f"init_empty_weights makes tied weights distinct: {n_empty:,} parameters under it, {n_plain:,} for "
            "the same class on torch.device('meta')"
        )
    out["note"] = "; ".join(notes)
    out["includes"] = {
        "weights": "'Total Size' for float16: the float32 bytes of AutoModel's class (the bare model, no output "
        "head) / 2; parameters and buffers. It has no bfloat16 choice; float16 is the same size",
        "training_total": "'Training using Adam' for float16: the largest single term of estimate_training_usage "
        "(model fp32 4 B/param, gradients fp32 + fp16 6 B/param, optimizer 2 x fp32 8 B/param, step = optimizer), "
        "i.e. the optimizer's 8 B/param, not their sum; no activations. For float32 it is 'step' = 4 x fp32",
    }
    out["assumed"] = {
        "kv_cache": "not estimated",
        "activations": "not estimated",
        "cross_attention_cache": "not estimated",
        "source": [
            quote(
                Path(estimate.__file__),
                'memory_sizes["optimizer"] = fp32_size * 2  #',
                "accelerate/commands/estimate.py",
            ),
            quote(Path(estimate.__file__), "training_usage = max(item.values())", "accelerate/commands/estimate.py"),
        ],
    }
    return out


# ------------------------------------------------------------------------------------------------- hf-mem
def safetensors_header(model: str) -> bytes:
    """A model.safetensors made of its header only: names, BF16, shapes of the transformers class's parameters."""
    import torch
    from peer_counts import quiet
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    with quiet():
        config = AutoConfig.from_pretrained(HF_DIR / model)
        cls = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        with torch.device("meta"):
            net = cls.from_config(config, dtype=torch.bfloat16)
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, param in net.named_parameters():  # tied tensors once, as save_pretrained writes them
        size = param.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(param.shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    return len(blob).to_bytes(8, "little") + blob


def hf_mem_memory(model: str, hub_id: str, p: dict, batch: int) -> dict:
    """hf-mem's arun() with its HTTP client served from this machine (see the docstring)."""
    import httpx2
    from hf_mem._print import _bytes_to_gib
    from hf_mem.run import arun
    from hf_mem.safetensors import kv_cache

    files = {
        "config.json": (HF_DIR / model / "config.json").read_bytes(),
        "model.safetensors": safetensors_header(model),
    }
    served: list[str] = []

    def handler(request):
        served.append(f"{request.method} {request.url.path}")
        if request.url.path.startswith("/api/models/"):
            return httpx2.Response(200, json=[{"path": name, "type": "file"} for name in files])
        body = files[request.url.path.rsplit("/", 1)[-1]]
        if rng := request.headers.get("Range"):
            start, end = rng.removeprefix("bytes=").split("-")
            return httpx2.Response(206, content=body[int(start) : int(end) + 1])
        return httpx2.Response(200, content=body)

    client = httpx2.AsyncClient

    def offline_client(**kwargs):
        return client(**{**kwargs, "transport": httpx2.MockTransport(handler)})

    flags = dict(experimental=True, max_model_len=p["n"], batch_size=batch, kv_cache_dtype="bfloat16")
    out = record(units="GiB (1024**3), two decimals: 'KV CACHE (8192 TOKENS, 1.00 GiB)'; --json-output gives bytes")
    out["calls"].append(
        f"hf-mem --model-id {hub_id} --experimental --max-model-len {p['n']} --batch-size {batch} "
        f"--kv-cache-dtype bfloat16  (as hf_mem.run.arun(model_id={hub_id!r}, hf_token='offline', "
        + ", ".join(f"{k}={v!r}" for k, v in flags.items())
        + "), its httpx2.AsyncClient given an httpx2.MockTransport serving config.json and a safetensors header)"
    )
    with mock.patch.object(httpx2, "AsyncClient", offline_client), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = asyncio.run(arun(model_id=hub_id, hf_token="offline", **flags))
    out["served"] = served
    out["warnings"] = [str(w.message) for w in caught if "experimental" not in str(w.message)]
    out.update(
        weights_bytes=result.memory,
        kv_cache_bytes=result.kv_cache,
        inference_total_bytes=result.total_memory,
        parameters=result.safetensors.param_count,
    )
    out["printed"] = {
        k: f"{_bytes_to_gib(v):.2f} GiB"
        for k, v in (("MODEL", result.memory), ("KV CACHE", result.kv_cache), ("TOTAL", result.total_memory))
        if v is not None
    }
    if result.kv_cache is None:
        out["errors"]["kv_cache"] = "no KV cache: " + "; ".join(out["warnings"])
    raw = json.loads(files["config.json"])
    heads = raw.get("num_attention_heads")
    out["includes"] = {
        "weights": "sum over the safetensors header of numel x dtype bytes (here the synthetic BF16 header: every "
        "parameter of the *ForCausalLM / *ForConditionalGeneration class, tied tensors once)",
        "inference_total": "weights + KV cache (no activations, no framework overhead)",
    }
    out["assumed"] = {
        "head_dim": raw.get("head_dim", raw["hidden_size"] // heads) if heads and "hidden_size" in raw else None,
        "kv_heads": raw.get("num_key_value_heads", heads),
        "kv_per_token_per_layer": "2 x num_key_value_heads (default num_attention_heads) x head_dim (default "
        "hidden_size // num_attention_heads) x dtype bytes",
        "sliding_window": "capped at the window only for layers named sliding by layer_types or "
        "sliding_window_pattern; a config with sliding_window and neither counts every layer as full attention",
        "cross_attention_cache": "none; on t5 no KV cache at all: it needs hidden_size, num_hidden_layers and "
        "num_attention_heads in config.json (T5 has d_model, num_layers, num_heads) and only warns",
        "training": "not estimated (inference only)",
        "source": [
            quote(
                Path(kv_cache.__file__),
                'num_key_value_heads: int = config.get("num_key_value_heads"',
                "hf_mem/safetensors/kv_cache.py",
            ),
            quote(Path(kv_cache.__file__), 'head_dim: int = config.get("head_dim"', "hf_mem/safetensors/kv_cache.py"),
            quote(Path(kv_cache.__file__), "return num_hidden_layers, 0", "hf_mem/safetensors/kv_cache.py"),
            quote(Path(kv_cache.__file__), "total_kv_tokens = num_full_layers", "hf_mem/safetensors/kv_cache.py"),
        ],
    }
    return out


# ----------------------------------------------------------------------------------------------- gpu_poor
# Node: evaluate App.js's helpers (everything before the React component) in a vm context and call them.
GPU_POOR_JS = r"""
const fs = require("fs");
const vm = require("vm");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const src = fs.readFileSync(input.app, "utf8");
const helpers = src.slice(src.indexOf("const billion"), src.indexOf("function App()"));
const ctx = vm.createContext({ window: { location: { hostname: "localhost" } }, console: { log() {} } });
vm.runInContext(helpers, ctx);  // its function declarations become the context's globals
vm.runInContext("globalThis.gp = { getAllComputedData, getParseConfig, sanityUploadedConfig };", ctx);
const cMath = vm.runInContext("Math", ctx);
const ceil = cMath.ceil;
const results = input.cases.map((c) => {
  const r = { parsed: ctx.gp.getParseConfig(c.config, () => {}, () => {}) };
  let uploadError = null;
  ctx.gp.sanityUploadedConfig(c.config, (m) => { uploadError = m; }, () => {});
  r.upload_error = uploadError;
  for (const [mode, sel] of Object.entries(input.selections)) {
    for (const exact of [false, true]) {
      let error = null;
      cMath.ceil = exact ? (x) => x : ceil;
      const out = ctx.gp.getAllComputedData(
        c.config, null, null, c.n, 2, sel, (m) => { error = m; }, () => {}, c.batch, "no");
      cMath.ceil = ceil;
      r[mode + (exact ? "_exact" : "_shown")] = out;
      if (error) r[mode + "_error"] = error;
    }
  }
  return r;
});
process.stdout.write(JSON.stringify(results));
"""
GPU_POOR_SELECTIONS = {
    # The page's dropdowns: HF/vLLM inference or full training with Adam, no quantisation.
    "inference": {
        "dropdownTrnOrNot": "inf",
        "dropdownFullOrNot": "full_trn",
        "dropdownOpt": "adam_opt",
        "dropdownQuant": "no_quant",
    },
    "training": {
        "dropdownTrnOrNot": "trn",
        "dropdownFullOrNot": "full_trn",
        "dropdownOpt": "adam_opt",
        "dropdownQuant": "no_quant",
    },
}


def gpu_poor_memory(cases: list[dict], app: Path, node: str) -> list[dict]:
    """gpu_poor's getAllComputedData for every case in one node run; MB (MiB) turned into bytes."""
    if not node:
        reason = "not run: no node on this machine"
        return [record(errors={"all": reason}, note=reason) for _ in cases]
    payload = json.dumps({"app": str(app), "selections": GPU_POOR_SELECTIONS, "cases": cases})
    proc = subprocess.run([node, "-e", GPU_POOR_JS], input=payload, capture_output=True, text=True, check=True)
    mib = 1024 * 1024
    kv_src = quote(app, "inferenceMemory = batchSize*convertToMB(", "src/App.js")
    act_src = quote(app, "(contextLen * hiddenDim * 5 * 2 + contextLen * contextLen * heads * 2)", "src/App.js")
    outs = []
    for c, r in zip(cases, json.loads(proc.stdout), strict=True):
        inf, trn = r.get("inference_exact"), r.get("training_exact")
        out = record(units="MB (1024 * 1024 bytes), rounded up (Math.ceil) in the table the page shows")
        for mode in GPU_POOR_SELECTIONS:
            out["calls"].append(
                f"getAllComputedData(<config.json>, null, null, {c['n']}, 2, {GPU_POOR_SELECTIONS[mode]}, "
                f"setErrorMessage, openModal, {c['batch']}, 'no')"
            )
            if r.get(mode + "_error"):
                out["errors"][mode] = r[mode + "_error"]
        if inf:
            out.update(
                kv_cache_bytes=num(inf["KV Cache"] * mib),
                weights_bytes=num(inf["Model Size"] * mib),
                inference_total_bytes=num(inf["Total"] * mib),
                inference_activation_bytes=num(inf["Activation Memory"] * mib),
            )
            out["printed"]["inference"] = r["inference_shown"]
        if trn:
            out.update(
                training_total_bytes=num(trn["Total"] * mib),
                training_activation_bytes=num(trn["Activation Memory"] * mib),
            )
            out["printed"]["training"] = r["training_shown"]
            out["training_terms"] = {k: num(v * mib) for k, v in trn.items() if k not in ("Total", "KV Cache")}
        out["parsed_config"] = r["parsed"]
        out["upload_path"] = r["upload_error"] or "accepted (same fields)"
        out["includes"] = {
            "weights": "computeModelSize x 2 bytes: 2 V d + L (4 d^2 + 3 d ffn): untied, full multi-head, gated MLP, "
            "for every model",
            "inference_total": "KV cache + weights + activations + 650 MB 'cuda + other overhead'",
            "inference_activation": "batch x (n d 5 x 2 + n^2 heads x 2) bytes (one layer, with the score matrix)",
            "training_total": "weights (2 B/param) + 'Grad & Optimizer' (Adam: 3 x 2 B/param) + activations of all "
            "layers (no checkpointing) + 650 MB overhead",
        }
        out["assumed"] = {
            "head_dim": num(r["parsed"]["hiddenDim"] / r["parsed"]["heads"]),
            "kv_heads": "none: hidden_size whole (all heads)",
            "kv_per_token_per_layer": "2 (K, V) x 2 x 2 x hidden_size bytes: twice the multi-head cache",
            "sliding_window": "no such input",
            "cross_attention_cache": "none (decoder-only reading of the config)",
            "source": [kv_src, act_src],
        }
        outs.append(out)
    return outs


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
