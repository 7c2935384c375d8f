"""Record the buffers llama.cpp allocates to run a model (tests/data/llama_cpp_buffers.json, read by
tests/analysis/test_llama_cpp_plan.py): its KV cache (K and V apart, in each cache type), its recurrent states, its
compute buffer and its output buffer, as llama.cpp's own log prints them (MiB to two decimals), on the CPU.

Each small model is built random by transformers, written as a GGUF file by `tfm convert` (no tokenizer in the
folder: tfm marks the file no_vocab, which llama.cpp loads). Each full-size model (published configs in
../shared/reference/) is written by tfm's GGUF writer with its tensors' data skipped: a sparse file of the whole
size, its header tfm's, its data never read (a context's buffers need only the shapes). Each is loaded by llama.cpp's
C API through llama-cpp-python (a reference for the test data, never a dependency of tfm), without the CPU's extra
weight buffers (use_extra_bufts off: AMX repacking is this machine's), and given a context of each case's
parameters (llama_context_params: n_ctx, n_batch, n_ubatch, n_seq_max, kv_unified, type_k, type_v, flash_attn_type,
swa_full), one process a case, its stderr parsed.

    python -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install llama-cpp-python==0.3.36 numpy
    PYTHONPATH=. python scripts/record_llamacpp_buffers.py /tmp/lcpp/bin/python
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).parents[1] / "tests" / "data" / "llama_cpp_buffers.json"
VERSION = "llama-cpp-python 0.3.36 (its vendored llama.cpp), CPU backend"
_SMALL = dict(vocab_size=32000, hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
              head_dim=64, tie_word_embeddings=False)  # fmt: skip
MODELS = {  # name: (model class, config class, config, tfm convert's type)
    "llama-gqa": ("LlamaForCausalLM", "LlamaConfig", _SMALL | dict(num_hidden_layers=4), "f16"),
    "llama-heads": ("LlamaForCausalLM", "LlamaConfig", _SMALL | dict(  # (a small vocabulary: attention's buffers lead)
        vocab_size=2048, num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=4, head_dim=16), "f16"),
    "gemma3-swa": ("Gemma3ForCausalLM", "Gemma3TextConfig", _SMALL | dict(  # (5 sliding layers of 128, 1 global)
        num_hidden_layers=6, sliding_window=128, query_pre_attn_scalar=64, tie_word_embeddings=True), "f16"),
    "qwen3moe": ("Qwen3MoeForCausalLM", "Qwen3MoeConfig", _SMALL | dict(
        num_hidden_layers=4, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=128,
        norm_topk_prob=True), "q8_0"),
    "deepseek3-mla": ("DeepseekV3ForCausalLM", "DeepseekV3Config", _SMALL | dict(
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=64, q_lora_rank=96,
        qk_rope_head_dim=32, qk_nope_head_dim=64, v_head_dim=64, n_routed_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=128, first_k_dense_replace=1, n_group=1, topk_group=1, num_nextn_predict_layers=0),
        "f16"),
    "lfm2-hybrid": ("Lfm2ForCausalLM", "Lfm2Config", _SMALL | dict(  # (short convolutions and attention)
        num_hidden_layers=4, layer_types=["conv", "full_attention", "conv", "full_attention"],
        block_auto_adjust_ff_dim=False, tie_word_embeddings=True), "f16"),
    "mamba2": ("Mamba2ForCausalLM", "Mamba2Config", dict(  # (recurrent states alone)
        vocab_size=32000, hidden_size=256, num_hidden_layers=3, state_size=128, expand=2, head_dim=32, num_heads=16,
        n_groups=2, conv_kernel=4, tie_word_embeddings=False), "f16"),
}  # fmt: skip
# the tests' small mixers, as llama.cpp loads them (tests/formats/hf_models_mixers.py): a Gated DeltaNet hybrid, a
# lightning indexer's keys beside latent attention, attention beside a state space in every block, Mamba-1; their
# states are small, so many sequences (up to llama.cpp's 256) make them show in the log's two decimals of MiB
MIXERS = ("qwen3_next-gguf", "glm_moe_dsa-gguf", "falcon_h1-norm-after-gate-tied-gguf", "mamba")
REFERENCE = Path(__file__).parents[2] / "shared" / "reference"
FULL = {  # name: (published config's name, changes, file type)
    "Meta-Llama-3-8B": ("Meta-Llama-3-8B", {}, "q4_k_m"),
    "Llama-3.1-70B": ("Meta-Llama-3-70B", dict(max_position_embeddings=131072, rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=8192)), "q4_k_m"),
    "gemma-2-9b": ("gemma-2-9b", {}, "q4_k_m"),
    "gemma-3-1b-pt": ("gemma-3-1b-pt", {}, "q8_0"),
    "Qwen3-30B-A3B": ("Qwen3-30B-A3B", {}, "q4_k_m"),
    "DeepSeek-V2-Lite": ("DeepSeek-V2-Lite", {}, "q4_k_m"),
    "Mixtral-8x7B-v0.1": ("Mixtral-8x7B-v0.1", {}, "q4_k_m"),
}  # fmt: skip
_TYPES = [("q8_0", "q8_0"), ("q4_0", "q4_1"), ("bf16", "iq4_nl"), ("q5_0", "q5_1"), ("f32", "f32")]
_SHARED = [{"n_seq_max": 3}, {"n_seq_max": 2, "kv_unified": True}]


def cases(name: str, contexts: tuple[int, int] = (1000, 4096)) -> list[dict]:
    """Two contexts, two ubatch sizes, with and without flash attention (F16 caches); then K and V in other types,
    several sequences, and (sliding windows) the full-size window cache. A small mixer: its states at 1, 64 and 256
    sequences."""
    if name in MIXERS:
        base = {"n_batch": 2048, "n_ctx": 16384, "n_ubatch": 512, "flash_attn": True, "swa_full": False}
        shared = [{"n_seq_max": 64}, {"n_seq_max": 256}, {"n_seq_max": 256, "kv_unified": True}]
        return [base, *(base | extra for extra in shared)]
    out = [
        {"n_ctx": n_ctx, "n_ubatch": ubatch, "flash_attn": fa, "swa_full": False}
        for n_ctx in contexts
        for ubatch in (128, 512)
        for fa in (True, False)
    ]
    base = {"n_ctx": contexts[1], "n_ubatch": 512, "flash_attn": True, "swa_full": False}
    mla = name.lower().startswith("deepseek")  # (llama.cpp: a latent cache's K and V of one type)
    out += [base | {"type_k": k, "type_v": k if mla else v} for k, v in _TYPES]
    out += [base | {"flash_attn": False, "type_k": "q8_0"}]  # (a quantised K without flash attention)
    out += [base | {"flash_attn": False, "type_v": "q8_0"}]  # (a quantised V without: refused)
    out += [base | extra for extra in _SHARED] + [base | {"n_seq_max": 3, "flash_attn": False}]
    if name.startswith("gemma"):
        out += [base | {"swa_full": True}, base | {"n_ubatch": 128, "n_seq_max": 2}]
    return [{"n_batch": 2048} | case for case in out]


DRIVER = """
import json, sys, llama_cpp
llama_cpp.llama_backend_init()
mp = llama_cpp.llama_model_default_params()
mp.n_gpu_layers = 0
mp.use_extra_bufts = False  # (no AMX repacking: its buffer is this machine's, and llama.cpp asserts on MLA's there)
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), mp)
cp = llama_cpp.llama_context_default_params()
for k, v in json.loads(sys.argv[2]).items():
    if k in ("type_k", "type_v"):
        v = {"bf16": 30}.get(v) or getattr(llama_cpp, "GGML_TYPE_" + v.upper())  # (no name for BF16 there)
    if k == "flash_attn":
        k = "flash_attn_type"
        v = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if v else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    setattr(cp, k, v)
