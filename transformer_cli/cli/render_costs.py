"""The cost tables of `tfm count --seq-len`: FLOPs by component and memory, one column per spec."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.table import Table

from ..analysis.units import human
from ..text import escaped as shown
from .layout import FitTable
from .render import si

if TYPE_CHECKING:  # only for annotations
    from ..analysis.costs import Costs, MemoryCosts
    from ..spec.definition import Spec


def flops_table(specs: list[Spec], costs: list[Costs]) -> Table:
    """Forward FLOPs by component, one column per spec (and the causal-pairs figure where it applies)."""
    first = costs[0]
    pairs = [f"{spec.label} (causal pairs)" for spec, c in zip(specs, costs, strict=True) if c.flops_causal_pairs]
    title = f"Forward FLOPs (batch {first.batch}, n = {first.seq_len})"
    table = FitTable(title=title, title_justify="left", drop=pairs[::-1])
    table.add_column("component")
    for spec, c in zip(specs, costs, strict=True):
        table.add_column(shown(spec.label), justify="right", no_wrap=True)
        if c.flops_causal_pairs:
            table.add_column(f"{shown(spec.label)} (causal pairs)", justify="right", no_wrap=True)
    for component in first.flops.by_component:
        table.add_row(component, *(cell for c in costs for cell in _flop_cells(c, component)))
    table.add_section()
    table.add_row("total", *(cell for c in costs for cell in _flop_cells(c, None)))
    macs = (cell for c in costs for cell in _flop_cells(c, None, multiply_adds=True))
    table.add_row("multiply-adds (matrix products)", *macs)
    table.add_section()

    def row(name: str, figure: Callable[[Costs], str]) -> None:  # one cell per spec, blank pair columns
        table.add_row(name, *(cell for c in costs for cell in [figure(c)] + [""] * bool(c.flops_causal_pairs)))

    row("training, per token: 3 x forward products", lambda c: si(c.training_flops_per_token["exact"]))
    row(
        "training, per token: the 6N rule (N without the embedding)",
        lambda c: si(c.training_flops_per_token["six_n_rule"]),
    )
    row(f"decoding token n = {first.seq_len}: FLOPs", lambda c: si(c.decode_step["flops"]))
    row("  bytes it reads (bfloat16 weights and cache)", lambda c: human(c.decode_step["bytes"]))
    row("  FLOPs per byte read", lambda c: f"{c.decode_step['flops_per_byte']:.3g}")
    from ..analysis.costs import CONVENTION  # (imported already: the costs shown were made there)

    table.caption = CONVENTION
    return table


def _flop_cells(c: Costs, component: str | None, multiply_adds: bool = False) -> list[str]:
    rows = [c.multiply_adds, c.multiply_adds_causal_pairs] if multiply_adds else [c.flops, c.flops_causal_pairs]
    return [si(r.total if component is None else r.by_component[component]) for r in rows if r is not None]


def entry_of_peak(part: str) -> Callable[[MemoryCosts], int]:
    """One part of a forward pass's peak."""
    return lambda m: getattr(m.forward_peak, part)


def memory_table(specs: list[Spec], costs: list[Costs]) -> Table:
    """Weights by dtype, training with Adam (no activations), and a forward pass's peak: the model's, then tfm's."""
    first = costs[0]
    dtype_ = first.memory.dtype
    table = FitTable(title="Memory", title_justify="left")
    table.add_column("")
    for spec in specs:
        table.add_column(shown(spec.label), justify="right", no_wrap=True)

    def row(name: str, figure: Callable[[MemoryCosts], int]) -> None:
        table.add_row(name, *(human(figure(c.memory)) for c in costs))

    def entry(mapping: str, key: str) -> Callable[[MemoryCosts], int]:  # one entry of a mapping of the costs
        return lambda m: getattr(m, mapping)[key]

    for dtype in first.memory.weights:
        row(f"weights, {dtype}", entry("weights", dtype))
    for dtype, how in (("float8", "tensor scales"), ("int8", "row scales"), ("int4", "groups of 128")):
        row(f"weights, {dtype} ({how})", entry("weights_quantized", dtype))
    table.add_section()
    from ..analysis.costs import ADAM_BYTES

    per = ADAM_BYTES
    for kind in first.memory.training_adam:
        name = f"training with Adam, {kind.replace('_', ' ')}: {per[kind]} B/param"
        row(name, entry("training_adam", kind))
    table.add_section()
    for part in ("weights", "activations", "attention", "feedforward"):
        row(f"  {part}", entry_of_peak(part))
    row(f"forward peak (b = {first.batch}, n = {first.seq_len}, {dtype_}): the model", lambda m: m.forward_peak.model)
    if dtype_ != "float64":
        row("  tfm's pass also holds: float64 weights as loaded", lambda m: m.forward_peak.loaded)
        row("  and the input as read (float64)", lambda m: m.forward_peak.input)
    else:
        row("  tfm's pass also holds: the weights as loaded", lambda m: m.forward_peak.loaded)
    row("tfm's pass: total (what run and verify refuse on)", lambda m: m.forward_peak.total)
    table.add_section()
    source = f", n_src = {first.source_len}" if first.source_len is not None else ""
    for dtype in first.memory.kv_cache:
        row(f"KV cache at n = {first.seq_len}{source}, {dtype}", entry("kv_cache", dtype))
    table.caption = (
        "Adam: weights, gradients, two moments; mixed precision: half-precision weights and gradients, float32 "
        "master weights and moments (2 + 2 + 4 + 4 + 4 B/param). Activations are not included. Quantised "
        "weights keep embeddings, head, norms and biases in bfloat16, with float16 scales (int4: and zero points). "
        "KV cache: K and "
        "V of G heads per block and cached token (at most the window), the cross-attention's for the source; "
        "int8 with a float16 scale per head and token."
    )
    return table
