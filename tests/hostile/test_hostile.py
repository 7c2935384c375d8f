"""Hostile and broken input: every case gets a defined answer, an exit code from the table, and no traceback.

The fuzz tests run a bounded number of examples in CI;
TFM_FUZZ_EXAMPLES=2000 python -m pytest tests/hostile/test_hostile.py runs them longer.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
import yaml
from conftest import DATA, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer_cli.cli import app

EXIT_TABLE = {0, 1, 2, 3, 130}
FUZZ_EXAMPLES = int(os.environ.get("TFM_FUZZ_EXAMPLES", "40"))
BASE = "N: 2\nH: 4\nm: 8\nd: 32\nr: 64\n"


def error_lines(stderr):
    """stderr without the note on where the spec came from: what must be one line."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("using the ")]


def expect_error(runner, words, *args):
    result = invoke(runner, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    return result


# -- spec files ------------------------------------------------------------------------------------


def test_billion_laughs_is_refused_quickly(runner, tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BASE + "\n".join(lines) + "\n")
    start = time.perf_counter()
    expect_error(runner, ["bomb.yaml", "aliases"], "count", spec)
    assert time.perf_counter() - start < 2.0


def test_python_tags_are_never_executed(runner, tmp_path):
    marker = tmp_path / "pwned"
    spec = tmp_path / "tag.yaml"
    spec.write_text(BASE + f'x: !!python/object/apply:os.system ["touch {marker}"]\n')
    expect_error(runner, ["tag.yaml", "invalid YAML"], "count", spec)
    assert not marker.exists()


def test_duplicate_keys_are_an_error(runner, tmp_path):
    spec = tmp_path / "dup.yaml"
    spec.write_text(BASE + "r: 65\n")
    expect_error(runner, ["dup.yaml", "key 'r' appears twice", "line 6"], "count", spec)


def test_huge_integers_count_exactly_and_refuse_to_run(runner, tmp_path):
    spec = tmp_path / "huge.yaml"
    spec.write_text(f"N: {10**20}\nH: 1\nm: 1\nd: {10**20}\nr: 1\n")
    (data,) = __import__("json").loads(invoke(runner, "count", spec, "--json").stdout)["specs"]
    assert data["total"] == 10**20 * (4 * 10**20 + 2 * 10**20 + 1 + 10**20)
    expect_error(runner, ["needs about", "available memory"], "verify", spec)
    expect_error(runner, ["needs about"], "init", spec, "-o", tmp_path / "w.npz")
    assert not (tmp_path / "w.npz").exists()


# -- sizes -----------------------------------------------------------------------------------------


def test_run_refuses_above_max_memory_before_reading_the_input(runner, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((4, 32, 512)))
    out = tmp_path / "y.npy"
    result = expect_error(
        runner, ["needs about", "MiB", "--max-memory of 1 MiB"], "run", "-i", x, "--max-memory", "1M", "-o", out
    )
    assert len(result.stderr.strip().splitlines()) <= 2 and not out.exists()
    assert invoke(runner, "run", "-i", x, "--max-memory", "1G").exit_code == 0


def test_bad_max_memory_is_a_usage_error(runner):
    expect_error(runner, ["--max-memory", "lots"], "verify", "--max-memory", "lots")


def test_memory_estimate_bounds_the_measured_peak():
    """The estimate is an upper bound within 2x of the peak NumPy allocates (tracemalloc) on mid-size specs."""
    import tracemalloc

    from transformer_cli import Spec, Transformer, init_weights
    from transformer_cli.analysis.memory import estimate_forward

    cases = [
        (Spec(N=2, H=4, m=64, d=256, r=1024), 4, 256, "float64"),
        (Spec(N=2, H=4, m=32, d=128, r=512, norm="pre", mask="causal", positional="sinusoidal"), 2, 512, "float32"),
    ]
    for spec, b, n, dtype in cases:
        X = np.random.default_rng(0).normal(size=(b, spec.d, n))
        tracemalloc.start()
        Transformer(spec, init_weights(spec), dtype)(X)
        peak = tracemalloc.get_traced_memory()[1] + X.nbytes  # the input as read: the estimate counts it too
        tracemalloc.stop()
        estimate = estimate_forward(spec, b, n, dtype).total
        assert peak <= estimate <= 2 * peak, (spec, peak, estimate)


# -- arrays ----------------------------------------------------------------------------------------


def _save(path, array, **kw):
    np.save(path, array, **kw)
    return path


ARRAY_CASES = {
    "truncated": (lambda p: _truncate(_save(p, np.zeros((32, 50)))), ["not a valid .npy"]),
    "empty file": (lambda p: _bytes(p, b""), ["not a valid .npy"]),
    "n = 0": (lambda p: _save(p, np.zeros((32, 0))), ["empty"]),
    "batch of 0": (lambda p: _save(p, np.zeros((0, 32, 3))), ["empty"]),
    "0-d": (lambda p: _save(p, np.float64(3.0)), ["shape ()"]),
    "4-d": (lambda p: _save(p, np.zeros((1, 2, 32, 3))), ["shape (1, 2, 32, 3)"]),
    "complex": (lambda p: _save(p, np.zeros((32, 3), complex)), ["dtype complex128"]),
    "strings": (lambda p: _save(p, np.full((32, 3), "ab")), ["dtype <U2"]),
    "object": (lambda p: _save(p, np.array([None] * 3, dtype=object), allow_pickle=True), ["pickled"]),
    "inf": (lambda p: _save(p, _with((32, 3), (31, 1), np.inf)), ["inf at index (31, 1)"]),
    "too big for float32": (lambda p: _save(p, _with((32, 3), (0, 2), 1e39)), ["does not fit in float32"]),
    "an npz": (lambda p: _npz(p), ["is an .npz archive"]),
    "timedelta": (lambda p: _save(p, np.zeros((32, 3), "m8[s]")), ["dtype timedelta64[s]", "expected real numbers"]),
    "datetime": (lambda p: _save(p, np.zeros((32, 3), "M8[D]")), ["dtype datetime64[D]", "expected real numbers"]),
    "structured": (lambda p: _save(p, np.zeros((32, 3), [("a", "f8")])), ["dtype [('a', '<f8')]"]),
    "bytes": (lambda p: _save(p, np.full((32, 3), b"ab")), ["dtype |S2"]),
    "10 KB header": (lambda p: _bytes(p, _npy_header({"shape": (32, 3)}, "x" * 9900)), ["not a valid .npy", "..."]),
}


def _npy_header(fields, dtype="<f8"):
    """The bytes of a .npy header (version 1.0) holding `fields` besides descr and fortran_order: no data."""
    text = repr({"descr": dtype, "fortran_order": False} | fields)
    text += " " * (-(len(text) + 11) % 64) + "\n"  # magic (6) + version (2) + length (2) + text: a multiple of 64
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin-1")


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _bytes(path, data):
    path.write_bytes(data)
    return path


def _with(shape, index, value):
    a = np.zeros(shape)
    a[index] = value
    return a


def _npz(path):
    with open(path, "wb") as handle:
        np.savez(handle, x=np.zeros((32, 3)))
    return path


@pytest.mark.parametrize("case", list(ARRAY_CASES))
def test_bad_arrays(runner, tmp_path, case):
    make, words = ARRAY_CASES[case]
    x = make(tmp_path / "x.npy")
    out = tmp_path / "y.npy"
    extra = ["--dtype", "float32"] if case == "too big for float32" else []
    result = expect_error(runner, ["x.npy", *words], "run", "-i", x, "-o", out, *extra)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["x.npy"]
    [line] = error_lines(result.stderr)
    assert len(line) - len(str(x)) < 300, line  # long values are cut


def test_fortran_order_input_gives_the_same_output(runner, tmp_path):
    X = np.random.default_rng(0).normal(size=(32, 6))
    c, f = _save(tmp_path / "c.npy", X), _save(tmp_path / "f.npy", np.asfortranarray(X))
    invoke(runner, "run", "-i", c, "-o", tmp_path / "yc.npy")
    invoke(runner, "run", "-i", f, "-o", tmp_path / "yf.npy")
    assert np.array_equal(np.load(tmp_path / "yc.npy"), np.load(tmp_path / "yf.npy"))


def test_float32_overflow_in_the_model_is_reported_not_written(runner, tmp_path):
    x = _save(tmp_path / "x.npy", 1e25 * np.random.default_rng(0).normal(size=(32, 5)))
    out = tmp_path / "y.npy"
    result = expect_error(
        runner, ["float32 cannot hold it", "--dtype float64"], "run", "-i", x, "--dtype", "float32", "-o", out
    )
    assert not out.exists() and "Warning" not in result.stderr and len(result.stderr.strip().splitlines()) <= 2


def test_large_unscaled_inputs_stay_finite_in_both_dtypes(runner, tmp_path):
    x = _save(tmp_path / "x.npy", 1e3 * np.random.default_rng(0).normal(size=(32, 16)))
    for dtype in ("float64", "float32"):
        assert invoke(runner, "run", "-i", x, "--dtype", dtype).exit_code == 0


WEIGHT_CASES = {
    "nan": lambda w: w["blocks.1.ff.W2"].__setitem__((3, 4), np.nan),
    "integer": lambda w: w.__setitem__("blocks.0.ff.b1", np.zeros(64, dtype=np.int64)),
    "missing": lambda w: w.pop("blocks.1.attention.W_O"),
    "extra": lambda w: w.__setitem__("blocks.2.ff.W1", np.zeros((64, 32))),
}
WEIGHT_WORDS = {
    "nan": ["blocks.1.ff.W2 at (3, 4)"],
    "integer": ["not floating point blocks.0.ff.b1 int64"],
    "missing": ["missing blocks.1.attention.W_O"],
    "extra": ["unexpected blocks.2.ff.W1"],
}


@pytest.mark.parametrize("case", list(WEIGHT_CASES))
def test_bad_weights_list_the_offenders(runner, tmp_path, case):
    from transformer_cli import DEFAULT_SPEC, init_weights

    weights = init_weights(DEFAULT_SPEC)
    WEIGHT_CASES[case](weights)
    path = tmp_path / "w.npz"
    np.savez(path, **weights)
    x = _save(tmp_path / "x.npy", np.zeros((32, 3)))
    expect_error(runner, ["w.npz", *WEIGHT_WORDS[case]], "run", "-i", x, "-w", path)
    expect_error(runner, ["w.npz", *WEIGHT_WORDS[case]], "verify", "-w", path)


def test_corrupt_and_pickled_weights(runner, tmp_path):
    x = _save(tmp_path / "x.npy", np.zeros((10, 3)))
    good = DATA / "seed-plain" / "weights.npz"
    spec = DATA / "seed-plain" / "spec.yaml"
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:2000])
    expect_error(runner, ["cut.npz", "not a readable .npz"], "run", spec, "-i", x, "-w", cut)
    pickled = tmp_path / "pickled.npz"
    with zipfile.ZipFile(pickled, "w") as archive:
        with archive.open("blocks.0.attention.W_Q.npy", "w") as handle:
            np.save(handle, np.array([None], dtype=object), allow_pickle=True)
    expect_error(runner, ["pickled.npz", "pickled"], "run", spec, "-i", x, "-w", pickled)


