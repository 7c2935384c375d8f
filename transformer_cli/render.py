"""Rich tables for the CLI. Only presentation: every figure comes from the core's result objects."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from .memory import human

if TYPE_CHECKING:  # only for annotations: rendering a count must not import the model
    from .params import ParamCount
    from .runner import RunResult
    from .spec import Spec
    from .verify import CheckResult

VERDICT_STYLE = {
    "PASS": "bold green",
    "FAIL": "bold red",
    "INCONCLUSIVE": "bold yellow",
    "caught": "green",
    "MISSED": "bold red",
}


def fmt(value: Any) -> str:
    """Integers with separators, floats to 3 significant digits, the rest as text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3g}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def shown(text: object) -> str:
    """User text (a name, a path, a value) as the terminal should show it: control characters escaped, as repr does.

    Escape codes, newlines, bidi overrides and lone surrogates then cannot restyle the terminal, break a line in
    two or crash the encoder. The CLI's consoles print with markup off, so `[/x]` in a name stays text.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def styled(value: Any) -> Text | str:
    text = fmt(value)
    return Text(text, style=VERDICT_STYLE[text]) if text in VERDICT_STYLE else text


def count_table(count: ParamCount, source: str) -> Table:
    """Every tensor of one block (the same for each block), the model-level tensors, and the closed form."""
    spec = count.spec
    title, caption = f"Parameters of {shown(spec.summary())}", f"spec: {shown(source)}"
    table = Table(title=title, caption=caption, title_justify="left")
    table.add_column(f"tensor (i = 0 .. {spec.N - 1})", no_wrap=True)
    table.add_column("shape")
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("component")
    for t in count.block:
        table.add_row(t.name.replace("blocks.0.", "blocks.i."), fmt(t.shape), fmt(t.count), t.component)
    table.add_section()
    table.add_row("per block (from shapes)", "", fmt(count.per_block), "independent of sequence length n")
    table.add_row("per block (closed form)", " + ".join(t.formula for t in count.terms if t.scope == "block"),
                  fmt(count.closed_per_block), "seed property (b)")  # fmt: skip
    table.add_row(f"x {spec.N} blocks", "", fmt(spec.N * count.per_block), "")
    if count.model:
        table.add_section()
        for t in count.model:
            table.add_row(t.name, fmt(t.shape), fmt(t.count), t.component)
    table.add_section()
    agree = "agrees" if count.total == count.closed_total else "DIFFERS"
    table.add_row(
        Text("total", style="bold"),
        f"closed form {fmt(count.closed_total)}",
        Text(fmt(count.total), style="bold"),
        agree,
    )
    return table


def comparison_table(counts: list[ParamCount]) -> Table:
    """Several specs side by side: their keys, per-component totals and totals."""
    table = Table(title="Parameter counts side by side", title_justify="left")
    table.add_column("")
    for c in counts:
        table.add_column(shown(c.spec.label), justify="right")
    keys = list(dict.fromkeys(k for c in counts for k in c.spec.to_dict() if k not in ("name", "description")))
    for key in keys:
        table.add_row(key, *(fmt(c.spec.to_dict().get(key, "-")) for c in counts))
    table.add_section()
    components = list(dict.fromkeys(k for c in counts for k in c.components()))
    for comp in components:
        table.add_row(comp, *(fmt(c.components().get(comp, 0)) for c in counts))
    table.add_section()
    table.add_row("per block", *(fmt(c.per_block) for c in counts))
    table.add_row(Text("total", style="bold"), *(Text(fmt(c.total), style="bold") for c in counts))
    table.add_row("closed form", *("agrees" if c.total == c.closed_total else "DIFFERS" for c in counts))
    return table


def si(value: int | float) -> str:
    """1234567 -> '1.23 M', in powers of 1000 (FLOPs, parameters)."""
    for unit in ("", " K", " M", " G", " T", " P"):
        if abs(value) < 1000 or unit == " P":
            return f"{value:.3g}{unit}" if unit else f"{value:,.0f}"
        value /= 1000
    raise AssertionError("unreachable")


def flops_table(specs: list[Spec], costs: list[dict[str, Any]]) -> Table:
    """Forward FLOPs by component, one column per spec (and the causal-pairs figure where it applies)."""
    first = costs[0]
    table = Table(title=f"Forward FLOPs (batch {first['batch']}, n = {first['seq_len']})", title_justify="left")
    table.add_column("component")
    for spec, c in zip(specs, costs, strict=True):
        table.add_column(shown(spec.label), justify="right")
        if "flops_causal_pairs" in c:
            table.add_column(f"{shown(spec.label)} (causal pairs)", justify="right")
    for component in first["flops"]["by_component"]:
        table.add_row(component, *(cell for c in costs for cell in _flop_cells(c, component)))
    table.add_section()
    table.add_row("total", *(cell for c in costs for cell in _flop_cells(c, None)))
    table.caption = first["flop_convention"]
    return table


def _flop_cells(c: dict[str, Any], component: str | None) -> list[str]:
    blocks = [c["flops"]] + ([c["flops_causal_pairs"]] if "flops_causal_pairs" in c else [])
    return [si(b["total"] if component is None else b["by_component"][component]) for b in blocks]


def memory_table(specs: list[Spec], costs: list[dict[str, Any]]) -> Table:
    """Weights by dtype, training with Adam (weights, gradients, two moments), and a forward pass's peak."""
    first = costs[0]
    peak = first["memory"]["forward_peak"]
    table = Table(title="Memory", title_justify="left")
    table.add_column("")
    for spec in specs:
        table.add_column(shown(spec.label), justify="right")
    for dtype in first["memory"]["weights"]:
        table.add_row(f"weights, {dtype}", *(human(c["memory"]["weights"][dtype]) for c in costs))
    table.add_section()
    for dtype in first["memory"]["training_adam"]:
        table.add_row(f"training with Adam, {dtype}", *(human(c["memory"]["training_adam"][dtype]) for c in costs))
    table.add_section()
    label = f"forward peak (b = {first['batch']}, n = {first['seq_len']}, {peak['dtype']})"
    for part in ("weights", "activations", "attention", "feedforward", "total"):
        name = f"{label}: {part}" if part == "total" else f"  {part}"
        table.add_row(name, *(human(c["memory"]["forward_peak"][part]) for c in costs))
    table.caption = "Adam: weights + gradients + two moments = 4 x weights; forward: the estimate run and verify use"
    return table


