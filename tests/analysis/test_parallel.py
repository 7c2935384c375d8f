"""Several devices (issue 27, item 3): the weights one device holds under Megatron-style tensor and pipeline
parallelism, against a split of the checkpoint's own tensors done here by their Hugging Face names (the model
transformers builds, on the meta device); the KV cache and the communication by their closed forms; refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "formats"))

from transformer_cli import Spec
from transformer_cli.analysis.parallel import Split, communication, devices, stage_cache, stage_weights
from transformer_cli.analysis.serving import fits, serving_memory
from transformer_cli.errors import SpecError
from transformer_cli.hf.config import load_config

torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
transformers = pytest.importorskip("transformers", reason="transformers is the reference (the test extra)")

LLAMA = dict(
    vocab_size=97,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
CASES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", LLAMA),
    "qwen2 (biases)": ("Qwen2Config", "Qwen2ForCausalLM", LLAMA),
    "llama, tied": ("LlamaConfig", "LlamaForCausalLM", LLAMA | dict(tie_word_embeddings=True)),
    "gpt2 (fused c_attn, Conv1D)": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(vocab_size=97, n_embd=64, n_layer=4, n_head=8, n_positions=64),
    ),
}


def _shard(name: str, shape: tuple[int, ...], cfg, T: int) -> int:
    """Elements of one checkpoint tensor on one device, split as Megatron splits it, by its Hugging Face name."""
    H = cfg.num_attention_heads
    m = cfg.hidden_size // H
    G = getattr(cfg, "num_key_value_heads", None) or H
    rows, *rest = shape
    size = 1
    for x in rest:
        size *= x
    if name.endswith(("q_proj.weight", "q_proj.bias")):
        return rows // T * size
    if name.endswith(("k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias")):
        return (G // T * m if G >= T else m) * size  # key/value heads split, or one a device
    if name.endswith(("gate_proj.weight", "up_proj.weight")):
        return rows // T * size
    if name.endswith(("o_proj.weight", "down_proj.weight")):  # split by their inputs (columns)
        return rows * (shape[1] // T)
    if name.endswith(("attn.c_attn.weight", "mlp.c_fc.weight")):  # Conv1D (in, out): split the outputs
        return rows * (shape[1] // T)
    if name.endswith(("attn.c_attn.bias", "mlp.c_fc.bias")):
        return rows // T
    if name.endswith(("attn.c_proj.weight", "mlp.c_proj.weight")):  # Conv1D (in, out): split the inputs
        return rows // T * shape[1]
    if name.endswith(("embed_tokens.weight", "lm_head.weight", "wte.weight")):  # vocabulary rows, rounded up
        return -(-rows // T) * size
    return rows * size  # norms, o_proj's and the second layer's biases, learned positions: replicated


def _layer(name: str) -> int | None:
    for part in name.split("."):
        if part.isdigit():
            return int(part)
    return None


def _model(name: str, tmp_path):
    config_class, model_class, kwargs = CASES[name]
    cfg = getattr(transformers, config_class)(**kwargs)
    cfg.save_pretrained(tmp_path)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(cfg)
    return cfg, model, load_config(tmp_path)[1]


@pytest.mark.parametrize("T, P", [(2, 1), (4, 1), (8, 1), (2, 2), (1, 4)])
@pytest.mark.parametrize("name", CASES)
def test_each_stages_weights_are_the_sum_of_its_shards(tmp_path, name, T, P):
    cfg, model, spec = _model(name, tmp_path)
    stages = [0] * P
    per_stage = cfg.num_hidden_layers // P
    for key, tensor in model.state_dict().items():
        if key == "lm_head.weight" and cfg.tie_word_embeddings:
            continue  # (a tied head is the embedding)
        layer = _layer(key)
        stage = (
            layer // per_stage
            if layer is not None
            else (P - 1 if "lm_head" in key or "norm" in key or key.endswith(("ln_f.weight", "ln_f.bias")) else 0)
        )
        elements = _shard(key, tuple(tensor.shape), cfg, T)
        stages[stage] += 2 * elements
        if P > 1 and key.endswith(("embed_tokens.weight", "wte.weight")) and (cfg.tie_word_embeddings):
            stages[-1] += 2 * elements  # the last stage's copy of a tied embedding
    assert stage_weights(spec, Split(T, P), "bfloat16") == stages
    whole = stage_weights(spec, Split(), "bfloat16")[0]
    if T > 1:  # (the control: more than a T-th of the whole, by the replicated norms, less than all of it)
        assert whole // T < sum(stages) < whole


def test_the_kv_cache_and_the_communication_by_their_closed_forms(tmp_path):
    cfg, _, spec = _model("llama", tmp_path)
    b, n, d, m, N = 3, 50, 64, 8, 4
    for T, G_local in ((2, 1), (4, 1), (1, 2)):  # G = 2 heads split over 2 devices, one each over 4
        assert stage_cache(spec, Split(T, 2), b, n, "bfloat16") == [2 * b * n * (N // 2) * G_local * m * 2] * 2
    comm = communication(spec, Split(4, 2), 2)
    assert comm["tensor_parallel"] == (N // 2 * 2 + 1) * 2 * 3 * d * 2 // 4  # ring all-reduces, the embedding's
    assert comm["pipeline_parallel"] == d * 2 and comm["training"] == 2 * comm["forward"]


def test_a_device_serves_more_than_the_whole_model_fits(tmp_path):
    _, _, spec = _model("llama", tmp_path)
    one, two = serving_memory(spec, 4, 64), serving_memory(spec, 4, 64, split=Split(2))
    assert two.weights < one.weights and two.kv_cache == one.kv_cache // 2 and two.transient < one.transient
    budget = one.total
    assert (
        fits(spec, budget, 4, 64, split=Split(2)).max_batch_at_context > fits(spec, budget, 4, 64).max_batch_at_context
    )
    assert devices(spec, Split(2), 4, 64).weights == two.weights


def test_a_split_that_does_not_divide_is_refused_naming_what(tmp_path):
    _, _, spec = _model("llama", tmp_path)
    cases = {
        Split(3): "--tensor-parallel 3: .*H \\(attention heads\\) = 8 does not divide by 3",
        Split(1, 3): "--pipeline-parallel 3: .*N \\(blocks\\) = 4 does not divide by 3",
        Split(1, 1, 2): "--expert-parallel 2: .* has no experts",
    }
    for split, message in cases.items():
        with pytest.raises(SpecError, match=message):
            devices(spec, split, 1, 8)
    odd = Spec(N=2, H=6, G=3, m=4, d=24, r=48)
    with pytest.raises(SpecError, match="G \\(key/value heads\\) = 3 neither divides by 2 nor divides it"):
        devices(odd, Split(2), 1, 8)
    with pytest.raises(SpecError, match="r \\(feedforward size\\) = 6 does not divide by 4"):
        devices(Spec(N=2, H=4, m=4, d=16, r=6), Split(4), 1, 8)