def _archive(path, members):
    """An .npz built member by member, duplicates and odd names included (as a hostile writer could)."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name, then writes it anyway
        for name, data in members:
            archive.writestr(name, data)
    return path


def _member(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _weights_members():
    from transformer_cli import DEFAULT_SPEC, init_weights

    return [(f"{name}.npy", _member(w)) for name, w in init_weights(DEFAULT_SPEC).items()]


GIB_CLAIM = _npy_header({"shape": (1 << 27,)})  # 1 GiB of float64 declared, no data behind it
NPZ_CASES = {
    "a bare name beside NAME.npy": (
        [("blocks.0.attention.W_Q", GIB_CLAIM)], ["member 'blocks.0.attention.W_Q'", "not a .npy"]),
    "a member twice": ([("blocks.0.attention.W_Q.npy", GIB_CLAIM)], ["blocks.0.attention.W_Q.npy", "appears twice"]),
    "a text member": ([("notes.txt", b"hello")], ["member 'notes.txt'", "not a .npy"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(NPZ_CASES))
def test_npz_members_numpy_could_load_under_another_name_are_refused(runner, tmp_path, case):
    """The crafted member comes first: NumPy's np.load would read it, while a dict of headers keeps the last."""
    extra, words = NPZ_CASES[case]
    path = _archive(tmp_path / "w.npz", extra + _weights_members())
    x = _save(tmp_path / "x.npy", np.zeros((32, 3)))
    result = expect_error(runner, ["w.npz", *words], "run", "-i", x, "-w", path)
    assert len(error_lines(result.stderr)) == 1


