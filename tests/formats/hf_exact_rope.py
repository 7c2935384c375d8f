"""The rotary inverse frequencies of every rope type transformers knows, in float64, by its own formulas (its are
made in float32): hf_exact.py's rotary patches read them."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _inv_freq(cfg, rotated: int, seq_len: int, params: dict) -> torch.Tensor:
    """The rotary inverse frequencies in float64 of a pass of seq_len positions, by transformers' formulas (default,
    llama3, linear, dynamic, yarn, longrope; only dynamic and longrope depend on seq_len), for the rope `params`
    (the model's, or one layer type's)."""
    base = params["rope_theta"]
    if params.get("rope_type") == "dynamic":  # _compute_dynamic_ntk_parameters, in float64
        factor, longest = params["factor"], cfg.max_position_embeddings
        length = max(seq_len, longest)
        base = base * ((factor * length / longest) - (factor - 1)) ** (rotated / (rotated - 2))
    freq = 1.0 / base ** (torch.arange(0, rotated, 2, dtype=torch.float64) / rotated)
    if params.get("rope_type") == "linear":
        return freq / params["factor"]
    if params.get("rope_type") == "proportional":  # Gemma 4's: a = int(p m // 2) pairs turn, over the whole head
        turned = int(params.get("partial_rotary_factor", 1.0) * rotated // 2)
        return torch.where(torch.arange(rotated // 2) < turned, freq, 0.0) / params.get("factor", 1.0)
    if params.get("rope_type") == "longrope":  # _compute_longrope_parameters, in float64
        long = seq_len > params["original_max_position_embeddings"]
        return freq / torch.tensor(params["long_factor" if long else "short_factor"], dtype=torch.float64)
    if params.get("rope_type") == "yarn":  # _compute_yarn_parameters, in float64
        base, factor, original = params["rope_theta"], params["factor"], params["original_max_position_embeddings"]

        def pair(rotations):
            return rotated * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = pair(params.get("beta_fast") or 32), pair(params.get("beta_slow") or 1)
        if params.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, rotated - 1)
        high += 0.001 if low == high else 0.0  # (as transformers' linear_ramp_factor)
        ramp = ((torch.arange(rotated // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        return freq / factor * ramp + freq * (1 - ramp)
    if params.get("rope_type", "default") == "llama3":  # _compute_llama3_parameters, in float64
        factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
        original = params["original_max_position_embeddings"]
        wavelength = 2 * math.pi / freq
        scaled = torch.where(wavelength > original / low, freq / factor, freq)
        smooth = (original / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelength < original / high) * ~(wavelength > original / low)
        freq = torch.where(medium, smoothed, scaled)
    return freq
