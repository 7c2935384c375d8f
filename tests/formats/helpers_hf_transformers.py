"""A transformers model of each family built small and random, its logits beside tfm's, and the relative error between
them: what the Hugging Face and GGUF conformance tests share (and scripts/fingerprint_outputs.py, the benchmarks)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_transformers import _randomised
from hf_models import MODELS

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

TOL = 1e-10


# the correction bias's spread where its scores are a softmax near 1 / (E + Z): a spread of 1 would choose the same
# experts for every token, never a zero expert (LongCat-Flash's)
SPREAD = {"LongcatFlashForCausalLM": 0.02}


def build(name: str):
    """The model, random in every parameter, in float64 (its config as transformers completed it)."""
    config_class, model_class, config = MODELS[name]
    cfg = getattr(transformers, config_class)(**({"attn_implementation": "sdpa"} | config))
    model = getattr(transformers, model_class)(cfg)
    _randomised(model)
    spread = SPREAD.get(model_class, 0.5)
    for name_, buffer in model.named_buffers():  # DeepSeek-V3's correction bias is a buffer, zero as built
        if name_.endswith(("e_score_correction_bias", "expert_bias")):  # (LFM2-MoE's expert_bias)
            buffer.copy_(torch.linspace(-spread, spread, buffer.numel()).flip(0))
        if name_.endswith("layer_scalar"):  # (Gemma 4's: 1 as built)
            buffer.copy_(torch.rand_like(buffer) + 0.5)
        if name_.endswith("tid2eid"):  # (DeepSeek-V4's experts of each token id: all expert 0 as built)
            gen = torch.Generator().manual_seed(buffer.shape[0])
            buffer.copy_(
                torch.stack([torch.randperm(cfg.n_routed_experts, generator=gen) for _ in buffer])[:, : buffer.shape[1]]
            )
    return model.double().eval()


def parameters(model) -> int:
    """transformers' parameter count, less the gate and up projections LongcatFlashExperts allocates for its zero
    experts (gate_up_proj (E + Z, 2 r_e, d) beside down_proj (E, d, r_e)), which it never reads and tfm does not
    count (LongCat-Flash's published 560B leaves them out)."""
    total = sum(p.numel() for p in model.parameters())
    for module in model.modules():
        if type(module).__name__ == "LongcatFlashExperts" and module.gate_up_proj is not None:
            unused = module.gate_up_proj.shape[0] - module.down_proj.shape[0]
            total -= unused * module.gate_up_proj[0].numel()
    return total


def theirs(model, ids: np.ndarray) -> np.ndarray:
    """transformers' output in tfm's layout: logits (b, V, n), or BertModel's last hidden state (b, d, n)."""
    with torch.no_grad():
        result = model(torch.from_numpy(ids))
    out = result.logits if hasattr(result, "logits") else result.last_hidden_state
    return out.double().numpy().transpose(0, 2, 1)


def relative(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(ours - reference)) / np.max(np.abs(reference)))


IDS = np.random.default_rng(0).integers(0, 97, size=(2, 13))


def unpadded(spec) -> np.ndarray:
    """IDS without the padding token (RoBERTa's positions skip it; tfm refuses it in its inputs)."""
    return IDS if spec.pad_id is None else np.where(IDS == spec.pad_id, spec.pad_id + 1, IDS)


def cache_bytes(cache) -> int:
    """Every tensor a transformers cache holds: keys and values per attention layer (and a sparse layer's indexer
    keys), the convolutions' and the recurrences' states per mixer layer (dicts of layer index -> tensor), Qwen4's
    n-grams' last ids among them (int64); a tensor held twice (DeepSeek-V4's keys that are its values) once."""
    held: dict = {}
    for layer in cache.layers:
        for key, value in vars(layer).items():
            tensors = value.values() if isinstance(value, dict) else [value]
            for t in tensors:  # (not a sliding layer's window, an int64 scalar of bookkeeping)
                kept = isinstance(t, torch.Tensor) and (t.is_floating_point() or key == "conv_states")
                if kept and t.numel():
                    held[t.data_ptr(), t.numel()] = t.numel() * t.element_size()
    return sum(held.values())


def multimodal_checked(model, folder, runner, skipped: tuple[str, ...]):
    """A multimodal class's folder (GLM-5-Next's, Mistral Large 4's): its text model's parameters and its head
    counted (not those of the names `skipped` begins), its logits transformers' to TOL; tfm's folder of it, converted
    there and back, loads in transformers (its image model made afresh) to the same logits."""
    from hf_exact import exact

    from transformer_cli import Transformer, count_params
    from transformer_cli.cli import app
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.tasks.sources import load_weights

    model.save_pretrained(folder / "hf")
    spec = spec_from_config(folder / "hf")
    text = sum(p.numel() for name, p in model.named_parameters() if not name.startswith(skipped))
    assert count_params(spec).total == text
    reference = theirs(exact(model), IDS)
    assert relative(Transformer(spec, load_weights(folder / "hf", spec))(IDS), reference) < TOL
    for source, target in (("hf", "w.safetensors"), ("w.safetensors", "again")):
        done = runner.invoke(app, ["convert", str(folder / source), "-o", str(folder / target)])
        assert done.exit_code == 0, done.output
    options = dict(experts_implementation="eager", attn_implementation="sdpa")
    again = type(model).from_pretrained(folder / "again", **options).double().eval()
    assert relative(theirs(exact(again), IDS), reference) < TOL
    return spec
