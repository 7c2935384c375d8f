"""`tfm plan --lora-rank R`, `--weights nf4` and `--tensor-parallel T` (issue 27, items 1-3): LoRA and QLoRA
fine-tuning and serving on two devices, on a Hugging Face folder, its figures against published and independently
computed ones, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import DATA

from transformer_cli.cli import app

LLAMA3 = Path(__file__).resolve().parent.parent.parent / "examples" / "hf" / "Meta-Llama-3-8B"
D, KV, FF, LAYERS, VOCAB = 4096, 1024, 14336, 32, 128256  # Llama-3-8B's config.json


def _plan(runner, *args: str) -> dict:
    result = runner.invoke(app, ["plan", str(LLAMA3), *args, "--hardware", "rtx-4090", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_qlora_on_llama3_8b_trains_what_peft_prints_on_a_frozen_nf4_base(runner):
    """peft prints 'trainable params: 41,943,040' for Llama-3-8B at r = 16 on every linear module; the base: the
    seven projections of each layer in NF4 (bitsandbytes' bytes), the embedding, head and norms in bfloat16."""
    lora = _plan(runner, "--weights", "nf4", "--lora-rank", "16")["training"]["lora"]
    assert lora["trainable_parameters"] == 41_943_040
    projections = [(D, D), (KV, D), (KV, D), (D, D), (FF, D), (FF, D), (D, FF)]  # q k v o gate up down: (out, in)

    def nf4(k: int) -> int:  # codes, uint8 absmax per 64, float32 per 256 absmaxes, the codes and offset
        blocks = -(-k // 64)
        return k // 2 + blocks + 4 * -(-blocks // 256) + 4 * (16 + 256 + 1)

    kept = 2 * (2 * VOCAB * D + (2 * LAYERS + 1) * D)  # embedding, head, two norms a layer and the final one
    assert lora["frozen_weights"] == kept + LAYERS * sum(nf4(o * i) for o, i in projections)
    assert lora["frozen_dtype"] == "nf4"


def test_lora_on_two_projections_keeps_less_than_on_all(runner):
    two = _plan(runner, "--lora-rank", "8", "--lora-targets", "q_proj,v_proj")["training"]
    everything = _plan(runner, "--lora-rank", "8")["training"]
    assert two["lora"]["trainable_parameters"] == LAYERS * 8 * (D + D + D + KV)  # q: d -> d, v: d -> G m
    assert two["activations"]["fused_attention"] < everything["activations"]["fused_attention"]
    full = _plan(runner)["training"]  # full fine-tuning: states for all 8B parameters
    assert full.get("lora") is None and two["states"]["total"] < full["states"]["total"] / 7


def test_the_table_names_the_frozen_base_and_the_adapters(runner):
    result = runner.invoke(
        app, ["plan", str(LLAMA3), "--weights", "nf4", "--lora-rank", "16", "--hardware", "l4"], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    assert "frozen weights (nf4)" in result.stdout and "41,943,040 trainable parameters" in result.stdout


def test_what_lora_cannot_plan_is_one_line_and_exit_2(runner, tmp_path):
    cases = {
        ("--lora-targets", "q_proj"): "--lora-targets q_proj: needs --lora-rank R",
        ("--lora-rank", "8", "--lora-targets", "q_prj"): "q_prj names no linear module of this model (its modules: "
        "down_proj, gate_proj, k_proj, o_proj, q_proj",
    }
    for args, message in cases.items():
        result = runner.invoke(app, ["plan", str(LLAMA3), *args])
        assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1
    spec = tmp_path / "moe.yaml"  # a tfm spec's targets are its own names
    spec.write_text("N: 2\nH: 2\nm: 4\nd: 8\nr: 16\nE: 4\nk: 2\nfeedforward: gated\nactivation: silu\n")
    result = runner.invoke(app, ["plan", str(spec), "--lora-rank", "8", "--lora-targets", "w1"])
    assert result.exit_code == 2 and "w1 names no linear module of this model (its modules: W1, W2" in result.output


def test_mixtral_s_lora_is_peft_s_and_its_nf4_experts_stay_in_bfloat16(runner):
    """Mixtral-8x7B, LoRA r = 8 on all-linear: peft 0.21 on transformers 5.24's model (meta device) counts
    179,832,832 trainable parameters (attention, the router, each expert's gate and up at rank 16, its down at 8);
    bitsandbytes quantises the linear modules only, so the stacked experts stay bfloat16 under nf4."""
    data = json.loads(
        runner.invoke(
            app,
            [
                "plan",
                str(LLAMA3.parent / "Mixtral-8x7B-v0.1"),
                "--lora-rank",
                "8",
                "--weights",
                "nf4",
                "--hardware",
                "h100-sxm",
                "--json",
            ],
        ).stdout
    )
    assert data["training"]["lora"]["trainable_parameters"] == 179_832_832
    experts = 32 * 3 * 8 * 4096 * 14336  # (N, gate up down, E, d, r)
    assert data["weights_bytes"]["nf4"] > 2 * experts > data["weights_bytes"]["int4"]


def test_serving_llama3_8b_on_two_devices_halves_all_but_the_norms(runner):
    """--tensor-parallel 2: each device holds half of every matrix (and of the vocabulary), all 65 norms, and
    half of the eight key/value heads' cache; it all-reduces 65 messages of d a token (32 blocks x 2, the
    embedding's), sending half of each twice (a ring)."""
    plan = _plan(runner, "-n", "8192", "--tensor-parallel", "2", "--memory", "80G")
    norms = 2 * (2 * LAYERS + 1) * D
    whole = 2 * (2 * VOCAB * D + LAYERS * (2 * D * D + 2 * KV * D + 3 * FF * D)) + norms
    split = plan["split"]
    assert split["weights"] == (whole - norms) // 2 + norms == plan["serving"]["fused_attention"]["weights"]
    assert split["kv_cache"] == 2 * 8192 * LAYERS * 4 * 128 * 2  # K and V, 4 heads of 128 a device, bfloat16
    assert split["communication_per_token"]["tensor_parallel"] == 65 * 2 * D * 2 // 2
    single = _plan(runner, "-n", "8192", "--memory", "80G")
    assert (
        plan["fits"]["fused_attention"]["max_batch_at_context"]
        > single["fits"]["fused_attention"]["max_batch_at_context"]
    )


def test_prefill_keeps_the_last_positions_logits_unless_asked_for_all(runner):
    """A serving engine's prefill multiplies each prompt's last position by the head (b V logits); --logits all
    prices a forward pass's logits of every position (b n V), the final norm's output of every position in both."""
    n = 8192
    last = _plan(runner, "-n", str(n))["serving_transient"]["fused_attention"]
    every = _plan(runner, "-n", str(n), "--logits", "all")["serving_transient"]["fused_attention"]
    assert last["logits"] == (n * D + VOCAB) * 2 and every["logits"] == n * (D + VOCAB) * 2
    assert every["total"] - last["total"] == every["logits"] - max(last["logits"], last["blocks"])


def test_a_config_under_another_name_is_the_same_model_as_its_folder(runner, tmp_path):
    """Issue 40 (18): Qwen2-7B.json was counted as Qwen2 but its LoRA modules were tfm's (`--lora-targets q_proj`
    refused): one reading of a config file, by its contents. A quantised one is planned at its method's bytes as
    its folder is; the control: a tfm spec has no module called q_proj."""
    qwen = next(m for m in json.loads((DATA / "real-models.json").read_text()) if m["name"] == "Qwen2-7B")
    config = {"model_type": qwen["model_type"]} | qwen["config"]
    (tmp_path / "folder").mkdir()
    for path in (tmp_path / "folder" / "config.json", tmp_path / "Qwen2-7B.json"):
        path.write_text(json.dumps(config))
    args = ["-n", "64", "--lora-rank", "8", "--lora-targets", "q_proj", "--json"]
    plans = [runner.invoke(app, ["plan", str(tmp_path / name), *args]) for name in ("folder", "Qwen2-7B.json")]
    assert [p.exit_code for p in plans] == [0, 0], plans[1].output
    folder, renamed = (json.loads(p.stdout) for p in plans)
    assert renamed["training"]["lora"] == folder["training"]["lora"] and renamed["params"] == qwen["parameters"]
    assert folder["training"]["lora"]["trainable_parameters"] == 28 * 8 * (3584 + 3584)  # q_proj: r (d_in + d_out)
    (tmp_path / "qwen-fp8.json").write_text(
        json.dumps(
            json.loads((tmp_path / "Qwen2-7B.json").read_text()) | {"quantization_config": {"quant_method": "fp8"}}
        )
    )
    fp8 = runner.invoke(app, ["plan", str(tmp_path / "qwen-fp8.json"), "-n", "64", "--json"])
    assert fp8.exit_code == 0 and "planned at the bytes its method stores (fp8" in fp8.stderr
    spec = tmp_path / "spec.yaml"
    spec.write_text("N: 2\nH: 4\nm: 8\nd: 32\nr: 64\nV: 100\nmask: causal\n")
    tfm = runner.invoke(app, ["plan", str(spec), *args])
    assert tfm.exit_code == 2 and "q_proj names no linear module" in tfm.stderr
