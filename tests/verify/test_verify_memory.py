"""Issue 40, item 11: `tfm verify` and every `verify-*` command keep their peak RSS within --max-memory, or refuse
before allocating (exit 2, one line).

Each command runs in a fresh child of a fresh wrapper, so RUSAGE_CHILDREN's ru_maxrss is that command's own peak;
the promise is checked against the peak beyond the same command's run on a tiny input (the interpreter, NumPy and
its BLAS buffers, which --max-memory does not count). Every child runs under a 4 GB address-space limit, so a case
that broke its promise could not take the machine down.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
MiB = 1 << 20
GUARD = 4_000_000_000  # RLIMIT_AS of every child
BEFORE_ALLOCATING = 32 * MiB  # a refusal before any check's arrays exist: the startup's own noise at most

WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "transformer_cli", *sys.argv[1:]], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": done.returncode, "peak": peak, "stderr": done.stderr}))
"""


def _run(*args: str) -> tuple[int, int, list[str]]:
    """Exit code, peak RSS in bytes and the stderr lines (but the spec's note) of `tfm ARGS` in a child."""

    def guard() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (GUARD, GUARD))

    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *args],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=guard,
        timeout=300,
        cwd=ROOT,
    )
    result = json.loads(done.stdout)
    lines = [line for line in result["stderr"].splitlines() if not line.startswith("using")]
    return result["code"], result["peak"], lines


@pytest.fixture(scope="module")
def baseline() -> dict[str, int]:
    """Each command's peak on a tiny input: what it holds before any check's arrays."""
    found = {}
    for command in ("verify", "verify-equivariance", "verify-causality", "verify-decoding", "verify-relative"):
        code, peak, lines = _run(command, "--seq-len", "4")
        assert code == 0, lines
        found[command] = peak
    return found


# (command, n, --max-memory, the outcome expected): the default spec (d = 32), float32
CASES = [
    ("verify", "20000", "2G", 2),  # the case: grew to 22.7 GB; the softmax check's maps alone are 48 GiB
    ("verify", "1200", "150M", 2),  # softmax's maps (172 MiB) were allocated before equivariance refused
    ("verify", "150", "230M", 0),
    ("verify-decoding", "3000", "290M", 2),  # ran on: the float64 reference's pass took it to 318 MiB
    ("verify-decoding", "1500", "360M", 0),  # its figure 349 MiB; peaks seen 150-200 MiB beyond the start
    ("verify-relative", "800", "120M", 0),
    ("verify-equivariance", "1000", "260M", 0),  # its figure 254 MiB; peaks seen 198-240 MiB (a loaded CI run)
    ("verify-causality", "150", "110M", 0),
]


@pytest.mark.parametrize("command, n, budget, expected", CASES, ids=lambda c: str(c))
def test_a_verify_command_keeps_within_max_memory_or_refuses_before_allocating(baseline, command, n, budget, expected):
    code, peak, lines = _run(command, "--seq-len", n, "--max-memory", budget)
    beyond = peak - baseline[command]
    promise = int(budget[:-1]) * (MiB if budget.endswith("M") else 1024 * MiB)
    assert code == expected, (code, lines, beyond / MiB)
    if code == 0:
        assert beyond <= promise, f"{command} at n = {n}: {beyond / MiB:.0f} MiB beyond its start, over {budget}"
    else:
        assert beyond <= BEFORE_ALLOCATING, f"{command} at n = {n} allocated {beyond / MiB:.0f} MiB, then refused"
        assert len(lines) == 1 and lines[0].startswith("error: the ") and "more than" in lines[0], lines


@pytest.mark.parametrize("spec", [None, "examples/encoder-decoder/attention-is-all-you-need-transformer-base.yaml"])
def test_the_checks_are_held_to_the_memory_there_was_before_the_model_was_built(monkeypatch, spec):
    """Each check's estimate counts the model's weights (and its float64 twin's): it is compared with the room there
    was before they were allocated, not with what is left after (a 1.1B checkpoint's resident verify was refused by
    its own weights: 'needs about 16 GiB, more than the available memory of 9.99 GiB'). Here the room read after
    the model is built is 1 KiB: the checks still run, where each reading the room again refused."""
    import transformer_cli as tfm
    from transformer_cli.analysis import limits
    from transformer_cli.analysis.memory import MemoryLimitError
    from transformer_cli.model import transformer

    room = [1 << 40]
    monkeypatch.setattr(limits, "available_memory", lambda root=None: room[0])
    monkeypatch.setattr(limits, "cgroup_room", lambda root=None: None)
    monkeypatch.setattr(limits, "address_space_limit", lambda: None)
    built = transformer.Transformer.__init__

    def build(self, *args, **kwargs):
        built(self, *args, **kwargs)
        room[0] = 1024  # as if the weights had taken the rest

    monkeypatch.setattr(transformer.Transformer, "__init__", build)
    model = tfm.load(spec and ROOT / spec)
    assert model.verify(seq_len=4, dtype="float32").exit_code == 0
    with pytest.raises(MemoryLimitError, match="more than the available memory of 1 KiB"):  # the control
        model.verify(seq_len=4, dtype="float32")  # (the room read before this one's model: 1 KiB)
