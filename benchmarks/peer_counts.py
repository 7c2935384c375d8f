"""What three peer tools say for the parameter counts of the real models in tests/data/real-models.json.

--models PATH --out PATH run it on another file of the same kind (tests/data/real-models-2.json ->
benchmarks/peer_counts_2.json); that file may name the count total_params and the class hf_class.

Each peer is run here, on the fields of that file, and its figure is set beside the published count (the sum
of numel over the transformers model's parameters, tied tensors once). Nothing is copied from elsewhere.

Environment (separate from tfm's own; these pins conflict with llm-analysis' metadata, see below):

    python -m venv /work/peers-venv
    /work/peers-venv/bin/pip install llm-analysis==0.2.2
    PIP_FIND_LINKS=/opt/wheels /work/peers-venv/bin/pip install \
        torch==2.13.0 transformers==5.24.0 accelerate==1.15.0 rich
    git --git-dir=<EleutherAI/cookbook clone> show HEAD:calc/calc_transformer_params.py \
        > /work/peers/calc_transformer_params.py
    /work/peers-venv/bin/python benchmarks/peer_counts.py --eleuther-calc /work/peers/calc_transformer_params.py \
        --eleuther-commit 827ee3b293a63f14403f1467d08c91fda213f4e6

pip reports that llm-analysis 0.2.2 wants transformers<5 and huggingface-hub<0.15; its parameter arithmetic
(llm_analysis/analysis.py) imports neither, and the only place it touches transformers (config.py,
get_model_config_from_hf: AutoConfig.from_pretrained) is used here on a local folder only, so the later
transformers does not change what it counts.

The peers:

* llm-analysis (`llm_analysis_count`): a ModelConfig built from the model's fields, then
  LLMAnalysis(...).get_num_params_total() (and get_num_active_params_total() for MoE). Where the package ships
  a config for the same architecture, the figure from that built-in config is reported too, and so is the figure
  from its own Hugging Face path (get_model_config_from_hf, given a local folder holding the config.json).
* EleutherAI's calculator (`eleuther_count`): calc/calc_transformer_params.py of EleutherAI/cookbook, run as a
  command with its argparse flags; it prints only a rounded total ("6.74 B"), so the same flags are also passed to
  its own calc_params() in-process with convert_params swapped for str(), to read the exact figure it computes.
* accelerate (`accelerate_count`): what `accelerate estimate-memory` does once the config is in hand
  (accelerate/commands/estimate.py: create_empty_model, then calculate_maximum_sizes): AutoModel.from_config
  under init_empty_weights, float32, then the total bytes of parameters and buffers. Its figure here is that
  float32 total divided by 4 bytes, i.e. the parameter count its "Total Size" implies.

A peer that cannot take a model (a flag that does not exist or refuses the value) gets null and the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "real-models.json"
OUT = Path(__file__).resolve().parent / "peer_counts.json"

GATED = {"llama", "mistral", "mixtral", "qwen2", "gemma", "phi3"}  # SwiGLU / GeGLU: three MLP matrices
GATED |= {"gemma2", "gemma3_text", "qwen3_moe", "qwen2_moe", "deepseek_v3", "deepseek_v2", "gpt_oss", "olmo2"}
GATED |= {"phimoe"}
DECODER_LAYERS = {"t5": "num_decoder_layers", "bart": "decoder_layers", "mt5": "num_decoder_layers"}
ENCODER_DECODER = set(DECODER_LAYERS)

# llm-analysis ships configs (llm_analysis/model_configs/*.json) under these names for the same architecture.
LLM_ANALYSIS_BUILTIN = {
    "gpt2": "gpt2",
    "gpt2-medium": "gpt2-medium",
    "gpt2-large": "gpt2-large",
    "gpt2-xl": "gpt2-xl",
    "bert-base-uncased": "bert-base-uncased",
    "Llama-2-7b": "NousResearch_Llama-2-7b-hf",
    "Llama-2-70b": "upstage_Llama-2-70b-instruct-v2",  # a fine-tune of Llama-2-70b: same shapes
    "bloom-560m": "bigscience_bloom-560m",
    "opt-125m": "facebook_opt-125m",
    "gpt-j-6b": "EleutherAI_gpt-j-6b",
    "gpt-neo-125m": "EleutherAI_gpt-neo-125m",
}


@contextlib.contextmanager
def quiet():
    """The peers' warnings and prints (deprecations, progress lines) kept off the table."""
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        yield


