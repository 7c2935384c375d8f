"""Files a newcomer can read: no module of the package, the tests, the scripts or the benchmarks over 400 lines."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400
FOLDERS = ("transformer_cli", "tests", "scripts", "benchmarks")
FILES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_is_over_400_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= LIMIT, f"{path.relative_to(ROOT)} has {lines} lines: split it where its sections divide"
