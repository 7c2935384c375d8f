"""Hash every output tfm produces on a broad set of inputs, so a refactor can be checked to the bit.

    python scripts/fingerprint_outputs.py before.json     # at the commit before the change
    python scripts/fingerprint_outputs.py after.json      # after it; then: diff before.json after.json

Run from the checkout's root. Inputs are made once under $TFM_FINGERPRINT_DIR (default /tmp/tfm-fingerprint) and
reused, so both runs see the same files: the Hugging Face folders transformers builds for every family and layout
of tests/formats/helpers_hf_transformers.py (fixed seeds; needs the test extra and PyTorch), and 80 derandomised
hypothesis specs over every variant key. Outputs hashed: count, plan (fixed hardware), verify, sample, run (the
.npy byte for byte, float64 and float32), attention and its saved maps, verify-decoding, check, diff.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from transformer_cli.cli import app

ROOT = Path(os.environ.get("TFM_FINGERPRINT_DIR", "/tmp/tfm-fingerprint"))
FOUND: dict[str, str] = {}
RUNNER = CliRunner()
# Each run's scratch folder, so two runs at once never read each other's arrays; four letters like "work", so
# the paths the commands print keep their length (and their tables their wrapping) and hash as "work"
WORK = f"w{os.getpid() % 1000:03d}"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def cli(key: str, *args: object) -> None:
    """One command's exit code and stdout, hashed."""
    result = RUNNER.invoke(app, [str(a) for a in args])
    said = result.stdout.replace(f"/{WORK}/", "/work/")  # each run's own folder, printed as the one shared name
    FOUND[key] = f"{result.exit_code}:{digest(said.encode())}"


def array(key: str, path: Path) -> None:
    """An array file's dtype, shape and bytes, hashed; the file is removed (the next command writes it anew)."""
    if path.exists():
        a = np.load(path)
        FOUND[key] = f"{a.dtype}{a.shape}:{digest(a.tobytes())}"
        path.unlink()


def inputs() -> tuple[Path, Path]:
    """The Hugging Face folders and the spec files, made once."""
    sys.path[:0] = ["tests", "tests/formats"]
    models, specs = ROOT / "models", ROOT / "specs"
    if not models.exists():
        import torch
        from helpers_hf_transformers import build
        from hf_models import MODELS

        for name in MODELS:
            torch.manual_seed(0)
            build(name).save_pretrained(models / name)
        np.save(ROOT / "ids.npy", np.random.default_rng(0).integers(0, 97, size=(2, 13)))
    if not specs.exists():
        import yaml
        from conftest import variant_specs
        from hypothesis import HealthCheck, given, settings

        specs.mkdir(parents=True)
        drawn: list = []

        @settings(derandomize=True, max_examples=80, database=None, suppress_health_check=list(HealthCheck))
        @given(variant_specs())
        def draw(spec):  # type: ignore[no-untyped-def]
            drawn.append(spec)

        draw()
        for i, spec in enumerate(drawn):
            (specs / f"v{i:03d}.yaml").write_text(yaml.safe_dump(spec.to_dict()))
    return models, specs


def spec_outputs(path: Path, work: Path, small: bool) -> None:
    k, x, y, a = str(path), work / "x.npy", work / "y.npy", work / "a.npy"
    cli(k + ":count", "count", path, "--json", "--seq-len", "9")
    cli(k + ":plan", "plan", path, "--json", "--hardware", "h100-sxm")
    cli(k + ":verify", "verify", path, "--json", "--seq-len", "6")
    if not small:
        return
    cli(k + ":sample", "sample", path, "-n", "7", "-o", x, "--force")
    for dtype in ("float64", "float32"):
        cli(k + ":run" + dtype, "run", path, "--input", x, "-o", y, "--force", "--dtype", dtype, "--json")
        array(k + ":y" + dtype, y)
    cli(k + ":attention", "attention", path, "--json", "--input", x, "--block", "0")
    cli(k + ":attention-o", "attention", path, "--input", x, "-o", a, "--force")
    array(k + ":a", a)
    cli(k + ":decoding", "verify-decoding", path, "--json", "--seq-len", "6")


def folder_outputs(folder: Path, work: Path) -> None:
    k, ids, y, a = "hf:" + folder.name, ROOT / "ids.npy", work / "y.npy", work / "a.npy"
    cli(k + ":count", "count", folder, "--json")
    cli(k + ":plan", "plan", folder, "--json", "--hardware", "h100-sxm")
    for dtype in ("float64", "float32"):
        cli(k + ":run" + dtype, "run", folder, "--input", ids, "-o", y, "--force", "--dtype", dtype, "--json")
        array(k + ":y" + dtype, y)
    cli(k + ":verify", "verify", folder, "--json", "--seq-len", "6")
    cli(k + ":attention", "attention", folder, "--json", "--input", ids)
    cli(k + ":attention-o", "attention", folder, "--input", ids, "-o", a, "--force")
    array(k + ":a", a)


def main(out: str) -> None:
    ROOT.mkdir(parents=True, exist_ok=True)
    models, specs = inputs()
    work = ROOT / WORK
    work.mkdir(exist_ok=True)
    examples = [Path("examples/configs").glob("*.yaml"), Path("examples/encoder-decoder").glob("*.yaml")]
    yamls = [*sorted(specs.glob("*.yaml")), *(p for found in examples for p in sorted(found))]
    yamls += sorted(Path("tests/data").glob("*/spec.yaml"))
    for path in yamls:
        spec_outputs(path, work, small="examples/" not in str(path) or "tiny" in str(path) or "seed" in str(path))
    for folder in sorted(models.iterdir()):
        folder_outputs(folder, work)
    for folder in sorted(Path("examples/hf").iterdir()):
        cli(f"{folder}:count", "count", folder, "--json")
        cli(f"{folder}:plan", "plan", folder, "--json", "--hardware", "h100-sxm")
    cli("check", "check", "examples", "--json")
    cli("diff", "diff", "examples/configs/gpt2-small.yaml", "examples/configs/tiny-causal.yaml", "--json")
    Path(out).write_text(json.dumps(FOUND, indent=0, sort_keys=True))
    print(f"{len(FOUND)} outputs hashed into {out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