def fields(entry: dict) -> dict:
    """The architecture in one vocabulary: the file's fields, with the family's defaults from transformers."""
    from transformers import AutoConfig

    raw = entry["config"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = AutoConfig.for_model(entry["model_type"], **raw)
    t = entry["model_type"]
    d = c.hidden_size
    H = c.num_attention_heads
    if t == "falcon":
        kv = 1 if raw.get("multi_query") else H
        ffn = c.ffn_hidden_size
    else:
        kv = getattr(c, "num_key_value_heads", None) or H
        ffn_field = {"gpt2": "n_inner", "t5": "d_ff", "bart": "encoder_ffn_dim"}.get(t, "intermediate_size")
        ffn_field = {"mt5": "d_ff", "distilbert": "hidden_dim", "opt": "ffn_dim", "gptj": "n_inner"}.get(t, ffn_field)
        ffn = getattr(c, ffn_field, None) or 4 * d  # GPT-2's n_inner=None means 4d
    # MoE: the experts' count under the family's name, and one expert's width where it has its own field.
    experts = raw.get("num_local_experts") or raw.get("num_experts") or raw.get("n_routed_experts") or 1
    if experts > 1 and raw.get("moe_intermediate_size"):
        ffn = raw["moe_intermediate_size"]
    return {
        "d": d,
        "layers": c.num_hidden_layers,
        "decoder_layers": getattr(c, DECODER_LAYERS[t]) if t in ENCODER_DECODER else None,
        "heads": H,
        "kv_heads": kv,
        "head_dim": getattr(c, "head_dim", None) or d // H,
        "ffn": ffn,
        "gated": t in GATED or (t in ("t5", "mt5") and str(raw.get("feed_forward_proj", "")).startswith("gated")),
        "vocab": c.vocab_size,
        "max_len": getattr(c, "max_position_embeddings", None),
        # Read from the file, not the config object: T5Config in transformers 5.24 reports True for t5-v1_1.
        # BertModel has no output head, so its one embedding matrix counts as "tied".
        "tied": bool(raw.get("tie_word_embeddings", True)),
        "experts": experts,
        "top_k": raw.get("num_experts_per_tok", 1),
    }


def moe_unmodelled(raw: dict) -> list[str]:
    """What a model's MoE has that neither ModelConfig nor calc_transformer_params.py's flags can say."""
    notes = []
    if raw.get("n_shared_experts"):
        notes.append(f"{raw['n_shared_experts']} shared expert(s) of moe_intermediate_size per MoE layer not counted")
    if raw.get("shared_expert_intermediate_size"):
        notes.append(f"the shared expert ({raw['shared_expert_intermediate_size']} wide) and its gate not counted")
    if raw.get("first_k_dense_replace"):
        notes.append(
            f"the first {raw['first_k_dense_replace']} layers are dense ({raw['intermediate_size']} wide) "
            "but counted as MoE layers"
        )
    if raw.get("kv_lora_rank"):
        notes.append("MLA (q_lora_rank/kv_lora_rank) read as plain multi-head attention of hidden_size")
    return notes


# ---------------------------------------------------------------------------------------------- llm-analysis
def llm_analysis_fields(name: str, f: dict, model_type: str) -> dict:
    """The ModelConfig fields llm-analysis takes from a model's config (peer_memory.py uses them too)."""
    return dict(
        name=name,
        num_layers=f["layers"],
        n_head=f["heads"],
        hidden_dim=f["d"],
        vocab_size=f["vocab"],
        max_seq_len=f["max_len"],
        num_key_value_heads=f["kv_heads"],
        ffn_embed_dim=f["ffn"],
        model_type=model_type,
    )


def llm_analysis_count(entry: dict, f: dict) -> dict:
    """llm-analysis 0.2.2: LLMAnalysis(ModelConfig(...), gpu_config).get_num_params_total().

    ModelConfig gets num_layers, n_head, hidden_dim, vocab_size, max_seq_len, num_key_value_heads,
    ffn_embed_dim (the real intermediate size), model_type, moe_num_experts and moe_top_k. Its __post_init__
    asserts ffn_embed_dim % hidden_dim == 0 unless expansion_ratio is also given, so expansion_ratio =
    ffn/hidden is passed too (as the 5.16 B for Llama-2-7B in the issue needs). The GPU config (a100-sxm-40gb)
    only matters for latency, not for the count. The method takes no tied/untied switch, no head size, no bias
    and no gating (mlp_gated_linear_units only enters activation memory). An encoder-decoder has no place in
    ModelConfig (one num_layers, no cross-attention): null.
    """
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import (
        ModelConfig,
        get_gpu_config_by_name,
        get_model_config_by_name,
        get_model_config_from_hf,
    )
    from llm_analysis.logger import logger

    logger.setLevel(logging.ERROR)  # its flops-efficiency warning on every construction
    gpu = get_gpu_config_by_name("a100-sxm-40gb")
    out: dict = {"value": None, "active": None, "builtin": None, "hf_path": None, "call": None, "note": ""}

    def total(cfg: ModelConfig) -> tuple[int, int]:
        with quiet():
            a = LLMAnalysis(cfg, gpu)
        return int(a.get_num_params_total()), int(a.get_num_active_params_total())

    if entry["model_type"] in ENCODER_DECODER:
        out["note"] = "encoder-decoder: ModelConfig has one stack (num_layers) and no cross-attention"
    else:
        kw = llm_analysis_fields(entry["name"], f, entry["model_type"])
        kw |= dict(expansion_ratio=f["ffn"] / f["d"], moe_num_experts=f["experts"], moe_top_k=f["top_k"])
        call_args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        out["call"] = f"LLMAnalysis(ModelConfig({call_args}), a100-sxm-40gb).get_num_params_total()"
        out["value"], active = total(ModelConfig(**kw))
        if f["experts"] > 1:
            out["active"] = active
        out["note"] = "; ".join(moe_unmodelled(entry["config"]))

    builtin = LLM_ANALYSIS_BUILTIN.get(entry["name"])
    if builtin:
        cfg = get_model_config_by_name(builtin)
        out["builtin"] = {"config": builtin, "ffn_embed_dim": cfg.ffn_embed_dim, "value": total(cfg)[0]}

    # Its own Hugging Face path (`--model_name <hub id>`): AutoConfig on a local folder, no Hub needed.
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "config.json").write_text(json.dumps({"model_type": entry["model_type"], **entry["config"]}))
        with quiet():
            cfg = get_model_config_from_hf(tmp)
        out["hf_path"] = {"ffn_embed_dim": cfg.ffn_embed_dim, "num_layers": cfg.num_layers, "value": total(cfg)[0]}
    return out


