"""The documentation's example commands, in order, and how to run them as a new user would (shared by
scripts/update_readme.py, which shows their outputs, and tests/cli/test_readme.py, which checks they run).

The documentation is the README and the site's pages (docs/, in mkdocs.yml's order): PAGES. Its examples run
in that order, as a reader following it from the README's tour through every page would run them.

The commands are those after `<!-- output: COMMAND -->` markers, and the `tfm ...` commands in ```bash
blocks (a `pip install ... && tfm verify` line gives `tfm verify`). They run in one scratch folder holding
only a link to `examples/`, so each input a command reads must be made by an earlier command, as on a
fresh clone; `tfm` there is this checkout's code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _nav_pages(nav: list) -> Iterator[str]:
    for entry in nav:
        for value in entry.values():
            yield from _nav_pages(value) if isinstance(value, list) else [f"docs/{value}"]


# the README, then the site's pages in the order of mkdocs.yml's nav, the one list of them
PAGES = ["README.md", *_nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])]
MARKER = re.compile(r"<!-- output: (.+?) -->\n```[a-z]*\n(.*?)```\n", re.DOTALL)
BLOCK = re.compile(r"```(bash|python)\n(.*?)```\n|" + MARKER.pattern, re.DOTALL)
EXIT = re.compile(r"\$ echo \$\?\n(\d+)\n?$")


class Example(NamedTuple):
    kind: str  # "output" (a marker: its output is shown), "bash" (a command in a bash block) or "python"
    code: str
    exit_code: int  # what the README shows (0 unless its block ends with `$ echo $?` and a code)


def documentation() -> str:
    """Every page's text, in PAGES' order."""
    return "\n".join((ROOT / page).read_text() for page in PAGES)


def examples(readme: str) -> list[Example]:
    """Every runnable example of the README, in the order shown."""
    found = []
    for match in BLOCK.finditer(readme):
        kind, body, command, shown = match.groups()
        if command is not None:
            code = EXIT.search(shown.rstrip() + "\n")
            found.append(Example("output", command, int(code.group(1)) if code else 0))
        elif kind == "python":
            found.append(Example("python", body, 0))
        else:
            for line in body.splitlines():
                for part in line.split("#")[0].split("&&"):
                    if part.strip().startswith("tfm "):
                        found.append(Example("bash", part.strip(), 0))
    return found


@contextmanager
def scratch() -> Iterator[Path]:
    """An empty folder with `examples/` linked in and a `tfm` that runs this checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "examples").symlink_to(ROOT / "examples")
        bin_ = folder / ".bin"
        bin_.mkdir()
        (bin_ / "tfm").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m transformer_cli "$@"\n')
        (bin_ / "tfm").chmod(0o755)
        yield folder


def run(example: Example, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run one example in `folder` as a user's shell would, plain text at 100 columns."""
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100", TERM="dumb", PYTHONPATH=str(ROOT))
    env["PATH"] = f"{folder / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, "-c", example.code] if example.kind == "python" else example.code
    return subprocess.run(
        command, shell=example.kind != "python", cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
