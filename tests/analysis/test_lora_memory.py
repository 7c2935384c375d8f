"""LoRA's training memory (issue 27, item 1): the activations autograd keeps when peft's adapters train and the
base is frozen, against PyTorch's own count of the bytes it saves (torch.autograd.graph.saved_tensors_hooks) on
the models transformers builds, and the model states by their closed form.

The families are those whose transformers code runs the kernels tfm's activation count describes (F.sdpa, an RMS
norm in float32, SwiGLU, no window's explicit mask); the adapters are in the model's dtype (peft's
autocast_adapter_dtype=False, as under torch.autocast), no dropout."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "formats"))

from transformer_cli.analysis.lora import adapters
from transformer_cli.analysis.training import activation_bytes, model_states, training_memory
from transformer_cli.hf.config import load_config
from transformer_cli.hf.lora_modules import hf_linear_modules

torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
transformers = pytest.importorskip("transformers", reason="transformers is the reference (the test extra)")
peft = pytest.importorskip("peft", reason="peft is the LoRA reference (the test extra)")

FAMILIES = ["llama", "qwen2", "qwen3", "granite"]
# every linear module; the last sublayer's alone (the first block's attention then needs no gradient); one of each
TARGETS = ["all-linear", "down_proj", "up_proj,v_proj"]
B, N = 2, 64


def _model(name: str, dtype: str, tmp_path, targets: str, checkpointing: bool = False):
    from hf_models import MODELS

    config_class, model_class, kwargs = MODELS[name]
    cfg = getattr(transformers, config_class)(**(dict(kwargs) | {"attn_implementation": "sdpa"}))
    cfg.save_pretrained(tmp_path)
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(cfg).to(getattr(torch, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = targets if targets == "all-linear" else targets.split(",")
        model = peft.get_peft_model(
            model, peft.LoraConfig(r=8, target_modules=chosen, lora_dropout=0.0), autocast_adapter_dtype=False
        )
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
    model.train()
    config, spec = load_config(tmp_path)
    return model, spec, adapters(spec, 8, targets, hf_linear_modules(spec, config))


def _saved(model, vocabulary: int) -> int:
    """Bytes of the distinct storages autograd saves in a forward pass with a loss, the parameters left out."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(x):
        if x.untyped_storage().data_ptr() not in params:
            storages[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
        return x

    ids = torch.randint(vocabulary, (B, N))
    with warnings.catch_warnings(), torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        warnings.simplefilter("ignore")
        logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocabulary), torch.randint(vocabulary, (B * N,)))
    loss.backward()  # the saved tensors were enough
    return sum(storages.values())


@pytest.mark.parametrize("targets", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", FAMILIES)
def test_lora_activations_are_what_autograd_saves_under_peft(tmp_path, name, dtype, targets):
    """Measured here: equal but for the loss's scalar (4 bytes); full fine-tuning's figure is 10-150 % more."""
    model, spec, lora = _model(name, dtype, tmp_path, targets)
    measured = _saved(model, spec.V)
    figure = activation_bytes(spec, B, N, dtype, lora=lora)["total"]
    assert abs(figure - measured) <= 8, (figure, measured)
    full = activation_bytes(spec, B, N, dtype)["total"]  # the control: every weight training keeps more
    assert full > 1.1 * measured


@pytest.mark.parametrize("targets", ["all-linear", "up_proj,v_proj"])
def test_with_gradient_checkpointing_each_block_keeps_its_input(tmp_path, targets):
    """peft's recipe (enable_input_require_grads, non-reentrant checkpoints): the forward pass keeps each block's
    input and what lies outside the blocks; the block recomputed in the backward pass comes on top."""
    model, spec, lora = _model("llama", "float32", tmp_path, targets, checkpointing=True)
    measured = _saved(model, spec.V)
    figure = activation_bytes(spec, B, N, "float32", recompute=True, lora=lora)
    assert abs(figure["total"] - figure["recomputed"] - measured) <= 8, (figure, measured)
    plain = activation_bytes(spec, B, N, "float32", lora=lora)["total"]
    assert plain > 1.1 * measured  # (the control: without checkpoints the blocks keep far more)


def test_lora_model_states_are_the_frozen_base_and_the_adapters_states(tmp_path):
    _, spec, lora = _model("llama", "float32", tmp_path, "all-linear")
    frozen = 2 * 1_000_003  # bytes of a frozen base, as a type's formula gives them
    training = training_memory(spec, 10**6, 1, 64, "adam-mixed", lora=lora, frozen=("bfloat16", frozen))
    p = lora.parameters
    assert training.states == {
        "weights": frozen + 2 * p,
        "gradients": 2 * p,
        "optimizer": 12 * p,
        "total": frozen + 16 * p,
    }
    assert training.lora is not None and training.lora["trainable_parameters"] == p
    sharded = training_memory(spec, 10**6, 1, 64, "adam", 3, 4, lora=lora, frozen=("bfloat16", frozen))
    assert sharded.states["total"] == -(-frozen // 4) + sum(-(-p * x // 4) for x in (4, 4, 8))
    assert model_states(p, "adam", 3, 4)["total"] + -(-frozen // 4) == sharded.states["total"]


@pytest.mark.parametrize("name", ["mixtral", "qwen3_moe"])
def test_a_mixture_s_wrapped_experts_are_kept_merged_with_their_adapters(tmp_path, name):
    """peft's ParamWrapper runs the experts on W + B A, each expert's, made for each forward; autograd keeps that
    merged stack for the input's gradient: per routed block E x out x in elements of the gate and up stack and
    of the down stack (measured: the storages of the stacks' size that autograd saves)."""
    model, spec, lora = _model(name, "float32", tmp_path, "all-linear")
    stacks = {p.numel() * 4 for n, p in model.named_parameters() if p.dim() == 3 and "experts" in n}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def pack(x):
        storage = x.untyped_storage()
        if storage.data_ptr() not in params and storage.nbytes() in stacks:
            kept[storage.data_ptr()] = storage.nbytes()
        return x

    with warnings.catch_warnings(), torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        warnings.simplefilter("ignore")
        model(input_ids=torch.randint(spec.V, (B, N))).logits.sum().backward()
    routed = len(lora.merged)  # the blocks with experts, each with its router (E x d) among the merged too
    assert sum(kept.values()) == 4 * (sum(lora.merged) - routed * spec.E * spec.d) > 0
