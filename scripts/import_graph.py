"""The import graph of the transformer_cli package, read from the source: every import, function-level ones included.

    python scripts/import_graph.py            # the package graph (subpackages), then any cycles
    python scripts/import_graph.py --modules  # the module graph

The architecture test (tests/architecture/test_layers.py) holds the package's layering with these functions.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "transformer_cli"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def imported_names(path: Path) -> set[str]:
    """Every absolute module name `path` imports (any package), anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The package's modules `path` imports, anywhere in the file (top level, functions, TYPE_CHECKING blocks)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            # `from pkg import x` runs pkg/__init__.py, and x may be a name bound there (even one that shadows a
            # submodule): an edge to pkg, and to pkg.x where x is a module. The root package is the exception:
            # it is imported before anything else and binds its names lazily (transformer_cli/__init__.py).
            found |= {f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")}
            if target != PACKAGE:
                found.add(target)
    return found - {here}


def _is_module(name: str) -> bool:
    path = ROOT.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def module_graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in sorted(ROOT.rglob("*.py"))}


def layer_of(module: str) -> str:
    """A module's package: transformer_cli.kernels -> model; a top-level module (errors.py) is its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        edges = graph.setdefault(layer_of(module), set())
        edges |= {layer_of(t) for t in targets} - {layer_of(module)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str]) -> None:
    graph = module_graph() if "--modules" in argv else package_graph()
    for node in sorted(graph):
        print(f"{node} -> {', '.join(sorted(graph[node])) or '(nothing)'}")
    found = cycles(graph)
    print(f"\ncycles: {len(found)}")
    for c in found:
        print("  " + " <-> ".join(c))


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main(sys.argv[1:])
