"""`tfm plan` as a library call: what serving and training a spec cost, in memory and in time, at b and n.

Every figure is an exact integer from the spec (times are floats from them) and says what it includes; the
assumptions are in serving.py, training.py, kv_cache.py, quantized.py and hardware.py, one place each.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from .decode import training_flops_per_token
from .flops import forward_flops
from .hardware import PRESETS, probe, timing
from .kv_cache import KV_NOTE, NO_DECODING, decodes, served_cache_bytes
from .params import count_params
from .quantized import GROUP, QUANT_NOTE, weight_bytes
from .serving import KERNELS, compute_bytes, fits, serving_memory, transient
from .training import OPTIMIZERS, training_memory
from .units import scientific

HARDWARE = (*PRESETS, "this")


def plan(
    spec: Spec,
    b: int = 1,
    n: int = 2048,
    n_src: int | None = None,
    weights: str = "bfloat16",
    kv: str = "bfloat16",
    memory: int | None = None,
    optimizer: str = "adam-mixed",
    zero: int = 0,
    devices: int = 1,
    hardware: tuple[str, ...] = HARDWARE,
) -> dict[str, Any]:
    """The whole plan as a JSON-ready dict."""
    try:
        return _plan(spec, b, n, n_src, weights, kv, memory, optimizer, zero, devices, hardware)
    except OverflowError:  # exact integers until a time or a ratio needs a float
        symbol = max(("N", "H", "m", "d", "r", "V", "E", "N_enc"), key=lambda k: getattr(spec, k) or 0)
        raise SpecError(
            f"{spec.label}: {symbol} = {scientific(getattr(spec, symbol))} is too large to plan: its times overflow "
            "a float (at most about 1.8e+308)"
        ) from None


def _plan(spec: Spec, b: int, n: int, n_src: int | None, weights: str, kv: str, memory: int | None, optimizer: str,
          zero: int, devices: int, hardware: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    n_src = (n_src or n) if spec.N_enc else None
    params = count_params(spec).total
    s = compute_bytes(weights)
    serving = {way: serving_memory(spec, b, n, weights, kv, fused, n_src) for way, fused in KERNELS.items()}
    out: dict[str, Any] = {
        "name": spec.label,
        "batch": b,
        "seq_len": n,
        **({"source_len": n_src} if spec.N_enc else {}),
        "params": params,
        "weights_dtype": weights,
        "kv_dtype": kv,
        "decodes": decodes(spec),
        "kv_cache_bytes": served_cache_bytes(spec, b, n, kv, n_src),
        "kv_cache_bytes_per_token": served_cache_bytes(spec, 1, 1, kv, 1 if spec.N_enc else None),
        "kv_cache_note": KV_NOTE if decodes(spec) else NO_DECODING,
        "weights_bytes": weight_bytes(spec),
        "weights_note": QUANT_NOTE.format(g=GROUP),
        "serving": serving,
        "serving_transient": {way: transient(spec, b, n, s, fused, n_src) for way, fused in KERNELS.items()},
        "training": training_memory(spec, params, b, n, optimizer, zero, devices, n_src),
        "flops": {
            "forward_per_sequence": sum(forward_flops(spec, 1, n, causal_pairs=True, n_src=n_src).values()),
            "training_per_token": training_flops_per_token(spec, n),
        },
    }
    if memory is not None:
        out["fits"] = {way: fits(spec, memory, b, n, weights, kv, fused, n_src) for way, fused in KERNELS.items()}
    machines = [probe() if name == "this" else PRESETS[name] for name in hardware]
    out["time"] = [timing(spec, hw, b, n, weights, kv, n_src) for hw in machines]
    return out


__all__ = ["HARDWARE", "OPTIMIZERS", "plan"]
