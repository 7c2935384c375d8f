"""Hostile and broken input: every case gets a defined answer, an exit code from the table, and no traceback.

The fuzz tests run a bounded number of examples in CI;
TFM_FUZZ_EXAMPLES=2000 python -m pytest tests/hostile/test_hostile_files.py runs them longer (they live there).
"""

from __future__ import annotations

import io
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from conftest import DATA, invoke
from helpers_hostile import BASE, _save, error_lines, expect_error

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
    """The estimate is an upper bound within 2x of the peak NumPy allocates (tracemalloc) on mid-size specs, on one
    thread: with two, whether their chunks of scores are alive at once is the scheduler's choice (a loaded machine
    ran them one after the other, and the peak fell below half the estimate)."""
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
        Transformer(spec, init_weights(spec), dtype, workers=1)(X)
        peak = tracemalloc.get_traced_memory()[1] + X.nbytes  # the input as read: the estimate counts it too
        tracemalloc.stop()
        estimate = estimate_forward(spec, b, n, dtype, workers=1).total
        assert peak <= estimate <= 2 * peak, (spec, peak, estimate)
        tracemalloc.start()  # two threads: an upper bound whatever the schedule
        Transformer(spec, init_weights(spec), dtype, workers=2)(X)
        peak = tracemalloc.get_traced_memory()[1] + X.nbytes
        tracemalloc.stop()
        assert peak <= estimate_forward(spec, b, n, dtype, workers=2).total, (spec, peak)


# -- arrays ----------------------------------------------------------------------------------------


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
        [("blocks.0.attention.W_Q", GIB_CLAIM)],
        ["member 'blocks.0.attention.W_Q'", "not a .npy"],
    ),
    "a member twice": ([("blocks.0.attention.W_Q.npy", GIB_CLAIM)], ["blocks.0.attention.W_Q.npy", "appears twice"]),
    "a text member": ([("notes.txt", b"hello")], ["member 'notes.txt'", "not a .npy"]),
}


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
    arrays = {
        "c": rng.normal(size=(3, 4)),
        "f": np.asfortranarray(rng.normal(size=(5, 2))),
        "scalar": np.float64(2.5),
        "big-endian f32": rng.normal(size=(2, 3, 4)).astype(">f4"),
        "empty": np.zeros((0, 3)),
    }
    save_npz(tmp_path / "w.npz", arrays)
    back = open_npz(tmp_path / "w.npz")
    assert back.keys() == arrays.keys()
    for name, array in arrays.items():
        assert back[name].dtype == np.asarray(array).dtype and np.array_equal(back[name], array), name
        np.save(tmp_path / "a.npy", array)
        assert np.array_equal(open_npy(tmp_path / "a.npy"), array), name
