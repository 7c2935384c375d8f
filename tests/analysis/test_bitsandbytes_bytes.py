"""QLoRA's base weights (issue 27, item 2): bitsandbytes' NF4 with double quantisation and its LLM.int8, priced by
tfm's formulas (analysis/quantized.py), against the tensors bitsandbytes itself makes on the CPU: one tensor at a
time with `quantize_4bit`, and a whole model as transformers loads it with a BitsAndBytesConfig."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "formats"))

from transformer_cli.analysis.quantized import nf4_bytes, weight_bytes
from transformer_cli.hf.config import load_config

torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
bnb = pytest.importorskip("bitsandbytes.functional", reason="bitsandbytes' quantiser is the reference (test extra)")


def _bytes(t) -> int:
    return t.numel() * t.element_size()


def _state_bytes(state) -> int:
    """What a 4-bit weight's QuantState holds: absmax, the code, and the nested absmax, code and offset."""
    out = _bytes(state.absmax) + _bytes(state.code)
    if state.nested:
        out += _bytes(state.state2.absmax) + _bytes(state.state2.code) + _bytes(state.offset)
    return out


@pytest.mark.parametrize("shape", [(300, 200), (64, 64), (4096, 11), (1, 65), (257, 64 * 257)])
def test_nf4_bytes_are_what_quantize_4bit_makes(shape):
    w = torch.randn(*shape, dtype=torch.bfloat16)
    packed, state = bnb.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    assert nf4_bytes(w.numel()) == _bytes(packed) + _state_bytes(state)
    _, single = bnb.quantize_4bit(w, blocksize=64, compress_statistics=False, quant_type="nf4")
    assert nf4_bytes(w.numel()) != _bytes(packed) + _state_bytes(single)  # (the control: float32 absmaxes)


def _quantised_model_bytes(tmp_path, four_bit: bool, name: str = "llama") -> tuple[int, int]:
    """(bytes of the model's parameters as bitsandbytes holds them, their quantisation states included; tfm's
    figure for the type) for a small model saved in bfloat16 and loaded on the CPU with a BitsAndBytesConfig."""
    transformers = pytest.importorskip("transformers", reason="transformers is the reference (the test extra)")
    from hf_models import MODELS

    config_class, model_class, kwargs = MODELS[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**kwargs)).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    quantisation = transformers.BitsAndBytesConfig(
        load_in_4bit=four_bit,
        load_in_8bit=not four_bit,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = getattr(transformers, model_class).from_pretrained(
            tmp_path, quantization_config=quantisation, device_map="cpu", dtype=torch.bfloat16
        )
    held = 0
    for p in loaded.parameters():  # (the rotary inv_freq buffer is no weight)
        held += _bytes(p)
        if getattr(p, "quant_state", None) is not None:
            held += _state_bytes(p.quant_state)
        if getattr(p, "SCB", None) is not None:  # LLM.int8's float32 scale per row
            held += _bytes(p.SCB)
    _, spec = load_config(tmp_path)
    return held, weight_bytes(spec)["nf4" if four_bit else "bnb_int8"]


@pytest.mark.parametrize("name", ["llama", "mixtral", "qwen2_moe"])
@pytest.mark.parametrize("four_bit", [True, False], ids=["nf4", "llm.int8"])
def test_a_model_loaded_by_bitsandbytes_holds_tfms_bytes(tmp_path, four_bit, name):
    """A mixture's stacked experts are no linear modules in transformers 5: bitsandbytes leaves them in bfloat16
    (its shared expert, a linear module, is quantised)."""
    held, figure = _quantised_model_bytes(tmp_path, four_bit, name)
    assert figure == held


@pytest.mark.parametrize("rank", [8, 128], ids=["float32 states (under 4,096 elements)", "8-bit states"])
def test_the_8bit_optimizers_states_are_what_bitsandbytes_keeps_for_the_adapters(tmp_path, rank):
    """bitsandbytes' AdamW8bit (the paged one is the same on the CPU) after a step on peft's LoRA adapters of a
    small LLaMA: its state tensors' bytes beside tfm's figure for the adapters' tensors."""
    transformers = pytest.importorskip("transformers", reason="transformers is the reference (the test extra)")
    peft = pytest.importorskip("peft", reason="peft is the LoRA reference (the test extra)")
    import bitsandbytes
    from hf_models import MODELS

    from transformer_cli.analysis.lora import adapters
    from transformer_cli.analysis.optimizers import state_bytes
    from transformer_cli.hf.lora_modules import hf_linear_modules

    config_class, model_class, kwargs = MODELS["llama"]
    cfg = getattr(transformers, config_class)(**kwargs)
    cfg.save_pretrained(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = peft.get_peft_model(getattr(transformers, model_class)(cfg), peft.LoraConfig(r=rank))
        trained = [p for p in model.parameters() if p.requires_grad]
        optimizer = bitsandbytes.optim.AdamW8bit(trained)
        for p in trained:
            p.grad = torch.randn_like(p)
        optimizer.step()
    kept = sum(_bytes(v) for p in trained for v in optimizer.state[p].values() if torch.is_tensor(v) and v.ndim)
    config, spec = load_config(tmp_path)
    lora = adapters(spec, rank, "q_proj,v_proj", hf_linear_modules(spec, config))  # peft's default targets
    assert state_bytes("paged-adamw-8bit", lora.sizes) == kept
    if rank == 128:  # (the control: float32 moments take over twice the bytes, maps and scales included)
        assert state_bytes("adam", lora.sizes) > 2 * kept
