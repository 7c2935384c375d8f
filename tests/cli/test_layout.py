"""How output looks on a terminal: NO_COLOR is plain text, and narrow terminals never split a number or verdict."""

from __future__ import annotations

import functools
import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES

ROOT = Path(__file__).parents[2]
TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")
SEED = next(p for p in EXAMPLES if p.name == "seed-plain.yaml")
GPT2 = next(p for p in EXAMPLES if p.name == "gpt2-small.yaml")


def on_a_terminal(args: list[str], **env: str) -> str:
    """Run `tfm ARGS` with stdout and stderr on a pseudo-terminal; everything it printed."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS")}
    environ |= {"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "100"} | env
    proc = subprocess.Popen(
        [sys.executable, "-m", "transformer_cli", *args],
        stdout=follower,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env=environ,
        cwd=ROOT,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


@pytest.mark.parametrize(
    "args",
    [
        ["count", str(TINY)],
        ["verify", str(TINY), "-n", "4"],
        ["count", "--bogus"],
        ["verify-causality", "-n", "3"],
        ["attention", "--help"],
    ],
)
def test_no_color_on_a_terminal_is_plain_text(args):
    text = on_a_terminal(args, NO_COLOR="1")
    assert "\x1b[" not in text and len(text) > 20, text


def test_the_terminal_does_get_styles_without_no_color():
    """The control: the same pseudo-terminal shows bold and colour when NO_COLOR is not set."""
    assert "\x1b[1m" in on_a_terminal(["count", str(TINY)]) and "\x1b[" in on_a_terminal(["verify", "-n", "3"])


# -- narrow terminals ----------------------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.,/+-])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.,/])")
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "agrees")


@functools.cache  # each wide rendering serves three widths
def tfm(args: tuple[str, ...], columns: int) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {
        "PYTHONPATH": str(ROOT),
        "COLUMNS": str(columns),
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "transformer_cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def cells(text: str) -> list[str]:
    """The text of every table cell, line by line (split on the box characters)."""
    return [c.strip() for line in text.splitlines() for c in re.split(r"[│┃]", line) if c.strip()]


PRESETS = [arg for name in ("h100-sxm", "a100-80gb", "l4", "rtx-4090") for arg in ("--hardware", name)]  # not 'this':
# measured at each run, it would differ between the two renderings compared
CASES = {
    "count": ["count", str(GPT2)],
    "count -n": ["count", str(TINY), "-n", "1024"],
    "verify": ["verify", str(TINY), "-n", "4"],
    "verify-equivariance": ["verify-equivariance", "-k", "2"],
    "diff": ["diff", str(TINY), str(GPT2), "-n", "64"],
    "check": ["check", str(SEED), str(TINY), "-n", "64"],
    "plan": ["plan", str(ROOT / "examples" / "hf" / "Meta-Llama-3-8B"), "--memory", "80G", *PRESETS],  # issue 22
    "plan, an encoder": ["plan", str(ROOT / "examples" / "hf" / "bert-base-uncased"), "--memory", "1G", *PRESETS],
}


@pytest.mark.slow
@pytest.mark.parametrize("columns", [40, 60, 80])
@pytest.mark.parametrize("case", list(CASES))
def test_narrow_terminals_never_split_a_number_or_verdict(case, columns):
    wide, narrow = tfm(tuple(CASES[case]), 250), tfm(tuple(CASES[case]), columns)
    assert max(len(line) for line in narrow.splitlines()) <= columns
    assert "…" not in narrow  # nothing cut short (a column is dropped instead)
    whole = {m for cell in cells(wide) for m in NUMBER.findall(cell)} | set(VERDICTS)
    for cell in cells(narrow):
        for number in NUMBER.findall(cell):  # each number in a narrow cell is one the wide table shows
            assert number in whole or any(number in w for w in whole if "." in w), (number, cell)
        for word in re.findall(r"[A-Za-z]+", cell):
            assert not any(v != word and v.startswith(word) and len(word) > 1 for v in ("PASS", "INCONCLUSIVE")), cell
    for verdict in {v for v in VERDICTS if v in wide}:
        assert narrow.count(verdict) == wide.count(verdict), verdict


def test_a_formula_stays_on_one_line_at_60_columns(runner):
    """Issue 40, item 22: at 60 columns `verify` folded its property column to 10 characters and split
    'Transformer(XP) =' over two lines ('Transformer(XP', ') ='); the formula is now one phrase, and the columns
    the verdict makes redundant go first (at 80 columns every column stays: test_cli's verify table)."""
    from transformer_cli.cli import app

    result = runner.invoke(app, ["verify", str(TINY), "-n", "4"], env={"COLUMNS": "60", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 60 and "…" not in result.stdout
    rows = [c for line in result.stdout.splitlines() for c in re.split(r"[│┃]", line) if "Transformer" in c]
    assert [r.strip() for r in rows] == ["Transformer(XP) = Transformer(X)P"], rows
    assert result.stdout.count("PASS: as expected") == 7


def test_phrases_wrap_as_words_where_the_table_cannot_hold_them():
    """The control: a table too narrow for the formula beside the verdict wraps it as words, cutting nothing."""
    from rich.console import Console

    from transformer_cli.cli.layout import FitTable, Phrases

    table = FitTable(drop=["why", "expected", "observed"])  # as verify's
    table.add_column("property", overflow="fold")
    for name in ("expected", "observed", "verdict"):
        table.add_column(name, no_wrap=True)
    table.add_column("why", overflow="fold")
    table.add_row(
        Phrases("encoder: Transformer(XP) = Transformer(X)P"), "holds", "holds", "PASS: as expected", "no positions"
    )

    def shown(width: int) -> str:
        console = Console(width=width, file=io.StringIO(), color_system=None)
        console.print(table)
        return console.file.getvalue()  # type: ignore[attr-defined]

    assert "│ Transformer(XP) = Transformer(X)P    │" in shown(60)  # the cell's second line
    text = shown(40)
    assert "PASS: as expected" in text and "…" not in text and "Transformer(XP) = Transformer(X)P" not in text, text
