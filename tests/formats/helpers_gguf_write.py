"""A GGUF file's tensors as the gguf package reads them."""

from __future__ import annotations

from transformer_cli.gguf.header import read_header


def _tensors(path) -> dict[str, tuple[int, tuple[int, ...], bytes]]:
    header = read_header(path)
    with open(path, "rb") as f:
        data = f.read()
    return {
        t.name: (t.type, t.shape, data[header.data_offset + t.offset : header.data_offset + t.offset + t.nbytes])
        for t in header.tensors.values()
    }
