"""Tables that fit the terminal: a number or verdict is never split, and less important columns go first.

Rich shrinks columns to fit by folding words and, as a last resort, every column alike, which splits
"16,576" into "16," and "576". A FitTable instead works out the narrowest each column can be — a cell
marked no_wrap (numbers, verdicts) whole, any other cell's longest word (at most FOLD characters in a
column that folds) — drops its droppable columns, least important first, until those widths fit, and
then hands the spare width to the columns that wrap. A Phrases cell (a formula such as
"Transformer(XP) = Transformer(X)P") keeps each phrase on one line where the terminal is too narrow for every
column anyway: more droppable columns go, so that its column is at least that wide.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Column, Table
from rich.text import Text

FOLD = 10  # the narrowest a folding column (paths, labels) may become


class Phrases(Text):
    """Text broken only between its phrases: a formula of applications 'F(X) = G(Y)Z' is one, any other word one.
    Where the table cannot hold the longest phrase on a line, the cell wraps as any other."""

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(text, **kwargs)
        self.phrases = re.findall(r"\S*\(\S*(?: = \S*\(\S*)+|\S+", text)

    def lines(self, width: int) -> Text:
        """The phrases, as many to a line as `width` holds (one too long for it alone on its line)."""
        lines: list[str] = []
        for phrase in self.phrases:
            if lines and cell_len(lines[-1]) + 1 + cell_len(phrase) <= width:
                lines[-1] += " " + phrase
            else:
                lines.append(phrase)
        return Text("\n".join(lines), style=self.style, justify=self.justify)


class FitTable(Table):
    """A Rich table that drops the columns named in `drop` (least important first) rather than split a number."""

    def __init__(self, *args: Any, drop: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drop = list(drop)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from Table.__rich_console__(fitted(self, options.max_width), console, options)


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _whole(cell: Any, column: Column) -> bool:
    """A cell that must stay on one line: in a no_wrap column, or a Text marked no_wrap."""
    return bool(cell.no_wrap) if isinstance(cell, Text) and cell.no_wrap is not None else column.no_wrap


def _widest_word(texts: Iterable[str]) -> int:
    return max((cell_len(word) for text in texts for word in text.split()), default=1)


def needed(column: Column, phrases: bool = True) -> tuple[int, int]:
    """(narrowest, widest) content width of a column; a header may always wrap between words; with `phrases`, a
    Phrases cell's longest phrase is whole."""
    cap = FOLD if column.overflow == "fold" else 10**9
    whole = [_plain(c) for c in column.cells if _whole(c, column)]
    words = [_plain(c) for c in column.cells if not _whole(c, column)] + [_plain(column.header)]
    kept = [cell_len(p) for c in column.cells if phrases and isinstance(c, Phrases) for p in c.phrases]
    narrowest = max(
        max((cell_len(line) for t in whole for line in t.splitlines()), default=1),
        min(cap, _widest_word(words)),
        max(kept, default=1),
    )
    widest = max((cell_len(line) for c in [*column.cells, column.header] for line in _plain(c).splitlines()), default=1)
    return narrowest, max(narrowest, widest)


def _borders(table: Table, columns: int) -> int:
    if not table.box:
        return 0
    return columns + 1 if table.show_edge else columns - 1


def fitted(table: Table, width: int) -> Table:
    """A copy of `table` whose columns fit `width`: droppable ones removed first, then widths set explicitly."""
    pad = table.padding[1] + table.padding[3]
    drop = list(getattr(table, "drop", []))
    columns = list(table.columns)
    sizes = {id(c): needed(c, phrases=False) for c in columns}
    total = lambda cols, i: sum(sizes[id(c)][i] + pad for c in cols) + _borders(table, len(cols))  # noqa: E731

    def shed(columns: list[Column]) -> list[Column]:
        while total(columns, 1) > width and total(columns, 0) > width and drop:
            name = drop.pop(0)
            columns = [c for c in columns if _plain(c.header) != name]
        return columns

    columns = shed(columns)
    phrases = len(columns) < len(table.columns)  # too narrow for every column: the droppable go before a phrase
    if phrases:
        sizes = {id(c): needed(c) for c in columns}
        columns = shed(columns)
        phrases = total(columns, 0) <= width  # else they wrap as words: a wide phrase, a narrow terminal
        if not phrases:
            sizes = {id(c): needed(c, phrases=False) for c in columns}
    widths = [sizes[id(c)][1] for c in columns]
    if total(columns, 1) > width:  # share what is left: one character at a time to the narrowest that can grow
        widths = [sizes[id(c)][0] for c in columns]
        for _ in range(max(0, width - total(columns, 0))):
            growing = [i for i, c in enumerate(columns) if widths[i] < sizes[id(c)][1]]
            if not growing:
                break
            widths[min(growing, key=lambda i: widths[i])] += 1
    out = copy.copy(table)
    out.columns = [
        replace(
            c,
            _index=i,
            width=w,
            header=Text(_plain(c.header), no_wrap=False) if c.header else c.header,
            _cells=[cell.lines(w) if phrases and isinstance(cell, Phrases) else cell for cell in c.cells],
        )
        for i, (c, w) in enumerate(zip(columns, widths, strict=True))
    ]
    return out
