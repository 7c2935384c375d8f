"""`tfm plan --plot FILE`: serving memory against the context as a picture (matplotlib, the `plot` extra), and
`--chart` (on a terminal, by default): the same as bars in the text output.

The first weights type is drawn as its parts stacked (weights, KV cache, the prefill's transient peak), each
other one as its total; the budget (--memory) and each listed GPU's memory are horizontal lines.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from ..analysis.units import human
from ..errors import TfmError

if TYPE_CHECKING:
    from ..analysis.serving import Serving

GIB = 1 << 30
FORMATS = ("png", "svg", "pdf")
PARTS = (("weights", "█", "blue"), ("kv_cache", "▓", "magenta"), ("transient", "░", "yellow"))
LABELS = {"weights": "weights", "kv_cache": "KV cache", "transient": "the prefill's transient peak"}


def plot_format(path: Path) -> str:
    kind = path.suffix.lower().lstrip(".")
    if kind not in FORMATS:
        raise TfmError(f"--plot {path}: expected a .png, .svg or .pdf file to draw into")
    return kind


def figure(
    title: str, lengths: list[int], curve: dict[str, list[Serving]], limits: list[tuple[str, int]], kind: str
) -> bytes:
    """The picture's bytes in `kind` (png, svg, pdf), the same for the same figures (no date, fixed ids)."""
    try:
        import matplotlib
    except ImportError:
        raise TfmError("--plot needs matplotlib: pip install 'tfm[plot]'") from None
    matplotlib.rcParams["svg.hashsalt"] = "tfm"  # the same ids each time
    matplotlib.rcParams["svg.fonttype"] = "none"  # text kept as text: searchable, read aloud
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.8), layout="constrained")
    ax = fig.subplots()
    first, *others = curve
    parts = [[getattr(s, part) / GIB for s in curve[first]] for part, _, _ in PARTS]
    labels = [f"{LABELS[part]} ({first})" if part == "weights" else LABELS[part] for part, _, _ in PARTS]
    ax.stackplot(lengths, *parts, labels=labels, colors=["#4c72b0", "#c44e52", "#dd8452"], alpha=0.85)
    for name in others:
        ax.plot(lengths, [s.total / GIB for s in curve[name]], "--", linewidth=1.6, label=f"total, weights {name}")
    for i, (label, size) in enumerate(limits):
        ax.axhline(size / GIB, linestyle=":", linewidth=1.4, color=f"C{(i + 4) % 10}", label=f"{label} ({human(size)})")
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2)
    ax.set_xlim(lengths[0], lengths[-1])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("GiB")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best", framealpha=0.9)
    buffer = io.BytesIO()
    metadata = {"Date": None} if kind == "svg" else ({"CreationDate": None} if kind == "pdf" else {"Software": None})
    fig.savefig(buffer, format=kind, metadata=metadata)
    return buffer.getvalue()


def chart(
    lengths: list[int], curve: dict[str, list[Serving]], limits: list[tuple[str, int]], columns: int = 80
) -> Table:
    """Bars of the first weights type's serving memory at each context, its parts in their own characters, each
    limit a '│' at its place on the same scale; the bars as long as `columns` leaves beside the labels and totals
    (at most 48 characters, at least 8), so a narrow terminal cuts neither."""
    first = next(iter(curve))
    top = max([s.total for s in curve[first]] + [size for _, size in limits])
    labels = [f"n = {n:,}" for n in lengths]
    totals = [human(s.total) for s in curve[first]]
    widest = max(map(len, labels)) + max(map(len, totals)) + 4  # the two columns and the spaces between
    width = max(8, min(48, columns - widest))
    marks = {min(round(size / top * width), width - 1) for _, size in limits}
    legend = ", ".join(f"{char} {LABELS[part]}" for part, char, _ in PARTS)
    caption = f"Serving memory, weights {first}: {legend}" + "".join(
        f"; │ at {human(size)}: {label}" for label, size in limits
    )
    table = Table(box=None, caption=caption, caption_justify="left", show_header=False, pad_edge=False)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    for label, total, serving in zip(labels, totals, curve[first], strict=True):
        cells: list[tuple[str, str]] = []
        for part, char, style in PARTS:
            cells += [(char, style)] * round(getattr(serving, part) / top * width)
        cells = (cells + [(" ", "")] * width)[:width]
        for column in marks:
            cells[column] = ("│", "bold red")
        bar = Text()
        for char, style in cells:
            bar.append(char, style=style or None)
        table.add_row(label, bar, total)
    return table


__all__ = ["FORMATS", "chart", "figure", "plot_format"]
