"""A test module is run, never imported: what tests share lives in plain helper modules (tests/formats/helpers_*.py,
hf_exact.py, ...), so importing one test file never runs, collects or skips another's."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for folder in ("tests", "scripts", "benchmarks") for p in (ROOT / folder).rglob("*.py"))


def imported_test_modules(source: str) -> list[str]:
    """The test modules (test_*.py, by their module name) that `source` imports, at any level."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found += [n for n in names if n.split(".")[-1].startswith("test_")]
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_imports_a_test_module(path):
    assert imported_test_modules(path.read_text()) == [], f"{path.relative_to(ROOT)}: move what it needs to a helper"


def test_an_import_of_a_test_module_is_caught():
    assert imported_test_modules("def f():\n    from test_gguf import FAMILIES\n") == ["test_gguf"]
    assert imported_test_modules("import test_hf_transformers as hf\nfrom helpers_gguf import FAMILIES\n") == [
        "test_hf_transformers"
    ]
