"""`tfm plan`'s llama.cpp part: the memory llama.cpp allocates to run the model's GGUF file with these flags (its
caches and buffers: llama_cpp.py; where each goes: offload.py), per device and on the host, and --fit: the
largest context, then the most blocks on the devices, that fit each device's memory (common/fit.cpp's order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from .llama_cpp import COMPUTE_NOTE, PAD, Runtime, cells, compute_bytes, input_bytes, layer_memory, output_bytes
from .offload import HOST, Memory, Offload, place

MARGIN = 1024 * 2**20  # --fit's free memory kept on each device (-fitt), as llama.cpp's default
MIN_CONTEXT = 4096  # --fit's smallest context (-fitc)
EXPERTS = r"ffn_(up|down|gate_up|gate)_(ch|)exps"  # (common/fit.cpp's pattern of a block's experts)


@dataclass(frozen=True)
class LlamaCppPlan:
    """What llama.cpp allocates: the context (cells, streams), the caches by kind, the buffers, where each goes."""

    runtime: dict[str, Any]
    n_ctx: int  # after padding
    n_ctx_seq: int  # cells per stream
    streams: int
    caches: list[dict[str, Any]]  # each cache llama.cpp logs: full, sliding (SWA), states
    weights_bytes: int
    kv_cache_bytes: int
    compute_bytes: int
    output_bytes: int
    compute_note: str
    offload: dict[str, Any]  # device (their sum), devices (each), host, and each one's blocks
    fit: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.fit is None:
            del out["fit"]
        return out


def plan_llama_cpp(spec: Spec, tensors: Mapping[str, int], rt: Runtime, offload: Offload) -> LlamaCppPlan:
    """The memory of a llama.cpp context of `rt` on the model whose GGUF tensors hold `tensors` bytes each,
    placed as `offload` says."""
    c = cells(rt)
    memory = layer_memory(spec, rt)
    where, placed = place(tensors, [m.total for m in memory], spec.N, offload)
    _add_buffers(spec, rt, offload, where, placed)
    caches = []
    for kind, chosen in (
        ("full", [m for m in memory if m.k and not m.window]),
        ("sliding", [m for m in memory if m.window and m.k]),
    ):
        if chosen:
            k, v = sum(m.k for m in chosen), sum(m.v for m in chosen)
            caches.append({"kind": kind, "cells": chosen[0].cells, "blocks": len(chosen), "k_bytes": k, "v_bytes": v})
    indexed = [m for m in memory if m.index]
    if indexed:
        caches.append(
            {
                "kind": "index",
                "cells": indexed[0].cells,
                "blocks": len(indexed),
                "k_bytes": sum(m.index for m in indexed),
            }
        )
    states = [m for m in memory if m.r or m.s]
    if states:
        r, s = sum(m.r for m in states), sum(m.s for m in states)
        caches.append({"kind": "states", "blocks": len(states), "r_bytes": r, "s_bytes": s})
    devices = {name: m for name, m in where.items() if name != HOST}
    device = Memory(
        *(sum(getattr(m, k) for m in devices.values()) for k in ("weights", "kv_cache", "compute", "output"))
    )
    return LlamaCppPlan(
        runtime=asdict(rt),
        n_ctx=c.n_ctx,
        n_ctx_seq=c.per_stream,
        streams=c.streams,
        caches=caches,
        weights_bytes=sum(m.weights for m in where.values()),
        kv_cache_bytes=sum(m.total for m in memory),
        compute_bytes=sum(m.compute for m in where.values()),
        output_bytes=where[HOST].output,
        compute_note=COMPUTE_NOTE,
        offload={
            "device": device.to_dict(),
            "devices": {name: m.to_dict() | {"blocks": _blocks(m, spec.N)} for name, m in devices.items()},
            "host": where[HOST].to_dict() | {"blocks": _blocks(where[HOST], spec.N)},
        },
    )


def _blocks(m: Memory, N: int) -> str:
    """Its blocks as llama.cpp counts them: "36", or "44+1" with the output layer."""
    blocks = sum(1 for il in m.layers if il < N)
    return f"{blocks}+1" if N in m.layers else str(blocks)


def _add_buffers(spec: Spec, rt: Runtime, offload: Offload, where: dict[str, Memory], placed: list[str]) -> None:
    """Each backend's compute buffer (the output layer's the whole estimate, another with blocks the blocks'
    moments, the host with none the input's embeddings; with pipeline parallelism, as llama.cpp turns it on for
    several devices holding every layer, three more copies of each device's inputs) and the output buffer."""
    head = placed[-1]
    devices = [name for name in where if name != HOST]
    pipeline = len(devices) > 1 and HOST not in placed and not offload.no_kv_offload and not offload.overrides
    for name, m in where.items():
        if name == head:
            m.compute = compute_bytes(spec, rt)
        elif any(il < spec.N for il in m.layers):
            m.compute = compute_bytes(spec, rt, head=False)
        elif name == HOST:
            m.compute = 4 * cells(rt).ubatch * spec.d  # (the input's embeddings, read on the host)
        if pipeline and name != HOST:
            m.compute += 3 * input_bytes(spec, rt)
    where[HOST].output = output_bytes(spec, rt)


