"""The docs build's picture (a MkDocs hook, mkdocs.yml `hooks:`): `tfm plan --plot` of the worked example in
docs/plan.md, drawn again before every build, so the picture always shows tfm's current figures. The file is
rewritten only when its bytes change (the drawing is deterministic), so `mkdocs serve` does not loop.

    python scripts/docs_picture.py    # the same, by hand
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "assets" / "plan-llama3-8b-tp2.svg"
COMMAND = [
    "plan",
    "examples/hf/Meta-Llama-3-8B",
    "-b",
    "16",
    "--tensor-parallel",
    "2",
    "--memory",
    "80G",
    "--hardware",
    "h100-sxm",
    "--hardware",
    "rtx-4090",
    "--plot-weights",
    "int4,nf4",
]


def draw() -> None:
    with tempfile.TemporaryDirectory() as folder:
        drawn = Path(folder) / PICTURE.name
        done = subprocess.run(
            [sys.executable, "-m", "transformer_cli", *COMMAND, "--plot", str(drawn), "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"docs picture: tfm {' '.join(COMMAND)} failed: {done.stderr.strip()}")
        if not PICTURE.exists() or PICTURE.read_bytes() != drawn.read_bytes():
            PICTURE.parent.mkdir(exist_ok=True)
            PICTURE.write_bytes(drawn.read_bytes())


def on_pre_build(config) -> None:  # type: ignore[no-untyped-def]  # (MkDocs' hook)
    draw()


if __name__ == "__main__":
    draw()