def run_table(result: RunResult) -> Table:
    data = result.to_dict()
    table = Table(title=f"Forward pass of {shown(result.spec.summary())}", title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("input shape", fmt(data["input_shape"]))
    table.add_row("output shape", fmt(data["output_shape"]))
    table.add_row("dtype", data["dtype"])
    table.add_row("weights", shown(data["weights"]))
    table.add_section()
    for key, value in data["output_stats"].items():
        table.add_row(f"output {key}", fmt(value))
    table.add_section()
    for key, value in data["activation_rms"].items():
        table.add_row(f"RMS {key}", fmt(value))
    return table


def check_table(result: CheckResult) -> Table:
    """One row per trial, then the summary and verdict in the caption."""
    table = Table(title=f"{result.title}", title_justify="left")
    for i, col in enumerate(result.columns):  # the first column names the trial: never wrapped
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0, overflow="fold")
    for row in result.rows:
        table.add_row(*(styled(v) for v in row))
    return table


def summary_table(result: CheckResult) -> Table:
    table = Table(show_header=False, title_justify="left")
    table.add_column("", style="bold")
    table.add_column("")
    words = result.to_dict()  # the same words the JSON output carries
    table.add_row("predicted", words["predicted"] + (f" ({result.reason})" if result.reason else ""))
    table.add_row("expected", words["expected"])
    table.add_row("observed", f"{words['observed']}: {result.observation}")
    for key, value in result.summary.items():
        if not isinstance(value, dict):
            table.add_row(key.replace("_", " "), fmt(value))
    table.add_row("verdict", styled(result.verdict))
    return table