sys.exit(0 if model and llama_cpp.llama_init_from_model(model, cp) else 3)
"""
LINES = {  # llama.cpp's own format strings (src/llama-kv-cache.cpp, llama-memory-recurrent.cpp, llama-context.cpp)
    "kv": r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB",
    "states": r"llama_memory_recurrent: size = +([\d.]+) MiB .*R \((\w+)\): +([\d.]+) MiB, S \((\w+)\): +([\d.]+) MiB",
    "compute": r"sched_reserve: +(\S+) compute buffer size = +([\d.]+) MiB",
    "output": r"llama_context: +(\S+) +output buffer size = +([\d.]+) MiB",
    "model_buffer": r"load_tensors: +(\S+) model buffer size = +([\d.]+) MiB",
    "file": r"print_info: file size += ([\d.]+) (MiB|GiB)",
    "n_ctx": r"llama_context: n_ctx += (\d+)",
    "n_ctx_seq": r"llama_context: n_ctx_seq += (\d+)",
}


def parse(log: str) -> dict:
    found: dict = {}
    for key, pattern in LINES.items():
        hits = [m.groups() for m in re.finditer(pattern, log)]
        if key == "kv":
            found[key] = [
                {"cells": int(h[1]), "layers": int(h[2]), "streams": int(h[4]), "K": [h[5], float(h[6])],
                 "V": [h[7], float(h[8])]} for h in hits
            ]  # fmt: skip
        elif key == "states":
            found[key] = [{"R": [h[1], float(h[2])], "S": [h[3], float(h[4])]} for h in hits]
        elif key in ("compute", "output", "model_buffer"):
            found[key] = {h[0]: float(h[1]) for h in hits}
        elif hits:
            found[key] = int(hits[0][0]) if key.startswith("n_ctx") else " ".join(hits[0])
    return found


def sparse_gguf(config: dict, out: Path, qtype: str) -> None:
    """The model of `config` as tfm writes its GGUF file of `qtype`, each tensor's data skipped (a sparse file)."""
    import gguf
    import numpy as np

    from transformer_cli.gguf import write
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.hf.layouts import hf_shape, tensor_shapes

    class Skipped:
        def __init__(self, nbytes: int) -> None:
            self.nbytes = nbytes

        def tofile(self, handle) -> None:
            handle.seek(self.nbytes - 1, 1)
            handle.write(b"\0")

    def stored(data, qtype):
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        return Skipped(int(np.prod(data.shape)) // block * size)

    def joined(rule, parts, spec):  # (zeros of the tensor's shape: small ones real, for the writer's changes)
        shape = hf_shape(rule, tensor_shapes(spec))
        zeros = np.broadcast_to(np.float32(0), shape)
        return zeros.copy() if np.prod(shape) < 2**20 else zeros

    class Zeros(dict):
        def __getitem__(self, name):
            return np.broadcast_to(np.float32(0), super().__getitem__(name))

    write._stored, write.join = stored, joined  # (this process only: it writes nothing else)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        spec = spec_from_config(Path(tmp))
    write.write_gguf(out, spec, config["model_type"], Zeros(tensor_shapes(spec)), qtype, overwrite=True)


def record(llama_python: str, name: str, path: Path, contexts: tuple[int, int]) -> list[dict]:
    records = []
    for case in cases(name, contexts):
        run = [llama_python, "-c", DRIVER, str(path), json.dumps(case)]
        done = subprocess.run(run, capture_output=True, text=True)
        found = {"model": name, "params": case}
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines() if line.startswith("llama_init_from_model:")]
            records.append(found | {"refused": said[-1] if said else f"exit {done.returncode}"})
        else:
            records.append(found | parse(done.stderr))
        print(name, json.dumps(records[-1]), flush=True)
    return records


