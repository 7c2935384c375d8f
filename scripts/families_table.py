"""The table of the model types tfm reads, made from the families' registry (transformer_cli/families): each
model_type, the transformers class it is, and its GGUF architecture. scripts/update_readme.py writes it between the
markers in docs/hugging-face.md; tests/cli/test_docs.py checks the page holds the registry's table."""

from __future__ import annotations

import re

from transformer_cli.families import RECORDS

BLOCK = re.compile(r"(<!-- families: the registry's table -->\n).*?(<!-- /families -->)", re.DOTALL)


def families_table() -> str:
    """One row per model_type, sorted by name."""
    rows = ["| model_type | transformers class | GGUF architecture |", "|---|---|---|"]
    for model_type, record in sorted(RECORDS.items()):
        arch = "—"
        if record.gguf is not None:
            arch = f"`{record.gguf.arch}`" + (" (read)" if record.gguf.read_only else "")
        rows.append(f"| `{model_type}` | `{record.hf_class}` | {arch} |")
    return "\n".join(rows) + "\n"


def with_table(page: str) -> str:
    """The page with the table between its markers made anew."""
    return BLOCK.sub(lambda m: m.group(1) + families_table() + m.group(2), page)
