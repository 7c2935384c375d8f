"""A matrix of attention weights as shaded terminal cells (what `tfm attention` prints)."""

from __future__ import annotations

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

SHADES = " ░▒▓█"  # so the map reads without colour too (NO_COLOR, a pipe); " " only for exact zeros


def heatmap(A: np.ndarray, title: str, width: int) -> Group:
    """A (n_k, n_q) weight matrix as shaded cells; averaged into blocks only when its n_q query columns are wider
    than the terminal (the keys are rows: a cross-attention map of 7 source keys and 5 queries is 7 x 5)."""
    n_k, n_q = A.shape
    cells = max(1, (width - 12) // 2)  # the query columns that fit, two characters each, beside the row labels
    step = -(-n_q // cells)  # ceil: the same block size on both axes keeps the picture square
    pooled = _pool(A, step)
    top = float(pooled.max()) or 1.0
    table = Table(show_header=False, box=None, padding=0, pad_edge=False)
    table.add_column("k", justify="right", style="dim")
    for _ in range(pooled.shape[1]):
        table.add_column(width=2)
    for i, row in enumerate(pooled):
        label = f"{i * step}" if step == 1 else f"{i * step}-{min((i + 1) * step, n_k) - 1}"
        table.add_row(label + " ", *(_cell(v / top) for v in row))
    pooled_note = f"; blocks of {step} x {step} averaged" if step > 1 else ""
    caption = f"rows: key k, columns: query q (0 .. {n_q - 1}); darkest = {top:.3g}, blank = exactly 0{pooled_note}"
    return Group(Text(title, style="bold"), table, Text(caption, style="dim"))


def _pool(A: np.ndarray, step: int) -> np.ndarray:
    if step == 1:
        return A
    n_k, n_q = A.shape
    rows, cols = -(-n_k // step), -(-n_q // step)
    padded = np.full((rows * step, cols * step), np.nan)
    padded[:n_k, :n_q] = A
    return np.nanmean(padded.reshape(rows, step, cols, step), axis=(1, 3))


def _cell(level: float) -> Text:
    """Blank only for an exact zero (a masked key); any positive weight gets at least the lightest shade."""
    if level == 0:
        return Text("  ")
    shade = SHADES[min(len(SHADES) - 1, max(1, int(level * (len(SHADES) - 1) + 0.5)))] * 2
    grey = int(40 + 215 * level)
    return Text(shade, style=f"rgb({grey},{grey // 2},0) on rgb({grey // 3},{grey // 6},0)")
