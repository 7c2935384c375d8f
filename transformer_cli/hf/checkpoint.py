"""A Hugging Face checkpoint folder: `model.safetensors`, or `model.safetensors.index.json` and its shards.

Every shard's header is read and checked (io/safetensors_io.py) before any tensor data, so `tfm count FOLDER`
costs a few header reads whatever the checkpoint's size. The index names its shards by file name: a name
that is not a plain file inside the folder (`../x.safetensors`, an absolute path, a sub-folder) is refused and
never opened. A tensor is then read on demand, one at a time, straight from its shard into an array.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ArrayError
from ..files import read_ahead, read_bounded
from ..io import safetensors_io
from ..text import shown

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
MAX_INDEX_BYTES = 64 << 20  # a 100k-tensor index is under 10 MB


@dataclass(frozen=True)
class Located:
    """Where one tensor is: its shard and its header entry."""

    shard: Path
    entry: safetensors_io.Entry
    data_start: int


def has_checkpoint(folder: Path) -> bool:
    """Whether `folder` names safetensors weights (a single file or an index): a link to nothing counts, so that
    a checkpoint that cannot be read is an error, never a silent fall back to seeded weights."""
    return os.path.lexists(folder / SINGLE) or os.path.lexists(folder / INDEX)


class Checkpoint:
    """The tensors of a checkpoint folder by name, from the shards' headers; data read only by `read`."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.tensors: dict[str, Located] = {}
        self._mapped: dict[Path, np.ndarray] | None = None  # each shard memory-mapped, once held (`hold`)
        for shard in self._shards():
            with safetensors_io.open_file(shard) as handle:
                contents = safetensors_io.read_contents(shard, handle)
            for name, entry in contents.entries.items():
                if name in self.tensors:
                    raise ArrayError(
                        f"{self.folder}: tensor '{shown(name)}' is in two shards, "
                        f"{self.tensors[name].shard.name} and {shard.name}"
                    )
                self.tensors[name] = Located(shard, entry, contents.data_start)
        self._check_index()

    def _shards(self) -> list[Path]:
        index = self.folder / INDEX
        if not os.path.lexists(index):
            if not os.path.lexists(self.folder / SINGLE):
                raise ArrayError(f"{self.folder}: no {SINGLE} or {INDEX} (tfm reads safetensors checkpoints)")
            return [self.folder / SINGLE]
        weight_map = _weight_map(index)
        shards = []
        for file in dict.fromkeys(weight_map.values()):  # in order of first mention, once each
            path = self.folder / file
            try:
                os.lstat(path)
            except FileNotFoundError:
                raise ArrayError(f"{index}: shard {shown(file)} is missing from {self.folder}") from None
            except OSError as exc:  # a name too long for the file system, ...
                raise ArrayError(f"{index}: shard {shown(file)}: cannot read: {exc.strerror}") from None
            shards.append(path)
        self._index = (index, weight_map)
        return shards

    def _check_index(self) -> None:
        """Each tensor the index names is in the shard it names."""
        index, weight_map = getattr(self, "_index", (None, {}))
        for name, file in weight_map.items():
            found = self.tensors.get(name)
            if found is None or found.shard.name != file:
                where = "in no shard" if found is None else f"in {found.shard.name}"
                raise ArrayError(f"{index}: tensor '{shown(name)}' is listed in {shown(file)} but is {where}")

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name].entry.shape

    def where(self, name: str) -> str:
        """The file a tensor is in, for messages: 'model-00002-of-00004.safetensors'."""
        return self.tensors[name].shard.name

    def hold(self) -> None:
        """Keep every shard memory-mapped from now on: a tensor is then read from the mapping's pages, which stay in
        this process (the stored mode), rather than into an array of its own from the file."""
        self._mapped = {}

    def read(self, name: str) -> np.ndarray:
        """One tensor, decoded (BF16 exactly to float32, F16 as float16), read from its shard alone."""
        at = self.tensors[name]
        if self._mapped is not None:
            return safetensors_io.mapped_tensor(at.shard, self._mapping(at.shard), name, at.entry, at.data_start)
        with safetensors_io.open_file(at.shard) as handle:
            return safetensors_io.read_tensor(at.shard, handle, name, at.entry, at.data_start)

    def stored(self, name: str) -> np.ndarray:
        """One tensor's elements as stored, undecoded (bfloat16 as its uint16 bits): a view of the shard's pages,
        mapped for the stored mode or for this read alone (so no buffer is filled before the tensor is decoded)."""
        at = self.tensors[name]
        return safetensors_io.mapped_elements(at.shard, self._mapping(at.shard), name, at.entry, at.data_start)

    def _mapping(self, shard: Path) -> np.ndarray:
        """The shard memory-mapped as bytes: kept from one read to the next once held, else for one read."""
        if self._mapped is None:
            return np.memmap(shard, dtype=np.uint8, mode="r")
        if shard not in self._mapped:
            self._mapped[shard] = np.memmap(shard, dtype=np.uint8, mode="r")
        return self._mapped[shard]

    def read_ahead(self, names: list[str]) -> None:
        """Start reading these tensors' bytes into the page cache, without waiting (files.read_ahead)."""
        by_shard: dict[Path, list[tuple[int, int]]] = {}
        for name in names:
            at = self.tensors[name]
            by_shard.setdefault(at.shard, []).append((at.data_start + at.entry.begin, at.entry.end - at.entry.begin))
        for shard, ranges in by_shard.items():
            read_ahead(shard, ranges)

    def nbytes(self) -> int:
        return sum(t.entry.end - t.entry.begin for t in self.tensors.values())


def _weight_map(index: Path) -> dict[str, str]:
    """The index's tensor -> shard file map, each file a plain name inside the folder."""
    raw = read_bounded(index, MAX_INDEX_BYTES, "a safetensors index (JSON)")
    try:
        top = safetensors_io.parse_json(raw)
    except ValueError as exc:
        raise ArrayError(f"{index}: not JSON: {shown(str(exc))}") from None
    weight_map = top.get("weight_map") if isinstance(top, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise ArrayError(f"{index}: expected an object with 'weight_map', a mapping of tensor names to file names")
    for file in set(weight_map.values()):
        if file in ("", ".", "..") or "/" in file or "\\" in file or Path(file).is_absolute() or "\0" in file:
            raise ArrayError(f"{index}: shard {shown(file)} is not a file name inside the folder; refused")
    return weight_map
