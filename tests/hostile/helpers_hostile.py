"""Hostile inputs' shared pieces: the base spec, the exit-code table, how a file is saved and how an error must read."""

from __future__ import annotations

import os

import numpy as np
from conftest import invoke

EXIT_TABLE = {0, 1, 2, 3, 130}
FUZZ_EXAMPLES = int(os.environ.get("TFM_FUZZ_EXAMPLES", "40"))
BASE = "N: 2\nH: 4\nm: 8\nd: 32\nr: 64\n"


def error_lines(stderr):
    """stderr without the note on where the spec came from: what must be one line."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("using the ")]


def expect_error(runner, words, *args):
    result = invoke(runner, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    return result


def _save(path, array, **kw):
    np.save(path, array, **kw)
    return path
