"""transformers' Mamba-2 mixers in float64 throughout: their scan, state update, A = -exp(A_log) and gated norm
cast to float32 even in a float64 model. Each function is transformers' own source with its float32 casts made
float64 (`.float()` -> `.double()`, torch.float32 -> torch.float64), run in its module's namespace, so the
arithmetic is transformers' and only the type differs."""

from __future__ import annotations

import inspect
import sys
import textwrap


def float64_source(function, namespace: dict):
    """`function` recompiled from its source with its float32 casts made float64 (decorators left out)."""
    source = textwrap.dedent(inspect.getsource(function))
    lines = source.splitlines()
    while lines[0].startswith("@"):  # (a decorator; a multi-line one's lines start with @ or close it)
        lines.pop(0)
    source = "\n".join(lines).replace(".float()", ".double()").replace("torch.float32", "torch.float64")
    source = source.replace("dtype=torch.float)", "dtype=torch.float64)")
    scope: dict = {}
    exec(compile(source, inspect.getsourcefile(function) or "<transformers>", "exec"), namespace, scope)
    return scope[function.__name__]


def _mixer(model, module) -> None:
    """The mixer's forward, and its module's scan and state update, in float64: compiled in a copy of the module's
    namespace, so that only this model's mixers change (another model of the module keeps transformers' own)."""
    namespace = dict(vars(sys.modules[type(module).__module__]))
    for name in SCANS:
        if name in namespace:
            namespace[name] = float64_source(namespace[name], namespace)
    module.forward = float64_source(type(module).forward, namespace).__get__(module)


SCANS = ("mamba2_chunk_scan", "mamba2_selective_state_update", "mamba_selective_scan", "mamba_selective_state_update")
SCANS += ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule")  # (Gated DeltaNet's rules)
SCANS += ("chunk_kimi_delta_attention", "recurrent_kimi_delta_attention")  # (Kimi Delta Attention's)


def _falcon_h1_mixer(model, module) -> None:
    """Falcon-H1's mixer in float64 (as _mixer), its muP vector made again in float64 (transformers makes it in the
    default type, float32, so a float64 model holds its multipliers rounded)."""
    import torch

    _mixer(model, module)
    namespace = vars(sys.modules[type(module).__module__])
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        module.mup_vector = namespace["compute_mup_vector"](model.config)
    finally:
        torch.set_default_dtype(default)


def _forward(model, module) -> None:
    """A module whose forward casts to float32 (Mamba2ForCausalLM's logits), that forward in float64."""
    namespace = vars(sys.modules[type(module).__module__])
    module.forward = float64_source(type(module).forward, namespace).__get__(module)


def _mrope(model, module) -> None:
    """Qwen3.5's text rotary (MRoPE, its three axes the same position for text): its frequencies made anew in
    float64 (transformers makes them in float32), its forward in float64."""
    import torch

    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    params = cfg.rope_parameters
    rotated = int(cfg.head_dim * params.get("partial_rotary_factor", 1.0))
    base = params["rope_theta"]
    module.inv_freq = 1.0 / (base ** (torch.arange(0, rotated, 2, dtype=torch.float64) / rotated))
    _forward(model, module)


def _gated_norm(model, module) -> None:
    namespace = vars(sys.modules[type(module).__module__])
    module.forward = float64_source(type(module).forward, namespace).__get__(module)


MIXERS = (
    "Mamba2Mixer",
    "BambaMixer",
    "GraniteMoeHybridMambaLayer",
    "MambaMixer",
    "FalconMambaMixer",
    "JambaMambaMixer",
)
MIXERS += ("KimiLinearDeltaAttention", "OlmoHybridGatedDeltaNet")
MIXERS += ("Qwen3NextGatedDeltaNet", "Qwen3_5GatedDeltaNet", "Qwen3_5MoeGatedDeltaNet", "NemotronHMamba2Mixer")
MIXERS += ("Zamba2MambaMixer", "Glm5NextTextLinearAttention", "Qwen4ExpTextGatedDeltaNet")
GATED_NORMS = ("MambaRMSNormGated", "BambaRMSNormGated", "GraniteMoeHybridRMSNormGated", "FalconMambaWeightlessRMSNorm")
GATED_NORMS += ("FalconH1RMSNormGated", "KimiLinearRMSNormGated", "OlmoHybridRMSNormGated")
GATED_NORMS += ("Qwen3NextRMSNormGated", "Qwen3_5RMSNormGated", "Qwen3_5MoeRMSNormGated", "NemotronHRMSNormGated")
GATED_NORMS += ("Zamba2RMSNormGated", "Glm5NextTextRMSNormGated", "Qwen4ExpTextRMSNormGated")
FLOAT_LOGITS = ("Mamba2ForCausalLM", "MambaForCausalLM", "FalconMambaForCausalLM")  # (their logits cast to float32)
FLOAT_FORWARDS = (*FLOAT_LOGITS, "JambaTopKRouter")  # (Jamba's router: its softmax in float32)
FLOAT_FORWARDS += ("NemotronHForCausalLM", "NemotronHExperts")  # (its logits; its experts' sums in float32)
FLOAT_FORWARDS += ("DeepseekV32Indexer", "GlmMoeDsaIndexer")  # (their index scores: which keys are chosen)
FLOAT_FORWARDS += ("KimiLinearForgetGate",)  # (its decays)
FLOAT_FORWARDS += ("MambaBlock", "FalconMambaBlock")  # (residual_in_fp32, their configs' default: the residual)
MROPES = ("Qwen3_5TextRotaryEmbedding", "Qwen3_5MoeTextRotaryEmbedding", "Qwen4ExpTextRotaryEmbedding")
MAMBA = (
    dict.fromkeys(MIXERS, _mixer)
    | dict.fromkeys(GATED_NORMS, _gated_norm)
    | dict.fromkeys(FLOAT_FORWARDS, _forward)
    | dict.fromkeys(MROPES, _mrope)
    | {"FalconH1Mixer": _falcon_h1_mixer}
)

__all__ = ["MAMBA", "float64_source"]
