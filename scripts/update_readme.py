"""Refresh the command outputs shown in README.md by running the commands (so none is typed by hand).

Each block to refresh follows a marker line `<!-- output: COMMAND -->`; COMMAND runs in a scratch folder
where `x.npy` (32 x 10) exists and `examples/` is reachable, with NO_COLOR=1 and COLUMNS=100, and the code
block after the marker is replaced by `$ COMMAND`, its output, and a line with its exit code if not 0.

    python scripts/update_readme.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- output: (.+?) -->\n```[a-z]*\n.*?```\n", re.DOTALL)


def run(command: str, folder: Path) -> str:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100", TERM="dumb")
    done = subprocess.run(command, shell=True, cwd=folder, env=env, capture_output=True, text=True)
    text = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).rstrip().splitlines())
    code = f"\n$ echo $?\n{done.returncode}" if done.returncode else ""
    return f"$ {command}\n{text}{code}"


def main() -> None:
    readme = ROOT / "README.md"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "examples").symlink_to(ROOT / "examples")
        np.save(folder / "x.npy", np.random.default_rng(0).normal(size=(32, 10)))
        np.save(folder / "x16.npy", np.random.default_rng(0).normal(size=(16, 12)))
        text = MARKER.sub(lambda m: f"<!-- output: {m.group(1)} -->\n```\n{run(m.group(1), folder)}\n```\n",
                          readme.read_text())  # fmt: skip
    readme.write_text(text)
    print(f"refreshed {len(MARKER.findall(text))} outputs in {readme}", file=sys.stderr)


if __name__ == "__main__":
    main()
