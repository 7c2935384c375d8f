"""Issue 40, item 3: weights times 1e18 in float32 overflow a norm's sum of squares, and x / sqrt(inf) = 0 made
every logit 0 without a word (run wrote zeros, generate emitted token 0, exit 0). Now each command refuses in one
line, and float64 gives what transformers gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from transformer_cli.cli import app

TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama"
SCALE = 1e18


@pytest.fixture(scope="module")
def scaled(tmp_path_factory) -> Path:
    """tiny-llama by `tfm init`, every weight but the norms' times 1e18 (with the norms' too the pass makes NaN,
    which was already refused)."""
    pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
    from safetensors.numpy import load_file, save_file

    folder = tmp_path_factory.mktemp("overflow") / "m"
    assert CliRunner().invoke(app, ["init", str(TINY), "-o", str(folder)]).exit_code == 0
    weights = load_file(folder / "model.safetensors")
    scaled = {k: v if "norm" in k else (v * SCALE).astype(v.dtype) for k, v in weights.items()}
    save_file(scaled, folder / "model.safetensors", metadata={"format": "pt"})
    np.save(folder.parent / "ids.npy", np.array([[1, 2, 3, 4, 5]]))
    return folder


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if not line.startswith("using")]
    assert len(lines) == 1 and result.exception is None or isinstance(result.exception, SystemExit), result.stderr
    return lines[0]


@pytest.mark.parametrize("command", ["run", "generate", "verify"])
def test_float32_refuses_the_overflow_instead_of_zeros(scaled, command):
    ids, out = scaled.parent / "ids.npy", scaled.parent / f"{command}.npy"
    args = {
        "run": ["-i", ids, "-o", out],
        "generate": ["-i", ids, "--max-new-tokens", "2", "-o", out],
        "verify": ["--seq-len", "4", "--dtype", "float32"],
    }[command]
    result = CliRunner().invoke(app, [command, str(scaled), *map(str, args)])
    assert result.exit_code == 2, (result.stdout[-500:], result.stderr)
    line = _one_line(result)
    assert "float32 cannot hold them; try --dtype float64" in line and "norm" in line, line
    assert not out.exists()  # nothing written
    if command == "run":
        assert line.startswith(f"error: {ids}: "), line  # the input it happened on


def test_float64_gives_what_transformers_gives(scaled, monkeypatch):
    """The independent reference: transformers' Llama in float64 on the same scaled folder, its RMSNorm kept in
    float64 (as shipped it computes in float32 and gives the silent zeros too)."""
    torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    from transformers import AutoModelForCausalLM

    ids, out = scaled.parent / "ids.npy", scaled.parent / "y64.npy"
    result = CliRunner().invoke(app, ["run", str(scaled), "-i", str(ids), "--dtype", "float64", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    ours = np.load(out)[0]  # (V, n)
    from transformers.models.llama import modeling_llama

    def rms_norm_in_its_dtype(self, x):  # transformers' own casts x to float32, which overflows as tfm's did
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    model = AutoModelForCausalLM.from_pretrained(scaled, dtype=torch.float64).eval()
    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", rms_norm_in_its_dtype)
    with torch.no_grad():
        theirs = model(torch.tensor(np.load(ids))).logits[0].numpy().T  # (V, n)
    assert np.all(np.isfinite(ours)) and np.max(np.abs(ours)) > 1e17  # not the silent zeros
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-9
