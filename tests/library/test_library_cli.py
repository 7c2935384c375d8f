"""The library does what each of the README's commands does, on the same inputs: the same files, arrays and
figures as `tfm ... --json` (the commands and the library share their code below the CLI, and this keeps a
change to either from parting them)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import invoke

import transformer_cli as tfm

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "hf" / "tiny-llama"
LLAMA3 = ROOT / "examples" / "hf" / "Meta-Llama-3-8B"
TINY = ROOT / "examples" / "configs" / "tiny-causal.yaml"


def cli_json(runner, *args):
    result = invoke(runner, *args, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def digest(path: Path) -> dict[str, str]:
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    return {
        str(f.relative_to(path) if path.is_dir() else f.name): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in files
        if f.is_file()
    }


@pytest.fixture
def folder(tmp_path):
    tfm.init(LLAMA, tmp_path / "llama", seed=2)
    return tmp_path / "llama"


def test_init_writes_the_files_tfm_init_writes(runner, tmp_path):
    invoke(runner, "init", LLAMA, "-o", tmp_path / "cli", "--seed", "2")
    written = tfm.init(LLAMA, tmp_path / "lib", seed=2)
    assert digest(tmp_path / "lib") == digest(tmp_path / "cli") != {}
    invoke(runner, "init", TINY, "-o", tmp_path / "cli.safetensors", "--seed", "5")
    tfm.init(TINY, tmp_path / "lib.safetensors", seed=5)
    assert list(digest(tmp_path / "lib.safetensors").values()) == list(digest(tmp_path / "cli.safetensors").values())
    assert (written.tensors, written.parameters) == (21, 123712)
    shown = cli_json(runner, "init", LLAMA, "-o", tmp_path / "again", "--seed", "2")
    again = tfm.init(LLAMA, tmp_path / "again", seed=2, overwrite=True)
    assert shown == {"name": again.spec.label, "spec": again.spec.to_dict()} | again.to_dict()


@pytest.mark.parametrize("n", [None, 64])
def test_count_is_tfm_count(runner, folder, n):
    model = tfm.load(folder)
    (shown,) = cli_json(runner, "count", folder, *(["-n", n] if n else []))["specs"]
    assert shown.pop("source") == str(folder)
    costs = shown.pop("costs", None)
    assert json.loads(json.dumps(model.checkpoint().to_dict())) == shown.pop("checkpoint")
    assert json.loads(json.dumps(model.count().to_dict())) == shown
    if n:
        assert json.loads(json.dumps(model.costs(1, n, "float32").to_dict())) == costs


def test_sample_run_and_attention_are_the_commands(runner, folder, tmp_path):
    model = tfm.load(folder)
    invoke(runner, "sample", folder, "-n", 8, "--seed", 4, "-o", tmp_path / "ids.npy")
    ids = model.sample(8, seed=4)
    np.testing.assert_array_equal(np.load(tmp_path / "ids.npy"), ids)
    invoke(runner, "run", folder, "--input", tmp_path / "ids.npy", "-o", tmp_path / "logits.npy")
    result = model.run(tmp_path / "ids.npy")
    np.testing.assert_array_equal(model.run(ids).output, result.output)
    np.testing.assert_array_equal(np.load(tmp_path / "logits.npy"), result.output)
    invoke(runner, "attention", folder, "--input", tmp_path / "ids.npy", "--block", 1, "-o", tmp_path / "A.npy")
    A = model.transformer("float64").attention_weights(ids)[1][0]  # (tfm attention computes in float64)
    np.testing.assert_array_equal(np.load(tmp_path / "A.npy"), A)


def small_t5(tmp_path):
    t5 = tmp_path / "small.yaml"  # the original Transformer's layout (examples/encoder-decoder), small
    t5.write_text(
        "N: 1\nN_enc: 2\nH: 2\nm: 4\nd: 8\nr: 16\nV: 40\ntie_embeddings: true\nembed_scale: sqrt\n"
        "mask: causal\npositional: sinusoidal\nnorm: post\nattention_bias: true\n"
    )
    return t5


def test_an_encoder_decoder_runs_as_tfm_run_runs_it(runner, tmp_path):
    t5 = small_t5(tmp_path)
    model = tfm.load(t5)
    source, target = model.sample(5, seed=1), model.sample(3, seed=2)
    np.save(tmp_path / "src.npy", source)
    np.save(tmp_path / "tgt.npy", target)
    invoke(
        runner, "run", t5, "--input", tmp_path / "src.npy", "--target", tmp_path / "tgt.npy", "-o", tmp_path / "out.npy"
    )
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model.run(source, target=target).output)


def test_an_encoder_decoder_s_kv_cache_decoder_reads_its_source(tmp_path):
    model = tfm.load(small_t5(tmp_path))
    source, target = model.sample(5, seed=1), model.sample(3, seed=2)
    with pytest.raises(tfm.OptionError, match="is an encoder-decoder, its decoder reads the encoded source"):
        model.decoder(1, 3)  # (an AttributeError from inside the Decoder before)
    decoder = model.decoder(1, 3, source=source)
    columns, _ = decoder.model.columns(target[None])
    expected = model.run(source, target=target).output  # the parallel pass: (V, n)
    np.testing.assert_allclose(decoder.prefill(columns)[:, 0, :], expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(tfm.OptionError, match=r"a source of \(5,\) for b = 2 sequences"):
        model.decoder(2, 3, source=source)
    with pytest.raises(tfm.OptionError, match="is not an encoder-decoder"):
        tfm.load(TINY).decoder(1, 3, source=source)


def spec_json(model):
    return {"name": model.name, "spec": model.spec.to_dict()}


def test_verify_is_tfm_verify(runner, folder):
    shown = cli_json(runner, "verify", folder, "--seq-len", 8)
    model = tfm.load(folder)
    made = model.verify(n=8)
    assert json.loads(json.dumps(spec_json(model) | made.to_dict())) == shown  # every key, the exit code's too
    assert [c.verdict for c in made] == [c["verdict"] for c in shown["checks"]] == ["PASS"] * len(made)


@pytest.mark.parametrize(
    "options",
    [
        {"hardware": ["h100-sxm", "a100-80gb"]},
        {"memory": "24G"},
        {"weights": "nf4", "lora_rank": 16, "optimizer": "paged-adamw-8bit"},
        {"seq_len": 8192, "batch": 8, "tensor_parallel": 2, "memory": "80G"},
        {"weights": "q4_k_m", "kv_dtype": "float16", "logits": "all", "hardware": ["h100-sxm"]},
    ],
    ids=lambda o: ",".join(o) or "default",
)
def test_plan_is_tfm_plan(runner, options):
    def flag(key, value):
        values = value if isinstance(value, list) else [value]
        return [part for v in values for part in (f"--{key.replace('_', '-')}", v)]

    args = [part for key, value in options.items() for part in flag(key, value)]
    shown = cli_json(runner, "plan", LLAMA3, *args, "--no-chart")
    shown.pop("spec")
    made = tfm.load(LLAMA3).plan(**options).to_dict()
    for timing in (*shown["time"], *made["time"]):  # "this" machine's rates are measured: they vary by run
        if timing["hardware"] == "this machine":
            timing.clear()
    assert json.loads(json.dumps(made)) == shown


def test_generate_is_tfm_generate(runner, folder, tmp_path):
    model = tfm.load(folder)
    ids = model.sample(6, b=2, seed=1)
    np.save(tmp_path / "prompt.npy", ids)
    for sampled in ([], ["--temperature", 0.9, "--top-k", 20, "--top-p", 0.9, "--seed", 7]):
        shown = cli_json(runner, "generate", folder, "--input", tmp_path / "prompt.npy", "-k", 5, "--stop", 3, *sampled)
        options = dict(temperature=0.9, top_k=20, top_p=0.9, seed=7) if sampled else {}
        made = model.generate(ids, 5, stop=[3], **options)
        assert made.tokens.tolist() == shown["tokens"] and made.stopped.tolist() == shown["stopped"]
        assert json.loads(json.dumps(spec_json(model) | made.to_dict() | {"output": None})) == shown


def test_convert_writes_the_files_tfm_convert_writes(runner, folder, tmp_path):
    for name, options in (
        ("w.safetensors", {}),
        ("w.npz", {"dtype": "float64"}),
        ("w.gguf", {"gguf_type": "q8_0"}),
        ("again", {"shard_size": "100K"}),
    ):
        flags = [p for k, v in options.items() for p in ({"gguf_type": "--type"}.get(k, f"--{k.replace('_', '-')}"), v)]
        invoke(runner, "convert", folder, "-o", tmp_path / f"cli-{name}", *flags)
        done = tfm.convert(folder, tmp_path / f"lib-{name}", **options)
        assert sorted(digest(tmp_path / f"lib-{name}").values()) == sorted(digest(tmp_path / f"cli-{name}").values())
        assert done.spec == tfm.load(folder).spec
        shown = cli_json(runner, "convert", folder, "-o", tmp_path / f"json-{name}", *flags)
        done = tfm.convert(folder, tmp_path / f"json-{name}", overwrite=True, **options)
        assert shown == json.loads(json.dumps(spec_json(tfm.load(folder)) | done.to_dict()))
    back = tfm.convert(tmp_path / "lib-w.safetensors", tmp_path / "back")
    invoke(runner, "convert", tmp_path / "cli-w.safetensors", "-o", tmp_path / "cli-back")
    assert digest(tmp_path / "back") == digest(tmp_path / "cli-back")
    assert back.files == [str(tmp_path / "back" / f) for f in ("config.json", "model.safetensors")]


def test_spec_schema_diff_and_check_are_the_commands(runner, folder):
    assert cli_json(runner, "spec", folder)["spec"] == tfm.load(folder).spec.to_dict()
    assert json.loads(invoke(runner, "schema").stdout) == tfm.spec_schema()
    shown = cli_json(runner, "diff", folder, TINY, "-n", 128)
    rows = tfm.diff(tfm.load(folder).spec, tfm.load(TINY).spec, 1, 128, "float32")
    assert json.loads(json.dumps(rows)) == shown["rows"] and shown["differ"]
    shown = cli_json(runner, "check", TINY, folder, "--max-params", "100K")
    checked = tfm.check_specs([TINY, folder], tfm.Budgets.parse(params="100K"))
    assert [c.to_dict() for c in checked] == shown["specs"]
    assert [int(c.exit_code) for c in checked] == [0, 1]  # the folder's 123,712 parameters are over 100K


def test_a_quantised_checkpoint_is_counted_run_and_planned_as_the_commands_do(runner, tmp_path):
    pytest.importorskip("torch", reason="the FP8 checkpoint is written by PyTorch")
    sys.path.insert(0, str(ROOT / "tests" / "formats"))
    from quantized_files import IDS, float_llama, fp8_folder

    folder = fp8_folder(float_llama(tmp_path / "float"), tmp_path / "fp8", block=32)
    model = tfm.load(folder)
    (shown,) = cli_json(runner, "count", folder)["specs"]
    assert json.loads(json.dumps(model.checkpoint().to_dict())) == shown["checkpoint"]
    np.save(tmp_path / "ids.npy", IDS)
    invoke(runner, "run", folder, "--input", tmp_path / "ids.npy", "-o", tmp_path / "logits.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "logits.npy"), model.run(IDS).output)
    plan = cli_json(runner, "plan", folder, "--hardware", "h100-sxm", "--no-chart")
    made = model.plan(hardware=["h100-sxm"])
    assert made.weights_dtype == plan["weights_dtype"] == "stored"  # planned at the file's own bytes
    assert made.weights_stored == plan["weights_stored"]