def verify_table(spec: Spec, results: list[CheckResult]) -> Table:
    table = Table(title=f"Properties of {shown(spec.summary())}", title_justify="left")
    for col in ("property", "theory predicts", "observed", "verdict"):
        table.add_column(col)
    for r in results:
        words = r.to_dict()
        table.add_row(r.title, f"{words['predicted']}: {r.reason}", f"{words['observed']}: {r.observation}",
                      styled(r.verdict))  # fmt: skip
    return table


def bench_table(data: dict[str, Any]) -> Table:
    """tfm beside PyTorch: time per forward, throughput, FLOP rate, memory, and the ratio."""
    title = f"Forward pass of {shown(data['spec'])}: batch {data['batch']}, n = {data['seq_len']}, {data['dtype']}"
    table = Table(title=title, title_justify="left")
    for col in ("", "median", "min .. max", "tokens/s", "GFLOP/s", "of GEMM peak", "peak memory"):
        table.add_column(col, justify="left" if not col else "right")
    rows = [("tfm", data["tfm"]), ("PyTorch", data["torch"])]
    for name, run in rows:
        if run is None:
            table.add_row(name, "not installed", *[""] * 5)
            continue
        fraction = f"{run['gflops'] / data['gemm_gflops']:.2f}"
        memory = human(run["peak_bytes"]) if "peak_bytes" in run else "-"
        table.add_row(name, f"{run['median_s'] * 1e3:.1f} ms", f"{run['min_s'] * 1e3:.1f} .. {run['max_s'] * 1e3:.1f}",
                      f"{run['tokens_per_s']:,.0f}", f"{run['gflops']:.1f}", fraction, memory)  # fmt: skip
    notes = [f"{data['flops'] / 1e9:.2f} GFLOP per pass; NumPy GEMM peak {data['gemm_gflops']:.1f} GFLOP/s"]
    if data["torch"] is not None:
        ratio, diff, threads = data["ratio_tfm_over_torch"], data["max_rel_diff"], data["torch"]["threads"]
        notes.insert(0, f"tfm / PyTorch time = {ratio:.3f} (outputs agree to {diff:.2g}; PyTorch on {threads} threads)")
    table.caption = "\n".join(notes)
    return table


def diff_table(a: Spec, b: Spec, rows: list[dict[str, Any]], batch: int, n: int, dtype: str) -> Table:
    """Two specs side by side; differing rows in bold with the ratio b / a."""
    table = Table(title=f"{shown(a.label)} vs {shown(b.label)} (batch {batch}, n = {n}, {dtype})", title_justify="left")
    for col, justify in (("", "left"), (shown(a.label), "right"), (shown(b.label), "right"), ("b / a", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    section = None
    for row in rows:
        if row["section"] != section:
            if section is not None:
                table.add_section()
            section = row["section"]
        show = human if row["section"] == "memory" else (si if row["section"] == "FLOPs" else fmt)
        cells = [show(v) if isinstance(v, int) and not isinstance(v, bool) else fmt(v) for v in (row["a"], row["b"])]
        ratio = (f"{row['ratio']:.3g}x" if row.get("ratio") is not None else "differs") if row["differs"] else ""
        style = "bold yellow" if row["differs"] else ""
        table.add_row(Text(f"{row['section']}: {row['name']}", style=style), *cells, ratio)
    return table


def check_summary(results: list[Any], seq_len: int) -> Table:
    """One row per spec file: its figures, budgets, verify verdict and result."""
    table = Table(title="tfm check", title_justify="left")
    for col in ("spec", "parameters", f"forward memory (n = {seq_len})", "budgets", "verify", "result"):
        table.add_column(col, justify="right" if col in ("parameters",) else "left", overflow="fold")
    for r in results:
        verdict = (
            Text("ERROR", style="bold red")
            if r.error
            else styled({0: "PASS", 1: "FAIL", 3: "INCONCLUSIVE"}[int(r.exit_code)])
        )
        if r.error:
            table.add_row(shown(r.path), "-", "-", "-", shown(r.error), verdict)
        else:
            budgets = "; ".join(r.over_budget) or "within"
            name = f"{shown(r.path)} ({shown(r.name)})"
            table.add_row(name, fmt(r.params), human(r.memory), budgets, r.verify, verdict)
    return table