def test_npz_member_shorter_than_its_header_is_refused_before_allocating(tmp_path):
    from transformer_cli.errors import ArrayError
    from transformer_cli.io.arrays import open_npz

    path = _archive(tmp_path / "w.npz", [("a.npy", GIB_CLAIM + b"\0" * 64)])
    tracemalloc.start()
    with pytest.raises(ArrayError, match="w.npz: array 'a'.*1073741824 bytes"):
        open_npz(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, peak  # NumPy's np.load would allocate the whole GiB first


def test_npy_shorter_than_its_header_is_refused_before_allocating(tmp_path):
    from transformer_cli.errors import ArrayError
    from transformer_cli.io.arrays import open_npy

    path = _bytes(tmp_path / "x.npy", GIB_CLAIM + b"\0" * 64)
    tracemalloc.start()
    with pytest.raises(ArrayError, match="x.npy: .*1073741824 bytes"):
        open_npy(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_arrays_read_back_as_written(tmp_path):
    from transformer_cli.io.arrays import open_npy, open_npz, save_npz

    rng = np.random.default_rng(0)
    arrays = {"c": rng.normal(size=(3, 4)), "f": np.asfortranarray(rng.normal(size=(5, 2))), "scalar": np.float64(2.5),
              "big-endian f32": rng.normal(size=(2, 3, 4)).astype(">f4"), "empty": np.zeros((0, 3))}  # fmt: skip
    save_npz(tmp_path / "w.npz", arrays)
    back = open_npz(tmp_path / "w.npz")
    assert back.keys() == arrays.keys()
    for name, array in arrays.items():
        assert back[name].dtype == np.asarray(array).dtype and np.array_equal(back[name], array), name
        np.save(tmp_path / "a.npy", array)
        assert np.array_equal(open_npy(tmp_path / "a.npy"), array), name


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


KINDS = {"FIFO": "is a FIFO", "null device": "is a character device", "zero device": "is a character device",
         "socket": "is a socket", "directory": "is a directory"}  # fmt: skip
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

keys = st.sampled_from(["N", "H", "m", "d", "r", "scale", "mask", "positional", "max_len", "norm", "norm_eps",
                        "attention_bias", "activation", "name", "rr", "x"])  # fmt: skip
scalars = st.one_of(
    st.integers(-5, 70), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans(), st.none(),
    st.sampled_from(["none", "sqrt", "causal", "learned", "sinusoidal", "pre", "post", "gelu", "relu", "1e3", "0x10"]),
)  # fmt: skip
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
