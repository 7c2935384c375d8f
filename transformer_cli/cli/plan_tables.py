"""`tfm plan`'s tables: devices, serving, what fits, training and time, each from a `Plan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from ..analysis.serving import KERNELS
from ..text import escaped as shown
from .layout import FitTable

if TYPE_CHECKING:  # only for annotations
    from ..analysis.hardware import Roofline
    from ..analysis.plan import Plan

WAYS = tuple(KERNELS)  # the columns: fused, unfused attention

NARROW = ("unfused attention",)  # what a narrow terminal loses first: fused attention is what serving runs


def _table(title: str, columns: list[str], caption: str, drop: tuple[str, ...] = ()) -> Table:
    """A plan table: a row label, then figures that never wrap (on a narrow terminal, `drop`'s go first)."""
    table = FitTable(title=title, title_justify="left", caption=caption, caption_justify="left", drop=drop)
    table.add_column("")
    for column in columns:
        table.add_column(column.replace("_", " "), justify="right", no_wrap=True)
    return table


def context_label(p: Plan) -> str:
    source = f", sources of {p.source_len:,}" if p.source_len is not None else ""
    return f"{shown(p.name)}: b = {p.batch}, n = {p.seq_len:,}{source}"


def devices_table(p: Plan) -> Table | None:
    """A split model: each stage's weights and KV cache on one device, and what a device sends a token."""
    from ..analysis.units import human

    d = p.split
    if d is None:
        return None
    stages = [f"stage {i + 1}" for i in range(d.pipeline_parallel)]
    comm = d.communication_per_token
    caption = (
        f"{d.devices} devices: tensor parallel {d.tensor_parallel} (heads, hidden units, vocabulary split; "
        f"norms replicated), {d.pipeline_parallel} stage(s) of N / P blocks, expert parallel "
        f"{d.expert_parallel}. Bytes a device sends a token: ring all-reduces of each sublayer's output, "
        "hops between stages, experts' dispatch and return; training sends as much again backwards. "
        "The tables below are one device's (its largest stage's); the time table a whole one's."
    )
    table = _table(f"Devices {context_label(p)}", stages, caption)
    table.add_row(f"weights ({shown(p.weights_dtype)})", *(human(x) for x in d.weights_per_stage))
    table.add_row(f"KV cache ({p.kv_dtype})", *(human(x) for x in d.kv_cache_per_stage))
    table.add_section()
    for key, label in (
        ("tensor_parallel", "sent a token: all-reduces"),
        ("pipeline_parallel", "  stage hops"),
        ("expert_parallel", "  experts"),
        ("forward", "  in all (forward)"),
    ):
        if comm[key] or key == "forward":
            table.add_row(label, *(human(comm[key]) for _ in stages))
    return table


def serving_table(p: Plan) -> Table:
    from ..analysis.units import human

    logits = "every position, b n V" if p.logits == "all" else "each prompt's last position, b V (--logits all: b n V)"
    table = _table(
        f"Serving {context_label(p)}",
        list(WAYS),
        "Weights + KV cache + the prefill's transient peak "
        "(residual stream and the largest phase: attention's scores without a fused kernel, the "
        f"feedforward's hidden rows, or the head's input and the logits of {logits}). Framework memory "
        "(CUDA context, allocator reserve) not included.",
        NARROW,
    )
    serving, transient = p.serving, p.serving_transient
    held = f"as stored: {p.weights_stored['as']}" if p.weights_stored else p.weights_dtype
    table.add_row(f"weights ({shown(held)})", *(human(serving[w].weights) for w in WAYS))
    per_token = "this device's share" if p.split else f"{human(p.kv_cache_bytes_per_token)} a token"
    if p.kv_cache_state_bytes and not p.split:  # (recurrent mixers: a fixed state per sequence beside the tokens)
        per_token += f" + {human(p.kv_cache_state_bytes)} of states"
    cache = f"{p.kv_dtype}, {per_token}" if p.decodes else "none: no decoding"
    table.add_row(f"KV cache ({cache})", *(human(serving[w].kv_cache) for w in WAYS))
    if not p.decodes:
        table.caption = f"{table.caption} KV cache: {p.kv_cache_note}."
    for part in ("residual_stream", "blocks", "logits", "encoder"):
        if any(getattr(transient[w], part) for w in WAYS):
            table.add_row(f"  prefill: {part.replace('_', ' ')}", *(human(getattr(transient[w], part)) for w in WAYS))
    table.add_row("prefill's transient peak", *(human(serving[w].transient) for w in WAYS))
    table.add_section()
    table.add_row("total", *(human(serving[w].total) for w in WAYS), style="bold")
    return table


def llama_cpp_table(p: Plan) -> Table | None:
    """As llama.cpp runs the model: weights, KV cache, compute and output buffers on the host and each device."""
    from ..analysis.units import human

    lp = p.llama_cpp
    if lp is None:
        return None
    rt, where = lp.runtime, {"host": lp.offload["host"]} | lp.offload["devices"]
    streams = f", {lp.streams} streams of {lp.n_ctx_seq:,} cells" if lp.streams > 1 else ""
    attention = "-fa on" if rt["flash_attn"] else "-fa off"
    title = (
        f"As llama.cpp runs {shown(p.name)}: -c {lp.n_ctx:,}{streams}, -ub {rt['ubatch']}, {attention}, "
        f"-ctk {rt['type_k']}, -ctv {rt['type_v']}"
    )
    kinds = []
    for cache in lp.caches:
        if cache["kind"] == "states":
            kinds.append(
                f"states of {cache['blocks']} blocks: R {human(cache['r_bytes'])}, S {human(cache['s_bytes'])}"
            )
        else:
            held = f"K {human(cache['k_bytes'])}" + (f", V {human(cache['v_bytes'])}" if "v_bytes" in cache else "")
            kinds.append(f"{cache['kind']}: {cache['blocks']} blocks x {cache['cells']:,} cells, {held}")
    caption = (
        f"KV cache: {'; '.join(kinds) or 'none'}. Compute buffer: an estimate (docs/plan.md, As llama.cpp runs "
        "it). Output buffer: a token's logits per sequence. Blocks: each device's (+1: the output layer)."
    )
    if lp.fit is not None:
        flags = [f"-c {lp.fit['n_ctx']:,}", f"-ngl {lp.fit['gpu_layers']}"]
        flags += (
            [f"--tensor-split {','.join(f'{x:g}' for x in lp.fit['tensor_split'])}"] if "tensor_split" in lp.fit else []
        )
        flags += [f"-ot {o}" for o in lp.fit.get("override_tensor", [])[:2]]
        more = len(lp.fit.get("override_tensor", [])) - 2
        flags += [f"(and {more} more -ot)"] if more > 0 else []
        caption += f" --fit: {lp.fit['said']}: {' '.join(flags)}."
    table = _table(title, [*where, "total"] if len(where) > 1 else ["host"], caption)
    rows = (
        ("weights", "weights"),
        ("KV cache", "kv_cache"),
        ("compute buffer", "compute"),
        ("output buffer", "output"),
    )
    for label, key in rows:
        values = [m.get(key, 0) for m in where.values()]
        table.add_row(label, *(human(x) for x in values), *([human(sum(values))] if len(where) > 1 else []))
    table.add_section()
    totals = [m["total"] for m in where.values()]
    table.add_row("total", *(human(x) for x in totals), *([human(sum(totals))] if len(where) > 1 else []), style="bold")
    if len(where) > 1:
        table.add_row("blocks", *(m["blocks"] for m in where.values()), "")
    return table


def fits_table(p: Plan) -> Table | None:
    from ..analysis.units import human

    if p.fits is None:
        return None
    fits = p.fits
    n, b = p.seq_len, p.batch
    caption = f"Each figure alone: the batch for contexts of n = {n:,}, the context for a batch of b = {b}."
    if any(fits[w].max_batch_at_context == 0 for w in WAYS):
        caption += f" A batch of 0: not even one sequence of {n:,} tokens fits."
    if any(fits[w].max_context_at_batch == 0 for w in WAYS):
        some = "one sequence" if b == 1 else f"{b} sequences"
        caption += f" A context of 0: not even {some} of one token fit (the weights alone may not)."
    table = _table(f"What fits in {human(fits[WAYS[0]].memory)}", list(WAYS), caption, NARROW)
    table.add_row(f"largest batch at n = {n:,}", *(f"{fits[w].max_batch_at_context:,}" for w in WAYS))
    cap = fits[WAYS[0]].context_cap
    if cap:
        caption += f" Contexts are capped at the model's own, {cap:,} tokens (spec key context or max_len)."
        table.caption = caption
    table.add_row(f"largest context at b = {b}", *(f"{fits[w].max_context_at_batch:,}" for w in WAYS))
    return table


def runs_here_line(p: Plan) -> str:
    """How `tfm run` would hold the checkpoint on this machine: "runs here: streamed, 1.26 GiB peak, a pass at least
    4.1 s here (roofline)" and why (the plan of a Hugging Face folder or a GGUF file)."""
    from ..analysis.units import human
    from ..text import escaped

    found = p.runs_here or {}
    if found.get("mode") is None:
        return f"runs here (tfm run, float32): does not fit: {escaped(found.get('why', ''))}"
    seconds = found["pass_seconds"]
    time = f", a pass at least {seconds:.3g} s here (roofline)" if seconds is not None else ""
    head = f"runs here (tfm run, float32, b = {p.batch}, n = {p.seq_len:,}): {found['mode']}"
    return f"{head}, {human(found['peak_bytes'])} peak{time} ({escaped(found['why'])})"


def training_table(p: Plan) -> Table:
    from ..analysis.units import human

    t = p.training
    ways = list(t.activations)
    zero = f", ZeRO stage {t.zero_stage} over {t.devices} devices" if t.zero_stage else ""
    caption = (
        f"{t.optimizer}: {t.optimizer_note}{zero}; per device. Activations: what autograd keeps for "
        f"the backward pass in {t.activation_dtype}, each tensor once (PyTorch's kernels: docs/plan.md, "
        "Training). "
        "Not included: the activations' gradients during the backward pass, communication buffers."
    )
    table = _table(f"Training {context_label(p)}", ways, caption, ("full recomputation", *NARROW))
    if t.lora:
        lora = t.lora
        table.caption = (
            f"LoRA of rank {lora['rank']} on {shown(lora['targets'])}: {lora['trainable_parameters']:,} "
            "trainable parameters, the base frozen; the optimizer's states and the gradients are the "
            f"adapters' only. {caption}"
        )
        table.add_row(f"frozen weights ({shown(lora['frozen_dtype'])})", *(human(lora["frozen_weights"]) for _ in ways))
        table.add_row("adapters' weights", *(human(lora["adapter_weights"]) for _ in ways))
    else:
        table.add_row("weights", *(human(t.states["weights"]) for _ in ways))
    for part in ("gradients", "optimizer"):
        table.add_row(part, *(human(t.states[part]) for _ in ways))
    table.add_row("activations", *(human(t.activations[w]) for w in ways))
    table.add_section()
    table.add_row("total", *(human(t.total[w]) for w in ways), style="bold")
    if t.paged:  # bitsandbytes' paged states move to CPU memory under pressure
        table.add_row(
            "  total, the paged states on the CPU", *(human(t.total[w] - t.states["optimizer"]) for w in ways)
        )
    flops = p.training_flops_per_token
    table.caption = (
        f"{table.caption} Training FLOPs a token: {flops['exact']:.3g} (the products, attention's "
        f"included), {flops['six_n_rule']:.3g} by the 6N rule (N: the weights a token multiplies by, the "
        "head included, the embedding table, a lookup, not)."
    )
    return table


def time_table(p: Plan) -> Table:
    roofline = (
        "Roofline: max(FLOPs / peak, bytes / bandwidth) with the vendors' dense peaks, so lower bounds on "
        "time (kernels reach perhaps 50-80 %)."
    )
    if not p.decodes:
        caption = (
            "The forward pass of the whole input, its products and reading the weights (no causal mask: the "
            "model does not decode, so no steps and no KV cache); (c) compute-bound, (m) memory-bound. "
            f"{roofline}"
        )
        columns = ["peak", "bandwidth", "forward pass"]
    else:
        caption = (
            "First token: the prefill; a step and tokens/s: decoding; (c) compute-bound, (m) memory-bound. "
            f"{roofline} Prefill: the forward pass's products (allowed pairs only), reading the weights and "
            "writing the cache. Decoding: a step reads the weights a token uses once for the batch and every "
            "sequence's cache."
        )
        columns = ["peak", "bandwidth", "first token", "a step", "tokens/s"]
    table = _table(
        f"Time {context_label(p)}, weights {p.weights_dtype}", columns, caption, ("bandwidth", "peak", "a step")
    )
    for r in p.time:
        short = {"bfloat16": "bf16", "float32": "f32", "float8": "f8"}[r.compute_type]
        cells = [
            r.hardware,
            f"{r.peak_flops / 1e12:.3g} T {short}",
            f"{r.bandwidth / 1e9:,.0f} GB/s",
            _seconds(r.time_to_first_token),
        ]
        if p.decodes and r.decode_step is not None:
            cells += [_seconds(r.decode_step), f"{r.tokens_per_second:,.1f}"]
        table.add_row(*cells)
    step = p.time[0].decode_step if p.time else None
    if step:
        table.caption = f"{table.caption} A decoding step does {step.flops_per_byte:.3g} FLOPs a byte it reads."
    return table


def _seconds(step: Roofline) -> str:
    s, bound = step.seconds, step.bound[0]
    return f"{s * 1e3:.3g} ms ({bound})" if s < 1 else f"{s:,.3g} s ({bound})"