# ------------------------------------------------------------------------------------------ EleutherAI calc
def _load_calc(path: Path):
    spec = importlib.util.spec_from_file_location("calc_transformer_params", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # its __main__ block does not run on import
    return mod


def eleuther_count(entry: dict, f: dict, calc: Path) -> dict:
    """EleutherAI cookbook calc/calc_transformer_params.py, run with its flags:

        -v vocab -hs d -s max_position_embeddings -l layers -ff ffn/d -nl (3 if gated else 2)
        -kv kv_heads/heads [--tied-embeddings] [--moe -e experts -t top_k]

    -ff is argparse type=int, so an intermediate size that is not a whole multiple of d is refused (exit 2):
    null, with the reason. The script always adds a learned position table of d * sequence_length, so -s is the
    model's max_position_embeddings (its context). Encoder-decoder (no cross-attention, one stack): null; the
    figure it gives with encoder+decoder layers as one stack is kept in the note. The printed total is rounded;
    the exact one comes from calling its calc_params() with the same argv and convert_params = str.
    """
    out: dict = {"value": None, "printed": None, "cmd": None, "note": ""}

    def argv_for(layers: int, ff) -> list[str]:
        a = [
            "-v",
            str(f["vocab"]),
            "-hs",
            str(f["d"]),
            "-s",
            str(f["max_len"] or 0),
            "-l",
            str(layers),
            "-ff",
            str(ff),
            "-nl",
            "3" if f["gated"] else "2",
            "-kv",
            repr(f["kv_heads"] / f["heads"]),
        ]
        if f["tied"]:
            a.append("--tied-embeddings")
        if f["experts"] > 1:
            a += ["--moe", "-e", str(f["experts"]), "-t", str(f["top_k"])]
        return a

    def run(argv: list[str]) -> tuple[int, str, str]:
        p = subprocess.run([sys.executable, str(calc), *argv], capture_output=True, text=True, cwd=calc.parent)
        m = re.search(r"Total Params in the Model: (.*)", p.stdout)
        last_err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        return p.returncode, (m.group(1).strip() if m else ""), last_err

    def exact(argv: list[str]) -> int:
        mod = _load_calc(calc)
        mod.convert_params = lambda n: repr(n)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mod.calc_params(mod.config_parser().parse_args(argv))
        value = float(re.search(r"Total Params in the Model: (\S+)", buf.getvalue()).group(1))
        assert value == int(value)
        return int(value)

    ff = f["ffn"] / f["d"]
    ff_arg = int(ff) if ff == int(ff) else ff
    layers = f["layers"] + (f["decoder_layers"] or 0)
    argv = argv_for(layers, ff_arg)
    out["cmd"] = "python calc_transformer_params.py " + " ".join(argv)
    rc, printed, err = run(argv)
    if rc != 0:
        out["note"] = f"-ff {ff_arg} (= {f['ffn']}/{f['d']}) refused: {err}"
        return out
    if entry["model_type"] in ENCODER_DECODER:
        out["note"] = (
            f"encoder-decoder: one decoder-only stack, no cross-attention; given encoder+decoder layers "
            f"as one stack (-l {layers}) it prints {printed} (exact {exact(argv)})"
        )
        return out
    out["printed"], out["value"] = printed, exact(argv)
    out["note"] = "; ".join(moe_unmodelled(entry["config"]))
    return out


# ---------------------------------------------------------------------------------------------------- main
def main() -> None:
    from peer_count_accelerate import accelerate_count

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_calc = os.environ.get("ELEUTHER_CALC", "/work/peers/calc_transformer_params.py")
    ap.add_argument("--eleuther-calc", type=Path, default=Path(default_calc), help="calc/calc_transformer_params.py")
    ap.add_argument(
        "--eleuther-commit",
        default=os.environ.get("ELEUTHER_COMMIT", "unknown"),
        help="the EleutherAI/cookbook commit the script was taken from, recorded in the JSON",
    )
    ap.add_argument("--models", type=Path, default=MODELS, help="a file of the kind of tests/data/real-models.json")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    from rich.console import Console
    from rich.table import Table

    entries = json.loads(args.models.read_text())
    results: dict = {}
    for e in entries:
        f = fields(e)
        la, el, ac = llm_analysis_count(e, f), eleuther_count(e, f, args.eleuther_calc), accelerate_count(e)
        results[e["name"]] = {
            "published": e["parameters"] if "parameters" in e else e["total_params"],
            "published_active": e.get("active_parameters"),
            "llm_analysis": la["value"],
            "eleuther": el["value"],
            "accelerate": ac["value"],
            "notes": {"llm_analysis": la, "eleuther": el, "accelerate": ac},
        }
        print(e["name"], "done", file=sys.stderr)

    def cell(value, published) -> str:
        if value is None:
            return "—"
        diff = value - published
        return f"{value:,}\n{diff:+,} ({100 * diff / published:+.2f}%)"

    table = Table(title="Peers' parameter counts beside the published ones (difference: peer - published)")
    for col in ("model", "published", "llm-analysis", "EleutherAI calc", "accelerate"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for name, r in results.items():
        table.add_row(
            name,
            f"{r['published']:,}",
            cell(r["llm_analysis"], r["published"])
            + (f"\nactive {a:,}" if (a := r["notes"]["llm_analysis"]["active"]) else ""),
            cell(r["eleuther"], r["published"]),
            cell(r["accelerate"], r["published"]),
        )
    console = Console(width=140)
    console.print(table)

    extra = Table(title="llm-analysis: its built-in config and its Hugging Face path (AutoConfig on the config.json)")
    for col in ("model", "published", "built-in config (ffn)", "HF path (ffn)"):
        extra.add_column(col, justify="left" if col == "model" else "right")
    for name, r in results.items():
        la = r["notes"]["llm_analysis"]
        b, h = la["builtin"], la["hf_path"]
        extra.add_row(
            name,
            f"{r['published']:,}",
            f"{cell(b['value'], r['published'])}\n{b['config']} ({b['ffn_embed_dim']})" if b else "—",
            f"{cell(h['value'], r['published'])}\n({h['ffn_embed_dim']})",
        )
    console.print(extra)

    versions = {
        "llm-analysis": version("llm-analysis"),
        "accelerate": version("accelerate"),
        "transformers": version("transformers"),
        "torch": version("torch"),
        "eleuther_cookbook_commit": args.eleuther_commit,
    }
    for r in results.values():
        r["notes"]["versions"] = versions
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
