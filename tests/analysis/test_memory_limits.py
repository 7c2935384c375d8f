"""The memory a pass may take: the limits tfm reads (cgroups v1 and v2, the address space, --max-memory) and the
one-line refusal when a pass would pass them."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from transformer_cli import Spec
from transformer_cli.analysis import limits
from transformer_cli.analysis.memory import MemoryLimitError, check_memory, estimate_forward, out_of_memory
from transformer_cli.cli import app
from transformer_cli.model import transformer as model_module

ROOT = Path(__file__).parents[2]
GPT2 = ROOT / "examples" / "configs" / "gpt2-small.yaml"
GiB, MiB = 1 << 30, 1 << 20


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_cgroup_v2_limit_less_usage(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/user.slice/tfm.scope\n",
            "sys/fs/cgroup/cgroup.procs": "",
            "sys/fs/cgroup/user.slice/memory.max": "max\n",
            "sys/fs/cgroup/user.slice/memory.current": "900000000\n",
            "sys/fs/cgroup/user.slice/tfm.scope/memory.max": f"{GiB}\n",
            "sys/fs/cgroup/user.slice/tfm.scope/memory.current": f"{200 * MiB}\n",
        },
    )
    assert limits.cgroup_room(root) == (GiB - 200 * MiB, GiB, 200 * MiB)


def test_cgroup_v2_a_parents_limit_binds(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/a/b\n",
            "sys/fs/cgroup/cgroup.procs": "",
            "sys/fs/cgroup/a/memory.max": f"{500 * MiB}\n",
            "sys/fs/cgroup/a/memory.current": f"{400 * MiB}\n",
            "sys/fs/cgroup/a/b/memory.max": f"{GiB}\n",
            "sys/fs/cgroup/a/b/memory.current": f"{10 * MiB}\n",
        },
    )
    assert limits.cgroup_room(root) == (100 * MiB, 500 * MiB, 400 * MiB)


def test_cgroup_v2_max_is_no_limit(tmp_path):
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/a\n",
            "sys/fs/cgroup/cgroup.procs": "",
            "sys/fs/cgroup/a/memory.max": "max\n",
            "sys/fs/cgroup/a/memory.current": "12345\n",
        },
    )
    assert limits.cgroup_room(root) is None


def test_cgroup_v1_limit_and_its_no_limit_value(tmp_path):
    files = {
        "proc/self/cgroup": "9:name=systemd:/\n4:memory:/docker/abc\n0::/\n",
        "sys/fs/cgroup/memory/cgroup.procs": "",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        "sys/fs/cgroup/memory/memory.usage_in_bytes": "5000000000\n",
        "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": f"{2 * GiB}\n",
        "sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes": f"{GiB}\n",
    }
    assert limits.cgroup_room(_tree(tmp_path / "limited", files)) == (GiB, 2 * GiB, GiB)
    files["sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"] = "9223372036854771712\n"
    assert limits.cgroup_room(_tree(tmp_path / "unlimited", files)) is None


def test_cgroup_v1_in_a_container_reads_the_mounts_own_files(tmp_path):
    """In a cgroup namespace /proc/self/cgroup names a path the container's mount does not have."""
    root = _tree(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/kubepods/pod1/abc\n",
            "sys/fs/cgroup/memory/cgroup.procs": "",
            "sys/fs/cgroup/memory/memory.limit_in_bytes": f"{GiB}\n",
            "sys/fs/cgroup/memory/memory.usage_in_bytes": f"{300 * MiB}\n",
        },
    )
    assert limits.cgroup_room(root) == (GiB - 300 * MiB, GiB, 300 * MiB)


def test_the_address_space_limit_is_rlimit_as_less_vmsize(tmp_path, monkeypatch):
    root = _tree(
        tmp_path,
        {
            "proc/self/status": "Name: python\nVmSize:\t  1048576 kB\n",
            "proc/meminfo": "MemTotal: 99999999 kB\nMemAvailable: 20971520 kB\n",
        },
    )
    monkeypatch.setattr(limits, "address_space_limit", lambda: 3 * GiB)
    found = {lim.kind: lim for lim in limits.memory_limits(root)}
    assert found["available"].free == 20 * GiB and found["ulimit"].free == 2 * GiB
    assert limits.tightest_limit(root) == found["ulimit"]


