"""Hostile input, continued: special files, user text on the terminal, outputs under interruption, and fuzzing."""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from conftest import invoke
from helpers_hostile import BASE, EXIT_TABLE, FUZZ_EXAMPLES, _save, error_lines, expect_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer_cli.cli import app

# -- special files: FIFOs, devices, sockets and directories, as every file a command reads or writes ----


def _make_special(path, kind):
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(path.name)  # relative: socket paths are limited to about 100 bytes
        server.close()  # the socket file stays
    else:
        minor = {"null device": 3, "zero device": 5}[kind]  # like /dev/null and /dev/zero (endless zeros)
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except PermissionError:
            pytest.skip("mknod needs root")


KINDS = {
    "FIFO": "is a FIFO",
    "null device": "is a character device",
    "zero device": "is a character device",
    "socket": "is a socket",
    "directory": "is a directory",
}
ROLES = {
    "spec": ("s.yaml", ["count", "s.yaml"]),
    "input": ("x.npy", ["run", "-i", "x.npy"]),
    "npz weights": ("w.npz", ["run", "-i", "in.npy", "-w", "w.npz"]),
    "safetensors weights": ("w.safetensors", ["run", "-i", "in.npy", "-w", "w.safetensors"]),
    "output": ("y.npy", ["run", "-i", "in.npy", "-o", "y.npy", "--force"]),
    "output of init": ("w.npz", ["init", "-o", "w.npz", "--force"]),
}
HANGS = {"FIFO", "zero device"}  # before the fix: blocks forever, or reads without end; so run in a child, bounded


def _bounded_tfm(args, cwd):
    """`python -m transformer_cli ARGS` in `cwd`, its address space capped at 2 GiB, killed after 60 s: a guard
    against a hang (a FIFO blocks forever), far above the start-up it takes, so a loaded machine cannot fail it."""
    cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # noqa: E731
    command = [sys.executable, "-m", "transformer_cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, preexec_fn=cap)


def _special_cases():
    for role in ROLES:
        for kind in KINDS:
            yield pytest.param(role, kind, id=f"{role}-{kind}")


@pytest.mark.parametrize(("role", "kind"), list(_special_cases()))
def test_special_files_are_refused_before_opening(runner, tmp_path, monkeypatch, role, kind):
    """Exit 2, one line naming the file and what it is, nothing written, the special file untouched."""
    monkeypatch.chdir(tmp_path)
    np.save("in.npy", np.zeros((32, 3)))
    name, args = ROLES[role]
    _make_special(tmp_path / name, kind)
    before = {p.name: stat.S_IFMT(p.lstat().st_mode) for p in tmp_path.iterdir()}
    if kind in HANGS:
        result = _bounded_tfm(args, tmp_path)
        code, stderr = result.returncode, result.stderr
    else:
        result = runner.invoke(app, args)
        code, stderr = result.exit_code, result.stderr
    assert code == 2, stderr
    assert name in stderr and KINDS[kind] in stderr and "expected" in stderr, stderr
    assert len(error_lines(stderr)) == 1 and "Traceback" not in stderr, stderr
    assert {p.name: stat.S_IFMT(p.lstat().st_mode) for p in tmp_path.iterdir()} == before


def test_reads_are_capped_by_the_bytes_read_not_the_size_reported(tmp_path):
    """/proc files are regular files of size 0 with content: only the bytes actually read can bound them."""
    from transformer_cli.errors import ArrayError
    from transformer_cli.files import read_bounded

    with pytest.raises(ArrayError, match="more than 16 bytes"):
        read_bounded("/proc/self/maps", 16, "a small file")
    (tmp_path / "small").write_bytes(b"0123456789")
    assert read_bounded(tmp_path / "small", 16, "a small file") == b"0123456789"


# -- user text on the terminal: never markup, control characters escaped ----------------------------


def test_markup_in_a_path_is_printed_as_text(runner, tmp_path):
    folder = tmp_path / "a[" / "x][bold]"  # the path holds '[/x]' and '[bold]'
    folder.mkdir(parents=True)
    weights = folder / "w.safetensors"
    assert invoke(runner, "init", "-o", weights).exit_code == 0
    x = _save(tmp_path / "x.npy", np.zeros((32, 3)))
    result = invoke(runner, "run", "-i", x, "-w", weights)
    assert result.exit_code == 0 and f"using the spec stored in {weights}" in result.stderr, result.stderr
    result = expect_error(runner, ["a[/x][bold]/nope.npy"], "run", "-i", folder / "nope.npy")


def test_control_characters_in_user_text_are_shown_escaped(runner, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(BASE + 'name: "red\\e[31m[/x]\\nsecond\\u202eline"\n')
    result = invoke(runner, "count", spec)
    assert result.exit_code == 0
    assert "red\\x1b[31m[/x]\\nsecond\\u202eline" in result.stdout and "\x1b" not in result.stdout
    weights = tmp_path / "w.safetensors"
    invoke(runner, "init", spec, "-o", weights)
    result = invoke(runner, "run", "-i", _save(tmp_path / "x.npy", np.zeros((32, 3))), "-w", weights)
    assert result.exit_code == 0 and "red\\x1b[31m[/x]\\nsecond" in result.stderr and "\x1b" not in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + '"\\e[2J\\a": 1\n')
    result = expect_error(runner, ["bad.yaml", "\\x1b[2J\\x07"], "count", bad)
    assert "\x1b" not in result.stderr and "\a" not in result.stderr
    result = expect_error(runner, ["no\\x1b[2Jpe\\n.npy"], "run", "-i", tmp_path / "no\x1b[2Jpe\n.npy")
    assert len(error_lines(result.stderr)) == 1


# -- outputs and interruption ----------------------------------------------------------------------


def _tfm(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "transformer_cli", *map(str, args)], **kw)