def fits(p: LlamaCppPlan, budgets: list[int], margin: int = MARGIN) -> bool:
    """Whether each device's total leaves `margin` of its budget free (the host's budget: the only one with none)."""
    devices = p.offload["devices"]
    if not devices:  # (the output buffer aside, as llama.cpp's --fit measures: model, context, compute)
        return p.offload["host"]["total"] - p.output_bytes <= budgets[0] - margin
    return all(devices[f"GPU{i}"]["total"] <= budget - margin for i, budget in enumerate(budgets))


def fit(
    spec: Spec,
    tensors: Mapping[str, int],
    rt: Runtime,
    offload: Offload,
    budgets: list[int],
    context_given: bool,
    placement_given: bool,
    margin: int = MARGIN,
) -> tuple[Runtime, Offload, str]:
    """llama.cpp's --fit: the context first (the model's own, else the largest from MIN_CONTEXT up that fits, in
    steps of 256 cells per stream), then, where even that does not fit, the most blocks on the devices (filled
    from the last, which holds the output layer; a mixture's experts on the host first, then whole blocks back on
    the devices front to back). A context, -ngl, --tensor-split or --override-tensor the user set is kept, as
    llama.cpp keeps it. Returns the flags and what was done."""
    if len(budgets) != max(1, len(offload.devices)):
        raise SpecError(f"--fit: --memory gives {len(budgets)} sizes for {max(1, len(offload.devices))} devices")

    def fitted(r: Runtime, o: Offload) -> bool:
        return fits(plan_llama_cpp(spec, tensors, r, o), budgets, margin)

    if fitted(rt, offload):
        return rt, offload, "fits as asked"
    streams = 1 if rt.unified else rt.parallel
    step = PAD * streams
    if not context_given and rt.n_ctx > MIN_CONTEXT * streams:
        low, high = MIN_CONTEXT * streams // step, rt.n_ctx // step  # (in steps)
        if fitted(replace(rt, n_ctx=low * step), offload):
            while low < high:  # the largest context that fits
                mid = (low + high + 1) // 2
                low, high = (mid, high) if fitted(replace(rt, n_ctx=mid * step), offload) else (low, mid - 1)
            return replace(rt, n_ctx=low * step), offload, f"context cut to {low * step:,}"
        rt = replace(rt, n_ctx=MIN_CONTEXT * streams)
    if not offload.devices:
        raise SpecError(f"--fit: {spec.label} does not fit the host's --memory even at a context of {rt.n_ctx:,}")
    if placement_given:
        return (
            rt,
            offload,
            f"does not fit at a context of {rt.n_ctx:,}; the blocks' placement set: kept, as llama.cpp keeps it",
        )
    return _fit_blocks(spec, tensors, rt, offload, budgets, margin)


def _fit_blocks(
    spec: Spec, tensors: Mapping[str, int], rt: Runtime, offload: Offload, budgets: list[int], margin: int
) -> tuple[Runtime, Offload, str]:
    """The most blocks on the devices, each device filled from the last (a mixture's experts on the host first,
    then as many blocks whole again as fit, front to back)."""
    devices, N = len(budgets), spec.N
    moe = any(".ffn_" in name and "exps" in name for name in tensors)
    partial: tuple = ((rf"blk\.\d+\.{EXPERTS}", "CPU"),) if moe else ()

    def trial(counts: list[int], overrides: tuple) -> Offload:
        total = sum(counts)
        return replace(
            offload,
            gpu_layers=total,
            split=tuple(float(c) for c in counts) if total else (1.0,) * devices,
            overrides=overrides,
        )

    counts = [0] * devices
    left = N + 1
    for d in reversed(range(devices)):  # (the last device first: it holds the output layer)
        while left and fits(
            plan_llama_cpp(spec, tensors, rt, trial(_with(counts, d, counts[d] + 1), partial)), budgets, margin
        ):
            counts[d] += 1
            left -= 1
    done = trial(counts, partial)
    placed: int = sum(counts)
    said = f"{placed} of {N + 1} layers on the devices ({', '.join(map(str, counts))})"
    if moe and placed:
        first = N + 1 - placed
        whole: list[int] = []
        for il in range(first, N):  # (front to back: a block's experts back on its device while they fit)
            kept = tuple((rf"blk\.{j}\.{EXPERTS}", "CPU") for j in range(first, N) if j not in (*whole, il))
            if fits(plan_llama_cpp(spec, tensors, rt, trial(counts, kept)), budgets, margin):
                whole.append(il)
        kept = tuple((rf"blk\.{j}\.{EXPERTS}", "CPU") for j in range(first, N) if j not in whole)
        done = trial(counts, kept)
        said += f"; the experts of {len(kept)} of them on the host"
    return rt, done, said


def _with(counts: list[int], at: int, value: int) -> list[int]:
    return [value if i == at else c for i, c in enumerate(counts)]


__all__ = ["LlamaCppPlan", "fit", "fits", "plan_llama_cpp"]
