"""GGUF files whose header lies: each is one line naming what is wrong, found from the header alone, and nothing of
the claimed size is allocated (tracemalloc's peak stays under a megabyte while the header is read)."""

from __future__ import annotations

import struct
import tracemalloc

import pytest

from transformer_cli.errors import ArrayError
from transformer_cli.gguf.header import read_header

pytest.importorskip(
    "gguf", reason="the gguf package reads and writes the files (a dependency of tfm)"
)  # (imported before any measurement: the package's own import allocates)

U8, U32, BOOL, U64, STRING, ARRAY, F32_TENSOR, Q8_0 = 0, 4, 7, 10, 8, 9, 0, 8


def s(text: str, length: int | None = None) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw


def kv_u32(key: str, value: int) -> bytes:
    return s(key) + struct.pack("<II", U32, value)


def tensor(name: str, dims: tuple[int, ...], kind: int, offset: int) -> bytes:
    shape = struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
    return s(name) + shape + struct.pack("<IQ", kind, offset)


def gguf(kvs: list[bytes], tensors: list[bytes], data: bytes = b"", version: int = 3, counts=None) -> bytes:
    n_t, n_kv = counts or (len(tensors), len(kvs))
    head = b"GGUF" + struct.pack("<IQQ", version, n_t, n_kv) + b"".join(kvs) + b"".join(tensors)
    return head + b"\0" * (-len(head) % 32) + data


GOOD = [kv_u32("llama.block_count", 1)]
CASES = {
    "not-gguf": (b"GGML" + b"\0" * 60, "it does not start with GGUF"),
    "version-1": (gguf(GOOD, [], version=1), "version 1; tfm reads GGUF versions 2 and 3"),
    "truncated": (
        gguf(GOOD, [tensor("w", (4,), F32_TENSOR, 0)], b"\0" * 16)[:70],
        "a dimension of w needs 8 bytes at offset 70, the file has 0 left",
    ),
    "counts-lie": (gguf(GOOD, [], counts=(10**15, 10**15)), "cannot fit in"),
    "string-2^63": (gguf([s("general.name", 2**63) + b"x"], []), "needs 9,223,372,036,854,775,808 bytes"),
    "array-10^12": (
        gguf([s("tokens") + struct.pack("<IIQ", ARRAY, U32, 10**12)], []),
        "an array of 1,000,000,000,000 items needs at least 4,000,000,000,000 bytes",
    ),
    "array-of-strings-10^12": (gguf([s("tokens") + struct.pack("<IIQ", ARRAY, STRING, 10**12)], []), "items needs"),
    "unknown-value-type": (gguf([s("k") + struct.pack("<I", 77)], []), "metadata k: unknown value type 77"),
    "unknown-tensor-type": (gguf(GOOD, [tensor("w", (4,), 999, 0)], b"\0" * 16), "tensor w: unknown type 999"),
    "nine-dims": (gguf(GOOD, [tensor("w", (1,) * 9, F32_TENSOR, 0)]), "tensor w: 9 dimensions (1 to 4)"),
    "past-the-end": (gguf(GOOD, [tensor("w", (64,), F32_TENSOR, 0)], b"\0" * 16), "run past the end of the data"),
    "overflowing-count": (gguf(GOOD, [tensor("w", (2**62, 2**62), F32_TENSOR, 0)], b"\0" * 16), "run past the end"),
    "overlap": (
        gguf(GOOD, [tensor("a", (8,), F32_TENSOR, 0), tensor("b", (8,), F32_TENSOR, 0)], b"\0" * 64),
        "tensors a and b overlap",
    ),
    "misaligned": (gguf(GOOD, [tensor("w", (4,), F32_TENSOR, 4)], b"\0" * 32), "is not a multiple of the alignment"),
    "partial-block": (gguf(GOOD, [tensor("w", (20,), Q8_0, 0)], b"\0" * 64), "the first a multiple of 32 for Q8_0"),
    "zero-dim": (gguf(GOOD, [tensor("w", (0, 4), F32_TENSOR, 0)], b"\0" * 16), "each at least 1"),
    "duplicate": (
        gguf(GOOD, [tensor("w", (4,), F32_TENSOR, 0), tensor("w", (4,), F32_TENSOR, 32)], b"\0" * 64),
        "two tensors have the same name",
    ),
    "not-utf8-key": (gguf([struct.pack("<Q", 2) + b"\xff\xfe" + struct.pack("<II", U32, 1)], []), "is not UTF-8"),
}
# What the gguf package refuses too (its GGUFReader): an alignment not UINT32 (read as 1, the data would be read from
# the wrong offset), a key given twice (which value is meant?)
REFUSED_BY_THE_PACKAGE = {
    "alignment-bool": (
        gguf([s("general.alignment") + struct.pack("<IB", BOOL, 1)], [tensor("w", (4,), F32_TENSOR, 0)], b"\0" * 16),
        "general.alignment has value type BOOL, expected UINT32",
    ),
    "alignment-uint8": (
        gguf([s("general.alignment") + struct.pack("<IB", U8, 1)], [tensor("w", (4,), F32_TENSOR, 0)], b"\0" * 16),
        "general.alignment has value type UINT8, expected UINT32",
    ),
    "duplicate-key": (
        gguf([*GOOD, kv_u32("llama.block_count", 2)], []),
        "metadata key llama.block_count appears twice",
    ),
}
CASES |= REFUSED_BY_THE_PACKAGE