def main(llama_python: str) -> None:
    import torch
    import transformers

    from transformer_cli.hf.config import spec_from_config

    models, records = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (model_class, config_class, keys, qtype) in MODELS.items():
            torch.manual_seed(0)
            model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys))
            model.save_pretrained(folder / name)
            models[name] = {"config": json.loads((folder / name / "config.json").read_text()), "type": qtype}
            spec_from_config(folder / name)  # (tfm reads it)
            tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder / name)]
            subprocess.run([*tfm, "-o", str(folder / f"{name}.gguf"), "--type", qtype], check=True)
            records += record(llama_python, name, folder / f"{name}.gguf", (1000, 4096))
        sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "formats"))
        from hf_models_mixers import INDEXED
        from hf_models_mixers import MIXERS as SMALL

        for name in MIXERS:
            config_class, model_class, keys = (SMALL | INDEXED)[name]
            torch.manual_seed(0)
            model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys))
            model.save_pretrained(folder / name)
            models[name] = {"config": json.loads((folder / name / "config.json").read_text()), "type": "f16"}
            tfm = [sys.executable, "-m", "transformer_cli", "convert", str(folder / name)]
            subprocess.run([*tfm, "-o", str(folder / f"{name}.gguf"), "--type", "f16"], check=True)
            records += record(llama_python, name, folder / f"{name}.gguf", (16384, 16384))
        for name, (published, changes, qtype) in FULL.items():
            found = [m for f in ("real-models.json", "real-models-2.json")
                     for m in json.loads((REFERENCE / f).read_text()) if m["name"] == published]  # fmt: skip
            config = found[0]["config"] | {"model_type": found[0]["model_type"]} | changes
            models[name] = {"config": config, "type": qtype, "published": published}
            path = folder / f"{name}.gguf"
            subprocess.run([sys.executable, __file__, "--sparse", json.dumps(config), str(path), qtype], check=True)
            records += record(llama_python, name, path, (4096, 16384))
            path.unlink()
    command = "PYTHONPATH=. python scripts/record_llamacpp_buffers.py /tmp/lcpp/bin/python"
    found = {"source": VERSION, "command": command, "models": models, "cases": records}
    OUT.write_text(json.dumps(found, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    if sys.argv[1] == "--sparse":  # (in its own process: it patches tfm's writer)
        sparse_gguf(json.loads(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])
    else:
        main(sys.argv[1])
