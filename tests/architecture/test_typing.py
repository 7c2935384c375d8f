"""The library's types are its users' too: the package ships py.typed (PEP 561), and its public modules and the
result types their calls return are checked in mypy's strict mode, in CI (.ci/run) and by a developer's `mypy`
(pyproject.toml's strict override), over the same modules."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = {"transformer_cli.api.models", "transformer_cli.api.writing"}  # tfm.load and its Model; tfm.init, tfm.convert
# mypy --strict's flags that a [[tool.mypy.overrides]] section takes (warn_unused_ignores is on for every module)
STRICT = {
    "disallow_any_generics": True,
    "disallow_subclassing_any": True,
    "disallow_untyped_calls": True,
    "disallow_untyped_defs": True,
    "disallow_incomplete_defs": True,
    "check_untyped_defs": True,
    "disallow_untyped_decorators": True,
    "warn_return_any": True,
    "implicit_reexport": False,
    "strict_equality": True,
    "extra_checks": True,
}


def strict_override() -> dict:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    (found,) = [o for o in mypy["overrides"] if o.get("disallow_untyped_defs")]
    return found


def test_the_strict_override_has_every_strict_flag_and_the_public_modules():
    override = strict_override()
    assert {k: v for k, v in override.items() if k != "module"} == STRICT
    assert PUBLIC <= set(override["module"])
    for module in override["module"]:
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module


def test_ci_runs_the_mypy_that_reads_the_strict_override():
    """CI's `mypy` runs from the root with no files named, so pyproject.toml's files and overrides apply (a
    `mypy --strict FILES` would apply the strict flags to every module those files import)."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in lines if not line.startswith("#") and "mypy" in line]
    assert commands and all(line.endswith("&& mypy") for line in commands), commands


# each command's method and the type of what it returns, whose to_dict() the command prints under --json
RESULTS = {
    "Model.count": "ParamCount",
    "Model.checkpoint": "CheckpointSummary | None",
    "Model.costs": "Costs",
    "Model.plan": "Plan",
    "Model.verify": "Verification",
    "Model.run": "RunResult",
    "Model.generate": "Generation",
    "init": "Written",
    "convert": "Written",
}


@pytest.mark.parametrize("call", RESULTS)
def test_each_command_s_call_returns_its_result_type_defined_where_mypy_is_strict(call):
    import transformer_cli as tfm

    function = tfm.Model.__dict__[call.split(".")[1]] if "." in call else getattr(tfm, call)
    assert function.__annotations__["return"] == RESULTS[call]
    result = getattr(tfm, RESULTS[call].removesuffix(" | None"))
    assert callable(result.to_dict), f"{result.__name__} has no to_dict(), the command's --json"
    assert result.__module__ in strict_override()["module"], f"{result.__name__}: its module is not checked strictly"


@pytest.mark.slow
def test_the_wheel_ships_py_typed(tmp_path):
    pytest.importorskip("setuptools", reason="the wheel is built with setuptools, without build isolation")
    source = tmp_path / "source"
    shutil.copytree(ROOT / "transformer_cli", source / "transformer_cli", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            tmp_path / "dist",
            source,
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("tfm-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "transformer_cli/py.typed" in names and "transformer_cli/api/models.py" in names
    assert "transformer_cli/tasks/runner.py" in names and "transformer_cli/families/granite.py" in names
