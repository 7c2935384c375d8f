"""Rich tables for the CLI. Only presentation: every figure comes from the core's result objects."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from ..analysis.units import human, scientific
from ..spec.definition import LABELS
from ..text import escaped as shown  # user text: never markup, control characters escaped
from .layout import FitTable, Phrases

if TYPE_CHECKING:  # only for annotations: rendering a count must not import the model
    from ..analysis.params import Blocks, ParamCount
    from ..spec.definition import Spec
    from ..tasks.runner import RunResult
    from ..tasks.sources import CheckpointSummary
    from ..verify import CheckResult

VERDICT_STYLE = {
    "PASS": "bold green",
    "FAIL": "bold red",
    "INCONCLUSIVE": "bold yellow",
    "caught": "green",
    "MISSED": "bold red",
    "LEAKS": "bold",  # what a trial observed; whether that was expected is the verdict's business
    "DIFFERS": "bold",
    "BREAKS": "bold",
    "OUTSIDE band": "bold",
}


# Trial columns a narrow terminal gives up first (after these, the middle ones from the right).
LESS_IMPORTANT = (
    "fixed",
    "abs error",
    "moved",
    "min weight",
    "influence of column 0",
    "tol",
    "band (+/-)",
    "if the scale were ignored",
)


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


def styled(value: Any) -> Text | str:
    text = fmt(value)
    return Text(text, style=VERDICT_STYLE[text]) if text in VERDICT_STYLE else text


def count_table(count: ParamCount, source: str) -> Table:
    """Every tensor of one block (the same for each block), the model-level tensors, and the closed form."""
    spec = count.spec
    title, caption = f"Parameters of {shown(spec.summary())}", f"spec: {shown(source)}"
    table = FitTable(title=title, caption=caption, title_justify="left", drop=["shape", "component"])
    table.add_column(f"tensor (i = {layer_list(count.sections[0].layers)})", no_wrap=True)
    table.add_column("shape")
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("component")
    for k, blocks in enumerate(count.sections):
        _blocks_rows(table, blocks, k)
    if count.model:
        table.add_section()
        for t in count.model:
            table.add_row(t.name, fmt(t.shape), fmt(t.count), t.component)
    table.add_section()
    agree = "agrees" if count.total == count.closed_total else "DIFFERS"
    label = Text(f"total (closed form {agree})", style="bold", no_wrap=False)  # the verdict stays when columns go
    table.add_row(label, f"closed form {fmt(count.closed_total)}", Text(fmt(count.total), style="bold"), "")
    if count.active != count.total:
        table.add_row(
            "active per token",
            "at most: the k experts a token is routed to, none a zero expert; all else, the embedding too"
            if count.spec.zero_experts
            else "the k experts a token is routed to; all else, the embedding too (as Mistral, Qwen, DeepSeek publish)",
            fmt(count.active),
            "",
        )
        table.add_row(
            "  without the embedding",
            "less the token embedding table (as OpenAI publishes gpt-oss's)",
            fmt(count.active_without_embedding),
            "",
        )
    return table


def layer_list(layers: Sequence[int]) -> str:
    """Block indices in few characters: '0 .. 11', '0, 2, 4', '1, 3, 5, ... 59 (30 blocks)'."""
    if isinstance(layers, range):  # a uniform stack's (N may be past len())
        return f"{layers[0]} .. {layers[-1]}"
    if list(layers) == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]} .. {layers[-1]}" if len(layers) > 1 else str(layers[0])
    if len(layers) <= 4:
        return ", ".join(map(str, layers))
    return f"{', '.join(map(str, layers[:3]))}, ... {layers[-1]} ({len(layers)} blocks)"


def _blocks_rows(table: Table, blocks: Blocks, k: int) -> None:
    """One section of the count: the tensors of blocks alike (all of a uniform stack's), their counts."""
    i = "j" if blocks.stack == "encoder" else "i"
    name = blocks.scope  # 'block', 'encoder block', 'dense block', ...
    if k > 0:  # the first section's indices head the column
        table.add_section()
        table.add_row(f"{name}s ({i} = {layer_list(blocks.layers)})", "", "", "")
    first = f"{blocks.stack}.{blocks.layers[0]}."
    for t in blocks.tensors:
        table.add_row(t.name.replace(first, f"{blocks.stack}.{i}."), fmt(t.shape), fmt(t.count), t.component)
    if k == 0:
        table.add_section()
    note = "independent of sequence length n" if k == 0 else ""
    table.add_row(f"per {name} (from shapes)", "", fmt(blocks.per_block), note)
    table.add_row(
        f"per {name} (closed form)",
        " + ".join(t.formula for t in blocks.terms),
        fmt(blocks.closed_per_block),
        "seed property (b)" if k == 0 else "",
    )
    shared = f"shared by {blocks.runs:,} {name}s" if blocks.copies < blocks.runs else ""  # (ALBERT's)
    table.add_row(f"x {blocks.copies} {name}s", "", fmt(blocks.copies * blocks.per_block), shared)


def comparison_table(counts: list[ParamCount]) -> Table:
    """Several specs side by side: their keys, per-component totals and totals."""
    table = FitTable(title="Parameter counts side by side", title_justify="left")
    table.add_column("", overflow="fold")
    for c in counts:
        table.add_column(shown(c.spec.label), justify="right", no_wrap=True)
    keys = list(dict.fromkeys(k for c in counts for k in c.spec.to_dict() if k not in LABELS))
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
    """1234567 -> '1.23 M', in powers of 1000 (FLOPs, parameters); past 1000 P '1.2e+405' (never overflows)."""
    if isinstance(value, int) and abs(value) >= 10**18:
        return ("-" if value < 0 else "") + scientific(abs(value))
    for unit in ("", " K", " M", " G", " T", " P"):
        if abs(value) < 1000 or unit == " P":
            return f"{value:.3g}{unit}" if unit else f"{value:,.0f}"
        value /= 1000
    raise AssertionError("unreachable")


def run_table(result: RunResult) -> Table:
    data = result.to_dict()
    title = f"Forward pass of {shown(result.spec.summary())}"
    table = FitTable(title=title, title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("", no_wrap=True)
    table.add_row("input shape", fmt(data["input_shape"]))
    table.add_row("output shape", fmt(data["output_shape"]))
    table.add_row("dtype", data["dtype"])
    table.add_row("weights", shown(data["weights"]))
    table.add_section()
    for key, value in data["output_stats"].items():
        table.add_row(f"output {key}", fmt(value))
    table.add_section()
    for key, value in data["activation_rms"].items():
        table.add_row(f"RMS {key.replace('_plus_', ' + ').replace('_', ' ')}", fmt(value))
    return table


def check_table(result: CheckResult) -> Table:
    """One row per trial, then the summary and verdict in the caption."""
    middle = result.columns[1:-1]  # on a narrow terminal: the first (the trial) and last (its result) stay
    drop = [c for c in LESS_IMPORTANT if c in middle] + [c for c in middle[::-1] if c not in LESS_IMPORTANT]
    table = FitTable(title=f"{result.title}", title_justify="left", drop=drop)
    for i, col in enumerate(result.columns):  # figures and verdicts never wrap; the trial's name may
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i > 0)
    for row in result.rows:
        table.add_row(*(styled(v) for v in row))
    return table


VERDICT_WORDS = {"PASS": "PASS: as expected", "FAIL": "FAIL: not as expected", "INCONCLUSIVE": "INCONCLUSIVE"}


def verdict_cell(result: CheckResult) -> Text:
    """The verdict in words that cannot be read as 'the property holds': PASS means observed as expected."""
    return Text(VERDICT_WORDS[result.verdict], style=VERDICT_STYLE[result.verdict])


def summary_table(result: CheckResult) -> Table:
    table = FitTable(show_header=False, title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("")
    words = result.to_dict()  # the same words the JSON output carries
    table.add_row("theory predicts", words["predicted"] + (f" ({result.reason})" if result.reason else ""))
    table.add_row("expected", f"the property {words['expected']}")
    table.add_row("observed", f"the property {words['observed']}: {result.observation}")
    for key, value in result.summary.items():
        if not isinstance(value, (dict, list)):
            table.add_row(key.replace("_", " "), fmt(value))
    table.add_row("verdict", verdict_cell(result))
    return table


def verify_table(spec: Spec, results: list[CheckResult]) -> Table:
    """One row per check: what was expected, what was observed, whether they agree, and why."""
    table = FitTable(
        title=f"Properties of {shown(spec.summary())}", title_justify="left", drop=["why", "expected", "observed"]
    )  # the verdict says whether they agree
    table.add_column("property", overflow="fold")
    table.add_column("expected", no_wrap=True)  # under `tfm verify`: what theory predicts for the spec
    table.add_column("observed", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("why", overflow="fold")
    for r in results:
        words = r.to_dict()
        table.add_row(Phrases(r.title), words["expected"], words["observed"], verdict_cell(r), r.reason)
    return table


def bench_table(data: dict[str, Any]) -> Table:
    """tfm's time per forward, throughput, FLOP rate against NumPy's GEMM peak, and memory."""
    title = f"Forward pass of {shown(data['name'])}: batch {data['batch']}, n = {data['seq_len']}, {data['dtype']}"
    table = FitTable(title=title, title_justify="left", drop=["min .. max", "of GEMM peak", "peak memory", "GFLOP/s"])
    for col in ("", "median", "min .. max", "tokens/s", "GFLOP/s", "of GEMM peak", "peak memory"):
        table.add_column(col, justify="left" if not col else "right", no_wrap=bool(col))
    for name, run in [("tfm", data["tfm"])]:
        fraction = f"{run['gflops'] / data['gemm_gflops']:.2f}"
        memory = human(run["peak_bytes"]) if "peak_bytes" in run else "-"
        table.add_row(
            name,
            f"{run['median_s'] * 1e3:.1f} ms",
            f"{run['min_s'] * 1e3:.1f} .. {run['max_s'] * 1e3:.1f}",
            f"{run['tokens_per_s']:,.0f}",
            f"{run['gflops']:.1f}",
            fraction,
            memory,
        )
    blas = data["blas"]
    notes = [
        f"{data['flops'] / 1e9:.2f} GFLOP per pass; NumPy GEMM peak {data['gemm_gflops']:.1f} GFLOP/s "
        f"({blas['library']} {blas['version']}, kernel {blas['kernel']}, {blas['threads']} threads)"
    ]
    if blas["warning"]:
        notes.append(f"warning: {blas['warning']}")
    notes.append("tfm beside PyTorch, torch.compile, JAX and ONNX Runtime: python benchmarks/peers.py")
    table.caption = "\n".join(notes)
    return table


def diff_table(a: Spec, b: Spec, rows: list[dict[str, Any]], batch: int, n: int, dtype: str) -> Table:
    """Two specs side by side; differing rows in bold with the ratio b / a."""
    title = f"{shown(a.label)} vs {shown(b.label)} (batch {batch}, n = {n}, {dtype})"
    table = FitTable(title=title, title_justify="left", drop=["b / a"])
    for col, justify in (("", "left"), (shown(a.label), "right"), (shown(b.label), "right"), ("b / a", "right")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    section = None
    for row in rows:
        if row["section"] != section:
            if section is not None:
                table.add_section()
            section = row["section"]
        show = human if row["section"] == "memory" else (si if row["section"] == "FLOPs" else fmt)
        cells = [
            Text(show(v), no_wrap=True) if isinstance(v, int) and not isinstance(v, bool) else fmt(v)
            for v in (row["a"], row["b"])
        ]
        ratio = (_times(row["ratio"]) if row.get("ratio") is not None else "differs") if row["differs"] else ""
        ratio = "same effect" if row.get("equivalent") else ratio
        style = "bold yellow" if row["differs"] else ""
        table.add_row(Text(f"{row['section']}: {row['name']}", style=style), *cells, Text(ratio, no_wrap=True))
    return table


def _times(ratio: float) -> str:
    return f"{ratio:.3g}x" if math.isfinite(ratio) else "more than 1e308x"


def check_summary(results: list[Any], seq_len: int) -> Table:
    """One row per spec file: its figures, budgets, verify verdict and result."""
    memory = f"forward memory (n = {seq_len})"
    table = FitTable(title="tfm check", title_justify="left", drop=[memory, "parameters", "budgets"])
    for col in ("spec", "parameters", memory, "budgets", "verify", "result"):
        numeric = col in ("parameters", memory, "result")
        table.add_column(
            col,
            justify="right" if col == "parameters" else "left",
            no_wrap=numeric,
            overflow="fold" if col == "spec" else "ellipsis",
        )
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
            small = r.verified_on
            on = (
                f" (on a scaled-down copy: N={small['N']}, d={small['d']}, r={small['r']}, m={small['m']})"
                if small
                else ""
            )
            checks = Text.assemble(styled(r.verify), on, *(f"\n{shown(line)}" for line in r.failed_checks()))
            name = f"{shown(r.path)} ({shown(r.name)})"
            params = fmt(r.params) if r.params < 10**15 else scientific(r.params)  # 10^400 would be 533 wide
            table.add_row(name, params, human(r.memory), budgets, checks, verdict)
    return table


def gguf_line(source: str, g: dict) -> str:
    """A GGUF file: its tensors, and the bits per weight of each GGML type it stores (from its real bytes)."""
    types = ", ".join(
        f"{kind} {row['parameters']:,} ({row['bits_per_weight']:.2f} bits)"
        for kind, row in sorted(g["types"].items(), key=lambda kv: -kv[1]["parameters"])
    )
    return (
        f"GGUF {shown(source)} (v{g['version']}): {g['tensors']:,} tensors, {human(g['file_bytes'])}; every tensor "
        f"fits its metadata ({g['parameters']:,} parameters stored, {g['bits_per_weight']:.2f} bits per weight: "
        f"{types})"
    )


def _bits(bits: float) -> str:
    """Bits per weight to two decimals, or to four below 0.01 (a scale per 128 x 128 block: 0.0020)."""
    return f"{bits:.2f}" if bits >= 0.01 or bits == 0 else f"{bits:.4f}"


def quantized_line(source: str, checkpoint: dict, files: str) -> str:
    """A quantised checkpoint: its packed weights' bits per weight (what each kind of their bytes costs), the
    rest by dtype, and its true parameters beside the elements its tensors hold."""
    q, n = checkpoint["quantization"], checkpoint["parameters"]
    packed = q["packed"]
    weights = packed["parameters"]
    kinds = ", ".join(f"{kind} {_bits(8 * size / weights)}" for kind, size in packed["bytes_by_kind"].items())
    plain = ", ".join(
        f"{code} {row['parameters']:,} ({row['bits_per_weight']:.2f} bits)" for code, row in sorted(q["plain"].items())
    )
    runs = "" if q["runs"] else "; counted and planned, not run"
    return (
        f"checkpoint {shown(source)}: {files}, {checkpoint['tensors']:,} tensors, {human(checkpoint['bytes'])}, "
        f"{shown(q['scheme'])}: {packed['weights']:,} packed weights, {packed['parameters']:,} parameters at "
        f"{packed['bits_per_weight']:.2f} bits per weight ({kinds}); {plain or 'nothing else'}; every tensor fits "
        f"config.json ({n:,} parameters; its tensors hold {checkpoint['stored_elements']:,} elements"
        f"{_skipped(checkpoint)}){runs}"
    )


def _skipped(checkpoint: dict) -> str:
    """The tensors a checkpoint holds that tfm does not read (a masked-LM head, buffers, tied copies), named."""
    skipped = checkpoint.get("skipped") or {"tensors": []}
    names = [shown(name) for name in skipped["tensors"]]
    if not names:
        return ""
    listed = ", ".join(names[:4]) + (f" and {len(names) - 4:,} more" if len(names) > 4 else "")
    tensors = f"{len(names):,} tensor{'s' if len(names) > 1 else ''}"
    return f"; beside them {tensors} of {skipped['values']:,} values tfm does not read: {listed}"


def checkpoint_line(source: str, summary: CheckpointSummary) -> str:
    """One line on a Hugging Face checkpoint whose headers fit its config (or on a GGUF file's tensors): the
    figures of its --json, summary.to_dict()."""
    checkpoint = summary.to_dict()
    if summary.kind == "gguf":
        return gguf_line(source, checkpoint)
    files = f"{checkpoint['files']} file{'s' if checkpoint['files'] > 1 else ''}"
    if "quantization" in checkpoint:
        return quantized_line(source, checkpoint, files)
    return (
        f"checkpoint {shown(source)}: {files}, {checkpoint['tensors']:,} tensors, {human(checkpoint['bytes'])} "
        f"{'/'.join(checkpoint['dtypes'])}; every tensor fits config.json "
        f"({checkpoint['parameters']:,} parameters stored{_skipped(checkpoint)})"
    )
