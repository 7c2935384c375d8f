"""The modules each command loads, from a fresh process: what a function-level import saves at start-up.

    python scripts/startup_modules.py OUT.json             # measure every command path below
    python scripts/startup_modules.py OUT.json BEFORE.json # and say which command loads more or fewer than before

A function-level import is there for start-up only if some command loads its file but not the module it imports;
moving imports to the top of their files leaves every command's set as it was (the second form checks it). The
commands run in a scratch folder on the built-in default spec, an example config and a tiny token model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GPT2 = str(ROOT / "examples" / "configs" / "gpt2-small.yaml")
LLAMA = str(ROOT / "examples" / "hf" / "Llama-2-7b" / "config.json")
ROOTS = ("transformer_cli", "gguf", "yaml", "rich", "tokenizers", "safetensors", "matplotlib", "typer", "threadpoolctl")
REPORT = f"import json, sys; print('MODS' + json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {ROOTS})))"
COMMANDS = {
    "help": ["--help"],
    "count": ["count"],
    "count-gpt2": ["count", GPT2],
    "count-hf": ["count", LLAMA],
    "run": ["run", "-i", "x.npy", "-o", "y.npy", "--force"],
    "sample": ["sample", "-n", "4", "-o", "s.npy", "--force"],
    "init": ["init", "-o", "w.npz", "--force"],
    "generate": ["generate", "lm.yaml", "-i", "ids.npy", "-k", "2"],
    "attention": ["attention", "-i", "x.npy", "--json"],
    "verify": ["verify", "--seq-len", "4"],
    "verify-causality": ["verify-causality", "--seq-len", "4"],
    "diff": ["diff", GPT2, GPT2],
    "plan": ["plan", GPT2],
    "plan-hf": ["plan", LLAMA, "--weights", "q4_k_m"],
    "check": ["check", GPT2],
    "schema": ["schema"],
    "bench": ["bench", "--seq-len", "8", "--repeat", "2"],
}
HELPS = ["count", "init", "run", "sample", "generate", "schema", "diff", "spec", "convert", "attention", "verify"]
HELPS += ["verify-equivariance", "verify-causality", "verify-decoding", "verify-relative", "verify-scaling"]
HELPS += ["plan", "check", "bench"]


def loaded(code: str, cwd: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("MODS")][-1][4:])


def measure() -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as scratch:
        np.save(Path(scratch) / "x.npy", np.random.default_rng(0).standard_normal((32, 5)))
        np.save(Path(scratch) / "ids.npy", np.array([[1, 2, 3]]))
        (Path(scratch) / "lm.yaml").write_text("N: 1\nH: 2\nm: 4\nd: 8\nr: 8\nV: 11\nmask: causal\n")
        commands = COMMANDS | {f"{name}-help": [name, "--help"] for name in HELPS}
        run = "import sys, runpy; sys.argv = ['tfm'] + {!r}\ntry:\n    runpy.run_module('transformer_cli', "
        run += "run_name='__main__')\nexcept SystemExit:\n    pass\n"
        found = {name: loaded(run.format(args) + REPORT, scratch) for name, args in commands.items()}
        every = "from transformer_cli.cli import load_commands; load_commands()\n"  # every command's options built
        return found | {"every-command": loaded(every + REPORT, scratch)}


def main(out: str, before: str | None = None) -> int:
    found = measure()
    Path(out).write_text(json.dumps(found, indent=0))
    print(f"{len(found)} command paths measured into {out}")
    if before is None:
        return 0
    old = json.loads(Path(before).read_text())
    changed = 0
    for name in sorted(set(old) & set(found)):
        more, fewer = set(found[name]) - set(old[name]), set(old[name]) - set(found[name])
        if more or fewer:
            changed += 1
            print(f"{name}: loads {sorted(more)} more, {sorted(fewer)} fewer")
    print(f"{changed} of {len(set(old) & set(found))} command paths load other modules than before")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