def _only(monkeypatch, **limit: int) -> None:
    """Make the readers see just these limits: available=, cgroup=, ulimit= (bytes free)."""
    monkeypatch.setattr(limits, "available_memory", lambda root=None: limit.get("available"))
    cgroup = limit.get("cgroup")
    monkeypatch.setattr(limits, "cgroup_room", lambda root=None: None if cgroup is None else (cgroup, cgroup, 0))
    ulimit = limit.get("ulimit")
    monkeypatch.setattr(limits, "address_space_limit", lambda: ulimit)
    monkeypatch.setattr(limits, "mapped", lambda root=None: 0)


SMALL = estimate_forward(Spec(N=2, H=4, m=8, d=32, r=64), 1, 1024)  # about 35 MiB


@pytest.mark.parametrize(
    ("limit", "words", "not_words"),
    [
        ({"available": 10 * MiB}, ["the available memory of 10 MiB", "lower the batch"], ["--max-memory"]),
        ({"available": GiB, "cgroup": 10 * MiB}, ["memory cgroup", "10 MiB", "larger cgroup limit"], ["--max-memory"]),
        (
            {"available": GiB, "ulimit": 10 * MiB},
            ["address-space limit (ulimit -v) of 10 MiB", "raise ulimit -v"],
            ["--max-memory"],
        ),
    ],
)
def test_the_refusal_names_the_limit_that_applied(monkeypatch, limit, words, not_words):
    _only(monkeypatch, **limit)
    with pytest.raises(MemoryLimitError) as caught:
        check_memory(SMALL, None, "this forward pass")
    message = str(caught.value)
    assert all(w in message for w in words) and not any(w in message for w in not_words), message


def test_max_memory_replaces_the_available_memory_but_not_the_hard_limits(monkeypatch):
    _only(monkeypatch, available=10 * MiB, ulimit=20 * MiB)
    check_memory(estimate_forward(Spec(N=1, H=1, m=1, d=1, r=1), 1, 1), "1G", "x")  # above MemAvailable: allowed
    with pytest.raises(MemoryLimitError, match=r"ulimit -v"):
        check_memory(SMALL, "1G", "this forward pass")
    with pytest.raises(MemoryLimitError, match=r"the --max-memory of 1 MiB; raise it"):
        check_memory(SMALL, "1M", "this forward pass")


def test_a_memory_error_under_ulimit_never_advises_max_memory(monkeypatch):
    _only(monkeypatch, available=GiB, ulimit=5 * MiB)
    message = out_of_memory()
    assert "ulimit -v" in message and "--max-memory" not in message


def test_a_memory_error_in_a_worker_thread_is_the_one_line_refusal(runner, tmp_path, monkeypatch):
    """Big enough to be split over threads; the softmax fails inside a worker."""
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((4, 32, 1024)))

    threads = []

    def fail(P, normalise=True):
        threads.append(threading.current_thread().name)
        raise MemoryError

    monkeypatch.setattr(model_module.kernels, "softmax_rows_", fail)
    result = runner.invoke(app, ["run", "-i", str(x)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if not line.startswith("using")]
    assert len(lines) == 1 and lines[0].startswith("error: ran out of memory"), lines
    if model_module.kernels.cores() > 1:
        assert threads and all(name.startswith("tfm") for name in threads)  # it was raised in a worker


def test_a_real_address_space_limit_is_refused_cleanly(tmp_path):
    """GPT-2 small (about 1 GiB with tfm's copies) under RLIMIT_AS = 700 MB (python and numpy map about 150 MB)."""
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((768, 16)))
    cmd = [sys.executable, "-m", "transformer_cli", "run", str(GPT2), "-i", str(x)]
    env = os.environ | {"PYTHONPATH": str(ROOT)}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (700_000_000, resource.RLIM_INFINITY))

    result = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=limit, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("using")]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "address-space limit (ulimit -v)" in lines[0] and "--max-memory" not in lines[0], lines


# -- #7: sizes no machine holds --------------------------------------------------------------------
