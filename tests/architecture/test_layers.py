"""The package's layers have one direction: every import, function-level ones included, points down this list.

The graph is read from the source (scripts/import_graph.py), so an upward import anywhere fails here.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph)

# bottom to top; a layer may import the layers below it, never one above or beside it
LAYERS = [
    {"errors", "registry", "text", "version"},  # words, exit codes and the registries of kinds every layer shares
    {"position_tables"},  # the positions' fixed tables (sinusoids, ALiBi's slopes, T5's buckets): NumPy alone
    {"options"},  # the commands' options checked once, for the CLI and the library
    {"files", "kernels"},  # bounded file reading; NumPy kernels
    {"spec"},  # the spec: its keys, checks and YAML
    {"components"},  # what a model is made of: tensors, closed form, FLOPs, theory, forward pieces, stored bytes
    {"model"},  # the forward pass, from arrays: never a file (io and up), never the cost model (analysis)
    {"io"},  # tfm's own files: arrays, weights, safetensors, outputs
    {"families"},  # one record per model family: its config mapping, checkpoint and GGUF layouts, LoRA names
    {"hf"},  # the Hugging Face mapping: config.json and checkpoints
    {"gguf"},  # GGUF files: their header, metadata as a spec (the families' reading of keys), tensors dequantised
    {"analysis"},  # counts, costs, memory and plans, from the spec's components: no format imports it
    {"verify"},  # the seeds' properties, checked numerically
    {"tasks"},  # tasks over many parts: what a path names, run, attention maps, generate, plan, check, convert, bench
    {"api"},  # what the commands do, for Python: tfm.load(path) and its Model; tfm.init, tfm.convert
    {"cli"},  # the commands
    {"__init__", "__main__"},  # the library's front door and `python -m transformer_cli`
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def upward(edges: dict[str, set[str]]) -> list[str]:
    """The imports that do not point to a lower layer."""
    return [f"{a} -> {b}" for a, targets in sorted(edges.items()) for b in sorted(targets) if RANK[b] >= RANK[a]]


def test_every_package_is_in_a_layer():
    assert set(graph.package_graph()) == set(RANK)


def test_every_import_points_down_the_layers():
    assert upward(graph.package_graph()) == []


def test_the_module_graph_has_no_cycle():
    assert graph.cycles(graph.module_graph()) == []


def test_an_upward_or_circular_import_is_caught(tmp_path):
    edges = graph.package_graph()
    assert upward(edges | {"spec": edges["spec"] | {"model"}}) == ["spec -> model"]
    assert upward(edges | {"model": edges["model"] | {"io", "analysis"}}) == ["model -> analysis", "model -> io"]
    assert upward(edges | {"hf": edges["hf"] | {"analysis"}}) == ["hf -> analysis"]
    assert graph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_function_level_and_relative_imports_are_read(tmp_path, monkeypatch):
    package = tmp_path / "transformer_cli"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "top.py").write_text("")
    (package / "sub" / "low.py").write_text("def f():\n    from ..top import x\n    from .. import top\n")
    (package / "sub" / "other.py").write_text("from . import low\n")  # runs sub/__init__.py, which may bind `low`
    monkeypatch.setattr(graph, "ROOT", package)
    found = graph.module_graph()
    assert found["transformer_cli.sub.low"] == {"transformer_cli.top"}
    assert found["transformer_cli.sub.other"] == {"transformer_cli.sub", "transformer_cli.sub.low"}


@pytest.mark.parametrize(
    "path", sorted((ROOT / "transformer_cli").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_package_never_imports_torch(path):
    found = {name for name in graph.imported_names(path) if name.split(".")[0] == "torch"}
    assert found == set(), f"{path.relative_to(ROOT)} imports {found}: the torch reference lives in tests/"