@pytest.mark.slow
def test_sigkill_mid_write_leaves_nothing_or_a_whole_file(tmp_path):
    x = _save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(20000, 32, 8)))  # a 41 MB output
    out = tmp_path / "y.npy"
    caught_writing = 0
    for _ in range(3):
        proc = _tfm("run", "-i", x, "-o", out, "--force", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(".y.npy.") for p in tmp_path.iterdir()):
                caught_writing += 1  # the temp file exists: the process is writing now
                break
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if out.exists():
            y = np.load(out)
            assert y.shape == (20000, 32, 8) and np.all(np.isfinite(y))
        out.unlink(missing_ok=True)
    assert caught_writing > 0  # else the kills all missed the write and the test proved nothing


def test_ctrl_c_exits_130_and_writes_nothing(tmp_path):
    x = _save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(1500, 32, 256)))  # seconds of work
    out = tmp_path / "y.npy"
    proc = _tfm("run", "-i", x, "-o", out, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "default spec" in proc.stderr.readline()  # printed once the command has started
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_interrupt_during_write_removes_the_temp_file(runner, tmp_path, monkeypatch):
    from transformer_cli.io import arrays

    def interrupted(handle, array, allow_pickle=False):
        handle.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(arrays.np, "save", interrupted)
    x = tmp_path / "x.npy"
    np.lib.format.write_array(open(x, "wb"), np.zeros((32, 3)))
    result = invoke(runner, "run", "-i", x, "-o", tmp_path / "y.npy")
    assert result.exit_code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


# -- fuzzing ---------------------------------------------------------------------------------------

keys = st.sampled_from(
    [
        "N",
        "H",
        "m",
        "d",
        "r",
        "scale",
        "mask",
        "positional",
        "max_len",
        "norm",
        "norm_eps",
        "attention_bias",
        "activation",
        "name",
        "rr",
        "x",
    ]
)
scalars = st.one_of(
    st.integers(-5, 70),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["none", "sqrt", "causal", "learned", "sinusoidal", "pre", "post", "gelu", "relu", "1e3", "0x10"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)  # noqa: E501
documents = st.one_of(
    st.dictionaries(keys, values, max_size=10).map(lambda d: yaml.safe_dump(d)),
    st.dictionaries(keys, values, max_size=10).map(lambda d: BASE + yaml.safe_dump(d)),
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.just(BASE + "x: &a [1, 2]\ny: *a\n"),
)


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=60_000, suppress_health_check=list(HealthCheck))
@given(documents)
def test_fuzz_random_yaml_never_crashes(tmp_path_factory, text):
    from typer.testing import CliRunner

    spec = tmp_path_factory.mktemp("fuzz") / "spec.yaml"
    spec.write_text(text, encoding="utf-8", errors="surrogateescape")
    runner = CliRunner()
    for args in (["count", spec, "--json"], ["verify", spec, "-n", "3", "--max-memory", "32M"]):
        result = invoke(runner, *args)
        assert result.exit_code in EXIT_TABLE


dtypes = st.sampled_from(["float64", "float32", "float16", "int8", "int64", "bool", "complex64", "U2", "uint16"])
shapes = st.lists(st.sampled_from([0, 1, 2, 3, 32]), min_size=0, max_size=4).map(tuple)


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=60_000, suppress_health_check=list(HealthCheck))
@given(shapes, dtypes, st.sampled_from([0.0, 1.0, 1e3, 1e30, np.nan, np.inf, -np.inf]))
def test_fuzz_random_arrays_never_crash(tmp_path_factory, shape, dtype, value):
    from typer.testing import CliRunner

    folder = tmp_path_factory.mktemp("fuzz")
    x = folder / "x.npy"
    with np.errstate(all="ignore"):
        array = np.full(shape, value).astype(dtype) if dtype != "U2" else np.full(shape, "ab")
    np.save(x, array)
    result = invoke(CliRunner(), "run", "-i", x, "-o", folder / "y.npy", "--max-memory", "64M")
    assert result.exit_code in {0, 2}
    if result.exit_code == 0:
        assert np.all(np.isfinite(np.load(folder / "y.npy")))
    else:
        assert not (folder / "y.npy").exists()
