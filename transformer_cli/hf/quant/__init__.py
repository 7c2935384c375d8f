"""Quantised Hugging Face checkpoints: a config.json's `quantization_config` read as a Scheme (base.py), one module
per method. A new method is one module with a `scheme(keys)` function and one line in METHODS."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...families.keys import Keys
from . import bitsandbytes, compressed, fp8, gptq, mxfp4
from .base import Scheme

METHODS: dict[str, Callable[[Keys], Scheme]] = {
    "gptq": gptq.gptq,
    "awq": gptq.awq,
    "bitsandbytes": bitsandbytes.scheme,
    "compressed-tensors": compressed.scheme,
    "fp8": fp8.scheme,
    "mxfp4": mxfp4.scheme,
}


KEYS = ("quantization_config", "compression_config")  # (4.x's name for compressed-tensors')


def dequantised(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config of the same model held unquantised: what a folder written from dequantised weights says."""
    return {key: value for key, value in config.items() if key not in KEYS}


def scheme_of(config: Mapping[str, Any], source: str) -> Scheme | None:
    """The quantisation a config's `quantization_config` (or 4.x's `compression_config`) describes; None for none."""
    c = Keys(dict(config), source)
    key = "quantization_config" if c.has("quantization_config") else "compression_config"
    nested = c.nested(key)
    if nested is None:
        return None
    method = nested.text("quant_method")
    if method not in METHODS:
        raise nested.refuse("quant_method", method, f"tfm reads {', '.join(METHODS)}")
    return METHODS[method](nested)


__all__ = ["KEYS", "METHODS", "Scheme", "dequantised", "scheme_of"]
