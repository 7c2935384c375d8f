"""Real signals to a real `tfm` process: Ctrl-C and SIGTERM stop it promptly, quietly, and leave no temp file."""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest


def _tfm(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "transformer_cli", *map(str, args)], **kw)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name != "x.npy")


@pytest.mark.slow
def test_ctrl_c_stops_a_batched_pass_within_seconds(tmp_path):
    """The batch runs on worker threads; they must stop too, not run their part to the end."""
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).normal(size=(3000, 32, 256)))  # tens of seconds of work on 2 cores
    proc = _tfm("run", "-i", x, "-o", tmp_path / "y.npy", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "default spec" in proc.stderr.readline()  # printed once the command has started
    threads = len(os.listdir(f"/proc/{proc.pid}/task"))
    deadline = time.monotonic() + 30
    while len(os.listdir(f"/proc/{proc.pid}/task")) == threads and time.monotonic() < deadline:
        time.sleep(0.01)  # until the worker threads start: the input is read, the pass begins
    time.sleep(0.5)
    assert proc.poll() is None  # still working
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    took = time.monotonic() - sent
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert took < 3.0, f"{took:.1f} s from Ctrl-C to exit"
    assert _leftovers(tmp_path) == []


# Python itself starts first (site, .pth files: ~25 ms), and a SIGINT there prints Python's traceback before any
# line of tfm runs; so the child says when the interpreter is up, and the signals fall in tfm's own start-up.
UP_THEN_COUNT = (
    "import sys; print('up', flush=True); sys.argv[1:] = ['count']; from transformer_cli.cli import main; main()"
)


@pytest.mark.slow
def test_ctrl_c_during_start_up_is_quiet():
    """SIGINT at random moments of tfm's first 0.35 s (its imports): exit 130 (or done, 0), never a traceback."""
    rng = random.Random(0)
    for _ in range(20):
        proc = subprocess.Popen(
            [sys.executable, "-c", UP_THEN_COUNT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline() == "up\n"
        time.sleep(rng.uniform(0.02, 0.35))
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
        assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, stderr)


@pytest.mark.slow
def test_sigterm_exits_143_and_leaves_no_temp_file(tmp_path):
    """SIGTERM (what `kill` and service managers send) cleans up as Ctrl-C does, caught mid-write."""
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).normal(size=(20000, 32, 8)))  # a 41 MB output: the write takes a while
    out = tmp_path / "y.npy"
    caught_writing = 0
    for _ in range(3):
        proc = _tfm("run", "-i", x, "-o", out, "--force", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(".y.npy.") for p in tmp_path.iterdir()):
                caught_writing += 1
                break
            time.sleep(0.001)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
        assert "Traceback" not in stderr
        assert proc.returncode in (0, 143, -signal.SIGTERM), (proc.returncode, stderr)  # 0, -15: it had finished
        assert not any(p.name.startswith(".y.npy.") for p in tmp_path.iterdir())
        if out.exists():
            assert np.load(out).shape == (20000, 32, 8)
        out.unlink(missing_ok=True)
    assert caught_writing > 0  # else every signal missed the write and the test proved nothing


def test_sigterm_during_a_pass_says_terminated(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).normal(size=(1500, 32, 256)))
    proc = _tfm("run", "-i", x, "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "default spec" in proc.stderr.readline()
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "error: terminated" in stderr and "Traceback" not in stderr
    assert '"exit_code": 143' in stdout


def test_an_interrupt_that_an_import_wrapped_exits_130_without_a_traceback(monkeypatch):
    """Ctrl-C inside a lazy import can surface as class creation's RuntimeError (caught once by the test above)."""
    from transformer_cli import cli

    class Interrupted:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def app(prog_name):  # a command whose import is interrupted while a class is made
        type("Column", (), {"cells": Interrupted()})

    monkeypatch.setattr(cli, "load_commands", lambda names=None: app)
    monkeypatch.setattr(sys, "argv", ["tfm", "count"])
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_:
            cli.main()
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
        gc.unfreeze()  # main() froze the test process's objects after its (patched) imports
    assert exit_.value.code == 130


def test_an_interrupt_inside_a_weakref_callback_ends_the_command_quietly():
    """Ctrl-C that lands in a callback Python cannot raise from (importlib's module locks' weakref callbacks, seen
    once in CI): Python would print "Exception ignored ... Traceback" and carry on; tfm delivers it again."""
    child = """if True:
        import sys, time, weakref
        from transformer_cli import cli

        class Lock:
            pass

        def released(_):
            raise KeyboardInterrupt  # as a SIGINT arriving while importlib's callback runs

        def app(prog_name):
            lock = Lock()
            ref = weakref.ref(lock, released)
            del lock  # the callback runs here
            time.sleep(5)
            print("carried on")

        cli.load_commands = lambda names=None: app
        sys.argv[1:] = ["count"]
        cli.main()
    """
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert "carried on" not in done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 130, (done.returncode, done.stderr)