@pytest.mark.parametrize("case", CASES)
def test_a_lying_header_is_one_line_read_from_the_header_alone(tmp_path, case):
    data, says = CASES[case]
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(ArrayError) as error:
            read_header(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(error.value)
    assert says in message and "\n" not in message and message.startswith(f"{path}: not a valid GGUF file")
    assert peak < 1 << 20


@pytest.mark.parametrize("case", REFUSED_BY_THE_PACKAGE)
def test_the_gguf_package_refuses_them_too_and_the_command_line_names_the_file_and_key(tmp_path, runner, case):
    from gguf import GGUFReader

    from transformer_cli.cli import app

    data, says = REFUSED_BY_THE_PACKAGE[case]
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    with pytest.raises((ValueError, KeyError)):
        GGUFReader(path)
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"error: {path}: ") and says in result.stderr


def test_a_good_header_of_the_same_kind_is_read(tmp_path):
    """The control: the same construction without the lie reads."""
    path = tmp_path / "m.gguf"
    path.write_bytes(gguf(GOOD, [tensor("a", (8,), F32_TENSOR, 0), tensor("b", (32,), Q8_0, 32)], b"\0" * 96))
    header = read_header(path)
    assert header.metadata == {"llama.block_count": 1} and header.tensors["b"].nbytes == 34
    assert header.tensors["a"].shape == (8,) and header.data_offset % 32 == 0


def test_the_command_line_says_it_in_one_line_with_exit_code_2(tmp_path, runner):
    from transformer_cli.cli import app

    path = tmp_path / "m.gguf"
    path.write_bytes(CASES["array-10^12"][0])
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "not a valid GGUF file" in result.stderr


def test_a_missing_or_unreadable_gguf_is_one_line(tmp_path, runner):
    import os

    from transformer_cli.cli import app

    missing = runner.invoke(app, ["count", str(tmp_path / "none.gguf")])
    assert missing.exit_code == 2 and missing.stderr.strip() == f"error: {tmp_path / 'none.gguf'}: no such GGUF file"
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)  # (never opened: a FIFO would block the reader)
    result = runner.invoke(app, ["count", str(fifo)])
    assert result.exit_code == 2 and "not a regular file" in result.stderr and "Traceback" not in result.output


def _vocabulary(count: int, last: int = 0) -> bytes:
    """A file of `count` empty tokens (the last one's length `last`) between two keys."""
    tokens = (
        s("tokenizer.ggml.tokens") + struct.pack("<IIQ", ARRAY, STRING, count) + s("") * (count - 1) + s("x" * last)
    )
    return gguf(
        [s("general.architecture") + struct.pack("<I", STRING) + s("llama"), tokens, kv_u32("llama.vocab_size", 7)], []
    )


def test_a_long_vocabulary_is_passed_over_not_decoded(tmp_path, monkeypatch):
    """3 x 2^16 empty tokens: walked by their lengths, none decoded one by one (10^7 took 116 s so); the key after
    them read where the gguf package reads it, the count its count."""
    from gguf import GGUFReader

    from transformer_cli.gguf import header as module

    path = tmp_path / "m.gguf"
    path.write_bytes(_vocabulary(3 << 16))
    calls = []
    string = module._Reader.string
    monkeypatch.setattr(module._Reader, "string", lambda self, what: calls.append(what) or string(self, what))
    read = read_header(path)
    assert len(calls) < 10  # (the keys, the architecture's name)
    theirs = GGUFReader(path)
    assert read.metadata["tokenizer.ggml.tokens"].count == len(theirs.fields["tokenizer.ggml.tokens"].data) == 3 << 16
    assert read.metadata["llama.vocab_size"] == theirs.fields["llama.vocab_size"].contents() == 7


def test_a_long_vocabularys_last_token_past_the_end_is_one_line(tmp_path):
    path = tmp_path / "m.gguf"
    data = _vocabulary(3 << 16, last=8)
    length = data.index(s("x" * 8))
    path.write_bytes(data[:length] + struct.pack("<Q", 10**9) + data[length + 8 :])
    with pytest.raises(ArrayError, match=f"item {(3 << 16) - 1} of tokenizer.ggml.tokens runs past the end"):
        read_header(path)
