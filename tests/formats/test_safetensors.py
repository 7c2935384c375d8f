"""Weights as safetensors: the same tensors as .npz, the spec in the metadata, and the same checks on load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, EXAMPLES

from transformer_cli import ArrayError, Spec, init_weights, load_spec, load_weights, save_weights
from transformer_cli.cli import app
from transformer_cli.io import safetensors_io
from transformer_cli.io.safetensors_io import bfloat16_to_float32
from transformer_cli.io.weights import spec_of_weights
from transformer_cli.tasks.seeded import init_memory, write_init

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")


def test_round_trip_is_exact_and_keeps_the_spec(tmp_path):
    spec = load_spec(TINY)
    weights = init_weights(spec, seed=4)
    path = tmp_path / "w.safetensors"
    save_weights(path, weights, spec)
    loaded = load_weights(path, spec)
    assert loaded.keys() == weights.keys()
    assert all(np.array_equal(loaded[k], weights[k]) and loaded[k].dtype == np.float64 for k in weights)
    assert spec_of_weights(path) == spec


def test_same_tensor_names_as_npz(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5, attention_bias=True, norm="pre")
    weights = init_weights(spec)
    save_weights(tmp_path / "w.npz", weights)
    save_weights(tmp_path / "w.safetensors", weights, spec)
    assert load_weights(tmp_path / "w.npz", spec).keys() == load_weights(tmp_path / "w.safetensors", spec).keys()


def test_a_file_for_another_spec_is_refused(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5)
    path = tmp_path / "w.safetensors"
    save_weights(path, init_weights(spec), spec)
    with pytest.raises(ArrayError, match="written for another spec .*r differ"):
        load_weights(path, Spec(N=1, H=2, m=3, d=4, r=6))


def test_without_stored_spec_the_layout_is_still_checked(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5)
    path = tmp_path / "w.safetensors"
    weights = init_weights(spec)
    weights["blocks.0.ff.W1"] = np.zeros((5, 5))
    save_weights(path, weights)  # no spec in the metadata
    with pytest.raises(ArrayError, match=r"wrong shape blocks.0.ff.W1 \(5, 5\)"):
        load_weights(path, spec)


def test_corrupt_and_unknown_files(tmp_path):
    spec = Spec(N=1, H=1, m=1, d=1, r=1)
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(ArrayError, match="not a valid .safetensors file: header is not JSON"):
        load_weights(bad, spec)
    with pytest.raises(ArrayError, match="expected a .npz or .safetensors"):
        load_weights(tmp_path / "w.pt", spec)


def test_init_then_run_and_verify_without_a_spec(runner, tmp_path):
    weights, x = tmp_path / "w.safetensors", tmp_path / "x.npy"
    assert runner.invoke(app, ["init", str(TINY), "-o", str(weights)]).exit_code == 0
    np.save(x, np.random.default_rng(0).normal(size=(16, 5)))
    result = runner.invoke(app, ["run", "-i", str(x), "-w", str(weights), "--json"])
    assert result.exit_code == 0, result.output
    assert "spec stored in" in result.stderr and json.loads(result.stdout)["name"] == "tiny-causal"
    assert runner.invoke(app, ["verify", "-w", str(weights), "-n", "6"]).exit_code == 0
    changed = tmp_path / "changed.yaml"
    changed.write_text(TINY.read_text().replace("r: 32", "r: 33"))
    other = runner.invoke(app, ["run", "-i", str(x), "-w", str(weights), str(changed)])
    assert other.exit_code == 2 and "written for another spec" in other.stderr


def test_init_refuses_an_unknown_extension_before_work(runner, tmp_path):
    result = runner.invoke(app, ["init", "-o", str(tmp_path / "w.bin")])
    assert result.exit_code == 2 and "expected a .npz or .safetensors" in result.stderr
    assert list(tmp_path.iterdir()) == []


# -- labels, missing specs, half precision (issue 9, items 12 and 13) --------------------------------


def test_labels_may_differ_but_the_model_may_not(runner, tmp_path):
    weights, x = tmp_path / "w.safetensors", tmp_path / "x.npy"
    assert runner.invoke(app, ["init", str(TINY), "-o", str(weights)]).exit_code == 0
    np.save(x, np.random.default_rng(0).normal(size=(16, 5)))
    renamed = tmp_path / "renamed.yaml"  # its name defaults to 'renamed', the file says 'tiny-causal'
    renamed.write_text(TINY.read_text().replace("name:", "# name:") + "description: another label\n")
    result = runner.invoke(app, ["run", str(renamed), "-i", str(x), "-w", str(weights)])
    assert result.exit_code == 0, result.output
    spec = load_spec(renamed)
    assert load_weights(weights, spec).keys() == init_weights(spec).keys()


def test_scale_is_compared_as_the_factor_it_applies(tmp_path):
    path = tmp_path / "w.safetensors"
    spec = Spec(N=1, H=1, m=4, d=2, r=2, scale="sqrt")
    save_weights(path, init_weights(spec), spec)
    load_weights(path, Spec(N=1, H=1, m=4, d=2, r=2, scale=0.5))  # 1/sqrt(4): the same model
    with pytest.raises(ArrayError, match=r"written for another spec \(scale differ"):
        load_weights(path, Spec(N=1, H=1, m=4, d=2, r=2, scale=0.25))


def test_a_file_without_a_spec_asks_for_one(runner, tmp_path):
    spec = load_spec(TINY)
    weights, x = tmp_path / "w.safetensors", tmp_path / "x.npy"
    save_weights(weights, init_weights(spec))  # no spec in the metadata
    np.save(x, np.random.default_rng(0).normal(size=(16, 5)))
    result = runner.invoke(app, ["run", "-i", str(x), "-w", str(weights)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: {weights}: carries no spec (no 'tfm_spec' in its metadata); name the spec file too: SPEC -w {weights}"
    ]
    assert runner.invoke(app, ["run", str(TINY), "-i", str(x), "-w", str(weights)]).exit_code == 0


def test_a_weights_file_given_as_the_spec_is_named(runner, tmp_path):
    weights = tmp_path / "w.safetensors"
    assert runner.invoke(app, ["init", str(TINY), "-o", str(weights)]).exit_code == 0
    result = runner.invoke(app, ["count", str(weights)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {weights}: is a weights file, expected a YAML spec (pass it with -w)"


def test_every_bf16_bit_pattern_decodes_to_the_float32_torch_gives():
    """All 65,536 patterns (zeros, subnormals, infinities, NaN payloads) against torch's widening, bit for bit; the
    control: a pattern widened into the low half instead is another float32."""
    torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    bits = np.arange(1 << 16, dtype=np.uint16)
    expected = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16).float().numpy().view(np.uint32)
    assert np.array_equal(bfloat16_to_float32(bits).view(np.uint32), expected)
    assert not np.array_equal(bits.astype(np.uint32), expected)


def test_bf16_and_f16_are_read_exactly(tmp_path):
    """Written by the reference implementation through PyTorch; bf16 decoded to the float32 torch gives."""
    torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    from safetensors.torch import save_file

    spec = load_spec(TINY)
    weights = init_weights(spec, seed=2)
    half = {k: torch.tensor(v).to(torch.bfloat16 if "W_" in k else torch.float16) for k, v in weights.items()}
    path = tmp_path / "w.safetensors"
    save_file(half, str(path))
    loaded = load_weights(path, spec)
    for name, tensor in half.items():
        expected = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        assert loaded[name].dtype == expected.dtype and np.array_equal(loaded[name], expected), name
    bf16 = loaded["blocks.0.attention.W_Q"]
    assert not np.array_equal(bf16, weights["blocks.0.attention.W_Q"].astype(np.float32))  # rounded: a real test


# -- tfm's own reader and writer against the reference implementation --------------------------------


def test_reference_files_read_the_same(tmp_path):
    pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    arrays = {
        "f64": rng.normal(size=(3, 4)),
        "f32": rng.normal(size=(5,)).astype(np.float32),
        "f16": rng.normal(size=(2, 2)).astype(np.float16),
        "i64": np.arange(6).reshape(2, 3),
        "u8": np.arange(7, dtype=np.uint8),
        "bool": np.array([True, False]),
        "empty": np.zeros((0, 3)),
        "scalar": np.array(2.5),
    }
    path = tmp_path / "ref.safetensors"
    save_file(arrays, str(path), metadata={"k": "v"})
    loaded = safetensors_io.load(path)
    assert loaded.keys() == arrays.keys() and safetensors_io.peek(path)[1] == {"k": "v"}
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape, name
        assert np.array_equal(loaded[name], array), name


def test_tfm_files_read_the_same_with_the_reference(tmp_path):
    pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
    from safetensors import safe_open

    spec = Spec(N=2, H=2, m=3, d=4, r=5, attention_bias=True, norm="pre", positional="learned", max_len=6)
    weights = init_weights(spec, seed=1)
    path = tmp_path / "w.safetensors"
    save_weights(path, weights, spec)
    with safe_open(str(path), framework="numpy") as handle:
        assert sorted(handle.keys()) == sorted(weights)
        assert all(np.array_equal(handle.get_tensor(k), weights[k]) for k in weights)
        assert json.loads(handle.metadata()["tfm_spec"]) == spec.to_dict()


INIT_DATA = DATA / "init-seed3"  # written by tfm init --seed 3 before init streamed (commit f4624b8)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_streamed_init_writes_the_same_weights_as_before(tmp_path, suffix):
    out = tmp_path / f"w{suffix}"
    write_init(out, load_spec(INIT_DATA / "spec.yaml"), seed=3)

    def arrays(path):
        if path.suffix == ".npz":
            with np.load(path) as archive:
                return {k: archive[k] for k in archive.files}
        pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as handle:
            return {k: handle.get_tensor(k) for k in handle.keys()}  # noqa: SIM118

    old, new = arrays(INIT_DATA / f"weights{suffix}"), arrays(out)
    assert list(new) == list(old) if suffix == ".npz" else sorted(new) == sorted(old)
    for name in old:
        assert new[name].dtype == old[name].dtype and new[name].tobytes() == old[name].tobytes(), name
    if suffix == ".npz":
        assert out.read_bytes() == (INIT_DATA / "weights.npz").read_bytes()  # even the archive, byte for byte


def test_init_holds_one_tensor_at_a_time():
    """tracemalloc's peak while writing stays under the estimate, which is far below the whole weights."""
    import tempfile
    import tracemalloc

    spec = Spec(N=6, H=4, m=32, d=128, r=1024)  # 1 MiB per W1 or W2, 9.4 MiB in all
    for suffix in (".npz", ".safetensors"):
        with tempfile.TemporaryDirectory() as folder:
            tracemalloc.start()
            write_init(Path(folder) / f"w{suffix}", spec)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        estimate = init_memory(spec, f"w{suffix}").total
        whole = 8 * sum(w.size for w in init_weights(spec).values())
        assert 1 << 20 <= peak <= estimate < whole / 3, (suffix, peak, estimate, whole)


@pytest.mark.parametrize(
    "suffix, words",
    [
        (".npz", "writing these weights needs about"),
        (".safetensors", "8,000,000 tensors need a header over the 100,000,000 bytes safetensors allows"),
    ],
)
def test_init_of_a_million_blocks_is_refused_at_once(tmp_path, suffix, words):
    """Measured before the estimate: 5.8 GB and 204 s. Run under a 1.5 GB address-space limit, just in case."""
    import resource
    import subprocess
    import sys
    import time

    spec = tmp_path / "million.yaml"
    spec.write_text("N: 1000000\nH: 1\nm: 1\nd: 1\nr: 1\n")
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))  # noqa: E731
    args = [sys.executable, "-m", "transformer_cli", "init", str(spec), "-o", str(tmp_path / f"w{suffix}")]
    start = time.perf_counter()
    done = subprocess.run([*args, "--max-memory", "100M"], capture_output=True, text=True, timeout=60, preexec_fn=limit)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert time.perf_counter() - start < 10 and sorted(p.name for p in tmp_path.iterdir()) == ["million.yaml"]
