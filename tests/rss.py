"""Peak RSS of a command, measured in a grandchild of the test process.

A process's ru_maxrss starts at its parent's high-water mark when it is forked (the kernel carries the old memory's
peak across exec), so a command started straight from a large pytest process reports pytest's size, not its own.
The command runs as the child of a small fresh Python instead, whose RUSAGE_CHILDREN is that command's own peak; an
optional address-space limit (RLIMIT_AS) is set on the command alone, so a broken promise cannot take the machine
down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parent.parent

WRAPPER = """
import json, resource, subprocess, sys
limit = int(sys.argv[1])
def guard():
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
done = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=guard)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # (kilobytes on Linux)
print(json.dumps({"code": done.returncode, "peak": peak, "stdout": done.stdout, "stderr": done.stderr}))
"""


@dataclass
class Measured:
    code: int
    peak: int  # bytes
    stdout: str
    stderr: str


def measured(args: list[str], limit: int = 0, timeout: float = 600) -> Measured:
    """Run `args` (a command line) with the checkout on PYTHONPATH and `limit` bytes of address space (0: none)."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(limit), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
        check=True,
    )
    return Measured(**json.loads(done.stdout))


def tfm(*args: object, limit: int = 0, timeout: float = 600) -> Measured:
    """`tfm ARGS` measured (python -m transformer_cli)."""
    return measured([sys.executable, "-m", "transformer_cli", *map(str, args)], limit, timeout)
