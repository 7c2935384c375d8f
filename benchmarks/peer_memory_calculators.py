"""The calculators of benchmarks/peer_memory.py: EleutherAI's calc_transformer_mem.py, llm-analysis and accelerate's
estimate-memory, each run on its own code (see peer_memory.py's docstring for how)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

from peer_memory_common import (
    HF_DIR,
    GiB,
    num,
    quote,
    record,
)


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
