"""`tfm plan` as a library call: what serving and training a spec cost, in memory and in time, at b and n.

Every figure is an exact integer from the spec (times are floats from them) and says what it includes; the
assumptions are in serving.py, training.py, kv_cache.py, quantized.py and hardware.py, one place each.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..components.held import Held
from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import source_len
from .decode import training_flops_per_token
from .flops import forward_flops
from .hardware import PRESETS, Timing, probe, timing
from .kv_cache import KV_NOTE, NO_DECODING, decodes, served_cache_bytes, served_state_bytes
from .llama_cpp_plan import LlamaCppPlan
from .lora import Adapters
from .optimizers import OPTIMIZERS
from .parallel import Devices, Split, local_spec, stage_weights
from .parallel import devices as parallel_devices
from .params import count_params
from .quantized import GROUP, QUANT_NOTE, total_bytes, weight_bytes
from .serving import KERNELS, Fit, Serving, Transient, compute_bytes, context_cap, fits, serving_memory, transient
from .training import Training, training_memory
from .units import scientific

HARDWARE = (*PRESETS, "this")


@dataclass(frozen=True)
class Plan:
    """What serving and training a spec cost at b and n; to_dict() is `tfm plan --json` (without the spec)."""

    name: str
    batch: int
    seq_len: int
    source_len: int | None  # an encoder-decoder's sources
    params: int
    weights_dtype: str  # a type (a llama.cpp mix among them), or "stored": the file's own bytes (weights_stored)
    kv_dtype: str
    decodes: bool
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    kv_cache_state_bytes: int  # of the batch, whatever the context: recurrent mixers' states (0: attention alone)
    kv_cache_note: str
    weights_bytes: dict[str, int]
    weights_note: str
    weights_stored: dict[str, Any] | None  # a file's own: {"as": its scheme, "bytes": its tensors' bytes}
    serving: dict[str, Serving]  # by kernel: unfused_attention, fused_attention
    serving_transient: dict[str, Transient]
    training: Training
    forward_flops_per_sequence: int
    training_flops_per_token: dict[str, int]
    fits: dict[str, Fit] | None  # with a memory budget
    time: list[Timing]
    split: Devices | None = None  # over several devices: serving, fits and training are one device's
    logits: str = "last"  # the prefill's logits: each prompt's last position's, or every position's
    runs_here: dict[str, Any] | None = None  # a checkpoint's mode on this machine (tasks/planning.runs_here)
    llama_cpp: LlamaCppPlan | None = None  # as llama.cpp runs its GGUF file (tasks/llama_cpp.py)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        flops = {
            "forward_per_sequence": out.pop("forward_flops_per_sequence"),
            "training_per_token": out.pop("training_flops_per_token"),
        }
        keys = list(out)
        ordered = {k: out[k] for k in keys[: keys.index("fits")]} | {"flops": flops}
        ordered |= {k: out[k] for k in keys[keys.index("fits") :]}
        if self.source_len is None:
            del ordered["source_len"]
        if self.fits is None:
            del ordered["fits"]
        if self.weights_stored is None:
            del ordered["weights_stored"]
        if self.split is None:
            del ordered["split"]
        if self.runs_here is None:
            del ordered["runs_here"]
        del ordered["llama_cpp"]
        if self.llama_cpp is not None:  # (its placement at the top: "offload")
            part = self.llama_cpp.to_dict()
            ordered["offload"] = part.pop("offload")
            ordered["llama_cpp"] = part
        return ordered


@dataclass(frozen=True)
class Asked:
    """What a plan is asked: the spec served and trained at b sequences of n tokens (an encoder-decoder's sources
    n_src), its weights a type priced by its formula or the bytes a file holds (Held), the KV cache's type, a
    memory budget, the optimizer and ZeRO stage over `devices`, the hardware timed, LoRA's adapters (fine-tuned on
    the base frozen in `weights`; nf4: QLoRA), a split over devices, and which logits the prefill makes.
    planning.asked resolves the options of `tfm plan MODEL` to it."""

    spec: Spec
    b: int = 1
    n: int = 2048
    n_src: int | None = None
    weights: str | Held = "bfloat16"
    kv: str = "bfloat16"
    memory: int | None = None
    optimizer: str = "adam-mixed"
    zero: int = 0
    devices: int = 1
    hardware: tuple[str, ...] = HARDWARE
    lora: Adapters | None = None
    split: Split | None = None
    logits: str = "last"


def plan(
    spec: Spec,
    b: int = 1,
    n: int = 2048,
    n_src: int | None = None,
    weights: str | Held = "bfloat16",
    kv: str = "bfloat16",
    memory: int | None = None,
    optimizer: str = "adam-mixed",
    zero: int = 0,
    devices: int = 1,
    hardware: tuple[str, ...] = HARDWARE,
    lora: Adapters | None = None,
    split: Split | None = None,
    logits: str = "last",
) -> Plan:
    """The whole plan, by Asked's fields (the library's call: `plan(spec, n=8192, memory=80 * 2**30)`)."""
    return plan_asked(
        Asked(spec, b, n, n_src, weights, kv, memory, optimizer, zero, devices, hardware, lora, split, logits)
    )


def plan_asked(asked: Asked) -> Plan:
    """The whole plan of what is asked."""
    try:
        return _plan(asked)
    except OverflowError:  # exact integers until a time or a ratio needs a float
        spec = asked.spec
        symbol = max(("N", "H", "m", "d", "r", "V", "E", "N_enc"), key=lambda k: getattr(spec, k) or 0)
        raise SpecError(
            f"{spec.label}: {symbol} = {scientific(getattr(spec, symbol))} is too large to plan: its times overflow "
            "a float (at most about 1.8e+308)"
        ) from None


def _plan(asked: Asked) -> Plan:
    spec, b, n, weights, kv = asked.spec, asked.b, asked.n, asked.weights, asked.kv
    lora, logits = asked.lora, asked.logits
    n_src = source_len(spec, n, asked.n_src)
    params = count_params(spec).total
    s = compute_bytes(weights)
    split = None if asked.split is None or asked.split.trivial else asked.split
    shards = None if split is None else parallel_devices(spec, split, b, n, weights, kv, n_src)
    if shards is not None and lora is not None:
        raise SpecError("--lora-rank with several devices: LoRA's adapters over a split model are not planned yet")
    local = spec if split is None else local_spec(spec, split)  # what one device runs
    fitted = None
    if asked.memory is not None:
        fitted = {
            way: fits(spec, asked.memory, b, n, weights, kv, fused, n_src, split, logits)
            for way, fused in KERNELS.items()
        }
    device_params = params if split is None else max(stage_weights(spec, split, "float32")) // 4
    machines = [probe() if name == "this" else PRESETS[name] for name in asked.hardware]
    return Plan(
        name=spec.label,
        batch=b,
        seq_len=n,
        source_len=n_src,
        params=params,
        weights_dtype=_label(weights),
        kv_dtype=kv,
        decodes=decodes(spec),
        kv_cache_bytes=served_cache_bytes(spec, b, n, kv, n_src),
        kv_cache_bytes_per_token=served_cache_bytes(spec, 1, 1, kv, source_len(spec, 1))
        - served_state_bytes(spec, 1, kv),
        kv_cache_state_bytes=served_state_bytes(spec, b, kv),
        kv_cache_note=KV_NOTE if decodes(spec) else NO_DECODING,
        weights_bytes=weight_bytes(spec)
        | ({weights.dtype: weights.total()} if isinstance(weights, Held) and weights.dtype else {}),
        weights_note=QUANT_NOTE.format(g=GROUP)
        + (
            f"; {weights.label}, as llama-quantize types each tensor"
            if isinstance(weights, Held) and weights.dtype
            else ""
        ),
        weights_stored={"as": weights.label, "bytes": weights.total()}
        if isinstance(weights, Held) and not weights.dtype
        else None,
        serving={
            way: serving_memory(spec, b, n, weights, kv, fused, n_src, split, logits) for way, fused in KERNELS.items()
        },
        serving_transient={way: transient(local, b, n, s, fused, n_src, logits) for way, fused in KERNELS.items()},
        training=training_memory(
            local,
            device_params,
            b,
            n,
            asked.optimizer,
            asked.zero,
            asked.devices,
            n_src,
            lora,
            (_label(weights), total_bytes(spec, weights)),
        ),
        forward_flops_per_sequence=sum(forward_flops(spec, 1, n, causal_pairs=True, n_src=n_src).values()),
        training_flops_per_token=training_flops_per_token(spec, n),
        fits=fitted,
        time=[timing(spec, hw, b, n, weights, kv, n_src) for hw in machines],
        split=shards,
        logits=logits,
    )


def contexts(spec: Spec, n: int) -> list[int]:
    """The contexts a serving chart spans: powers of two from 128 to the model's own context (or 4n, at least
    8,192), and n itself."""
    top = context_cap(spec) or max(4 * n, 8192)
    points = {1 << k for k in range(7, top.bit_length()) if 1 << k <= top} | {top, n}
    return sorted(points)


def serving_curve(
    spec: Spec,
    b: int,
    lengths: list[int],
    weights: list[str | Held],
    kv: str = "bfloat16",
    n_src: int | None = None,
    split: Split | None = None,
    logits: str = "last",
) -> dict[str, list[Serving]]:
    """Serving memory (fused attention) at each context of `lengths`, for each weights type: what `tfm plan
    --plot` draws."""
    return {
        _label(w) if not isinstance(w, Held) else w.label: [
            serving_memory(spec, b, n, w, kv, True, n_src, split, logits) for n in lengths
        ]
        for w in weights
    }


def _label(weights: str | Held) -> str:
    return (weights.dtype or "stored") if isinstance(weights, Held) else weights


__all__ = ["HARDWARE", "OPTIMIZERS", "Plan", "contexts", "plan", "serving_curve"]
