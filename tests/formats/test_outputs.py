"""Output paths: what may be replaced, by whom, with which permissions, and what a failed write says."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import numpy as np
import pytest
from conftest import invoke


@pytest.fixture
def x(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).normal(size=(32, 3)))
    return path


def test_force_keeps_the_mode_of_the_file_it_replaces(runner, tmp_path, x):
    out = tmp_path / "y.npy"
    out.write_bytes(b"old")
    out.chmod(0o600)
    assert invoke(runner, "run", "-i", x, "-o", out, "--force").exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and np.load(out).shape == (32, 3)


def test_a_new_output_gets_the_usual_permissions(runner, tmp_path, x):
    out = tmp_path / "y.npy"
    assert invoke(runner, "run", "-i", x, "-o", out).exit_code == 0
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


def test_a_dangling_symlink_is_an_existing_output(runner, tmp_path, x):
    out = tmp_path / "y.npy"
    out.symlink_to("missing.npy")
    result = invoke(runner, "run", "-i", x, "-o", out)
    assert result.exit_code == 2 and "y.npy: already exists" in result.stderr and "--force" in result.stderr
    assert out.is_symlink() and not (tmp_path / "missing.npy").exists()
    assert invoke(runner, "run", "-i", x, "-o", out, "--force").exit_code == 0
    assert not out.is_symlink() and np.load(out).shape == (32, 3)  # the link itself was replaced
    assert not (tmp_path / "missing.npy").exists()


def test_force_over_a_symlink_replaces_the_link_and_never_touches_its_target(runner, tmp_path, x):
    target = tmp_path / "keep.npy"
    target.write_bytes(b"precious")
    out = tmp_path / "y.npy"
    out.symlink_to(target.name)
    assert invoke(runner, "run", "-i", x, "-o", out).exit_code == 2
    assert invoke(runner, "run", "-i", x, "-o", out, "--force").exit_code == 0
    assert target.read_bytes() == b"precious" and not out.is_symlink() and np.load(out).shape == (32, 3)


def test_a_symlink_to_a_device_is_refused_whatever_the_flags(runner, tmp_path, x):
    node = tmp_path / "mynull"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    out = tmp_path / "y.npy"
    out.symlink_to(node.name)
    for flags in ([], ["--force"]):
        result = invoke(runner, "run", "-i", x, "-o", out, *flags)
        assert result.exit_code == 2 and "y.npy: is a symbolic link to a character device" in result.stderr
    assert out.is_symlink() and stat.S_ISCHR(node.stat().st_mode)


def test_an_output_created_while_writing_is_never_overwritten_without_force(runner, tmp_path, x, monkeypatch):
    """Another writer finishes first: the slower one fails with one line and leaves the winner's file whole."""
    from transformer_cli.io import arrays

    out = tmp_path / "y.npy"
    save = arrays.np.save

    def racing(handle, array, allow_pickle=False):
        out.write_bytes(b"the other writer's output")
        save(handle, array, allow_pickle=allow_pickle)

    monkeypatch.setattr(arrays.np, "save", racing)
    result = invoke(runner, "run", "-i", x, "-o", out)
    assert result.exit_code == 2 and "y.npy: already exists" in result.stderr
    assert out.read_bytes() == b"the other writer's output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy", "y.npy"]  # no temp file left


def test_two_writers_race_and_exactly_one_wins(tmp_path):
    """Both pass the 'does it exist' check before either writes; without --force only one may write."""
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).normal(size=(64, 32, 64)))
    out = tmp_path / "y.npy"
    command = [sys.executable, "-m", "transformer_cli", "run", "-i", str(x), "-o", str(out)]
    procs = [
        subprocess.Popen([*command, "--seed", str(s)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for s in (1, 2)
    ]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert "y.npy: already exists" in loser and "Traceback" not in loser
    assert np.load(out).shape == (64, 32, 64)


def test_a_full_disk_names_the_reason(runner, tmp_path, small_disk):
    big = tmp_path / "big.npy"
    np.save(big, np.zeros((32, 400)))  # 100 KB out: more than the 64 KiB disk
    result = invoke(runner, "run", "-i", big, "-o", small_disk / "y.npy")
    assert result.exit_code == 2, result.stderr
    assert "y.npy: cannot write: No space left on device" in result.stderr
    assert list(small_disk.iterdir()) == []  # no temp file, no partial output
