"""A GGUF file as a model: its spec from the metadata, its weights read tensor by tensor (dequantised, the
converter's changes undone), and what `tfm count` says of its storage (bits per weight by tensor type)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..components.held import Held
from ..errors import ArrayError, SpecError
from ..families.keys import Keys
from ..files import read_ahead
from ..hf.layouts import Rule, bytes_by_tensor, hf_shape, rule_count, rules, split, tensor_shapes
from ..io.arrays import first_nonfinite
from ..model.narrow import PIECE_BYTES
from ..spec.definition import Spec
from ..spec.stacks import stacks
from ..spec.validate import spec_from_mapping
from ..text import shown
from .archs import ARCHITECTURES, Arch
from .header import Header, TensorInfo, read_header
from .tensors import PLAIN, QuantisedRows, bits_per_weight, read_tensor, type_name, unreadable


def is_gguf(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".gguf"


def _arch(header: Header) -> tuple[str, Arch, Keys]:
    """The file's general.architecture, its entry, and its `{arch}.*` keys."""
    name = header.metadata.get("general.architecture")
    supported = ", ".join(sorted(ARCHITECTURES))
    if not isinstance(name, str):
        raise SpecError(f"{header.path}: key 'general.architecture': missing, expected one of {supported}")
    if name not in ARCHITECTURES:
        raise SpecError(
            f"{header.path}: key 'general.architecture': '{shown(name)}' is not supported: tfm reads the "
            f"GGUF architectures {supported}"
        )
    prefix = name + "."
    keys = {k[len(prefix) :]: v for k, v in header.metadata.items() if k.startswith(prefix)}
    return name, ARCHITECTURES[name], Keys(keys, str(header.path), prefix)


def spec_mapping(header: Header) -> dict[str, Any]:
    name, arch, keys = _arch(header)
    label = header.metadata.get("general.name")
    head = {"name": label.strip()} if isinstance(label, str) and label.strip() else {}
    return head | {"description": f"GGUF {name} ({header.path.name})"} | arch.spec(keys, header)


def spec_from_gguf(path: str | Path) -> Spec:
    """The tfm spec of the model in a GGUF file, from its header alone: its tensors counted against the metadata's
    model (a file of one block claiming a million is refused before anything is planned for a million)."""
    header = read_header(path)
    spec = spec_from_mapping(spec_mapping(header), str(path))
    _check_count(header, _arch(header)[1], spec)
    return spec


def _check_count(header: Header, arch: Arch, spec: Spec) -> None:
    """Whole blocks missing, told from the counts before listing a model of any size (as a folder's, hf/weights)."""
    needed, per_block = rule_count(arch.layout_of(spec), spec)
    needed -= spec.N * sum(value is None for value in arch.in_metadata.values())  # (held as metadata keys)
    if needed - len(header.tensors) >= max(per_block, 1):
        blocks = " and ".join(
            f"{s.spec.N:,} {'encoder ' if s.name == 'encoder' else ''}blocks" for s in stacks(spec)[::-1]
        )
        raise ArrayError(
            f"{header.path}: tensors do not fit its metadata's model: it holds {len(header.tensors):,} "
            f"tensors, the metadata's model ({blocks}) has {needed:,}"
        )


def _short(name: str) -> str:
    """A tensor's name within its block ('blk.3.attn_q.weight' -> 'attn_q.weight'), or a global one's."""
    return name.split(".", 2)[-1] if name.startswith("blk.") else name


def pieces_of(arch: Arch, header: Header | None, spec: Spec) -> dict[str, dict[str, tuple[int, ...]]]:
    """The tensors of the layout that the file (None: a newer converter's) holds in pieces, with the pieces'
    names and shapes: where the whole tensor is not in it."""
    out = {}
    for rule in rules(arch.layout_of(spec), spec):
        joined = arch.joined.get(_short(rule.hf))
        if joined is not None and (header is None or rule.hf not in header.tensors):
            prefix = rule.hf[: len(rule.hf) - len(_short(rule.hf))]
            out[rule.hf] = {prefix + piece: shape for piece, shape in joined.pieces(spec).items()}
    return out


class GGUFWeights(Mapping[str, np.ndarray]):
    """tfm's weights by name, each tensor of the file read (and dequantised) when asked for; the file's tensors are
    checked against the spec's first: every one expected, in its shape, and none left over."""

    def __init__(self, path: str | Path, spec: Spec):
        self.header = read_header(path)
        _, self.arch, self.meta = _arch(self.header)
        _check_count(self.header, self.arch, spec)
        self.spec, self.shapes = spec, tensor_shapes(spec)
        self.pieces = pieces_of(self.arch, self.header, spec)
        self.rule_of: dict[str, Rule] = {}
        for rule in rules(self.arch.layout_of(spec), spec):
            for name in rule.tfm:
                self.rule_of[name] = rule
        self._check_fit()
        self.names = list(dict.fromkeys(n.split("[")[0] for n in self.rule_of))
        self._last: tuple[str, np.ndarray] | None = None
        self._mapped: np.ndarray | None = None  # the whole file memory-mapped, once held (`hold`)
        self._finite: set[str] = set()  # the tensors found finite so far

    def hold(self) -> None:
        """Keep the file memory-mapped from now on: its blocks are then read from the mapping's pages, which stay in
        this process (the stored mode), rather than mapped for each read and let go."""
        self._mapped = np.memmap(self.header.path, dtype=np.uint8, mode="r")

    def _predicting(self, name: str) -> bool:
        """A tensor of the multi-token-prediction blocks after the model's ({arch}.nextn_predict_layers: GLM-4.5's,
        DeepSeek-V3's), which the model does not run."""
        arch = self.header.metadata.get("general.architecture")
        after = self.header.metadata.get(f"{arch}.nextn_predict_layers", 0)
        block = name.split(".")[1] if name.startswith("blk.") else ""
        return bool(after) and block.isdigit() and self.spec.N <= int(block) < self.spec.N + after

    def _check_fit(self) -> None:
        expected = {
            rule.hf: hf_shape(rule, self.shapes)
            for rule in self.rule_of.values()
            if self.arch.from_metadata(rule.hf) is None
        }
        for name, pieces in self.pieces.items():  # held in pieces: those are expected instead
            del expected[name]
            expected |= pieces
        held = self.header.tensors
        missing = [n for n in expected if n not in held]
        extra = [n for n in held if n not in expected and n not in self.arch.skipped and not self._predicting(n)]
        wrong = [
            f"{n} {held[n].shape} (expected {shape})"
            for n, shape in expected.items()
            if n in held and held[n].shape != shape
        ]
        found = (("missing", missing), ("unexpected", extra), ("wrong shape", wrong))
        problems = [
            f"{what} {', '.join(names[:6])}{' and more' if len(names) > 6 else ''}" for what, names in found if names
        ]
        if problems:
            raise ArrayError(f"{self.header.path}: tensors do not fit its metadata's model: {'; '.join(problems)}")
        unread = [(n, why) for n in expected if (why := unreadable(held[n].type)) is not None]
        if unread:  # (what reading it would say, said before: count and plan give the verdict run gives)
            more = f" (and {len(unread) - 1} more tensors)" if len(unread) > 1 else ""
            raise ArrayError(f"{self.header.path}: tensor {unread[0][0]} {unread[0][1]}{more}")

    def stored(self, name: str, kept: bool = True) -> np.ndarray:
        """The file's tensor `name`, dequantised, the converter's change to it undone; `kept` until another is read
        (where it holds several of tfm's tensors, asked one after the other)."""
        if self._last is not None and self._last[0] == name:
            return self._last[1]
        key = self.arch.from_metadata(name)
        if key is not None:  # (one number of the block's, checked by the family's reader)
            return np.asarray([self.header.metadata[key][int(name.split(".")[1])]], np.float32)
        if name in self.pieces:
            joined = self.arch.joined[_short(name)]
            pieces = self.pieces[name]
            array = joined.join([read_tensor(self.header, piece, self._mapped) for piece in pieces])
        else:
            array = read_tensor(self.header, name, self._mapped)
        bad = first_nonfinite(array) if name not in self._finite else None
        if bad is not None:
            raise ArrayError(f"{self.header.path}: NaN or inf in tensor {name} at {bad}")
        self._finite.add(name)  # (checked once: a streamed pass reads it again and again)
        undo = self.arch.transforms.get(_short(name))
        if undo is not None:
            array = undo(array, self.meta.data)
        self._last = (name, array) if kept else None
        return array

    def _rows_of(self, name: str) -> tuple[TensorInfo, bool] | None:
        """The file's tensor holding tfm's matrix `name` as quantised rows of its own, unchanged by the converter
        (so its rows can be dequantised one by one), and whether tfm's matrix is their transpose (the embedding's
        (d, V) of the file's (V, d) rows); else None."""
        rule = self.rule_of.get(name)
        if rule is None or rule.tfm != (name,) or rule.hf in self.pieces or _short(rule.hf) in self.arch.transforms:
            return None
        t = self.header.tensors[rule.hf]
        transposed = (name.rsplit(".", 1)[-1] in ("E", "T", "P")) != rule.transposed  # (layouts.from_rows)
        fits = len(t.shape) == 2 and self.shapes[name] == (t.shape[::-1] if transposed else t.shape)
        return (t, transposed) if fits and t.type not in PLAIN and rule.groups == 1 and not rule.experts else None

    def rows(self, name: str) -> QuantisedRows | None:
        """tfm's matrix `name` (the embedding, the head) as the file's quantised rows, dequantised as the pass asks
        (model/narrow.py); None where the file holds it otherwise (a float type, in pieces, changed by the
        converter). Its values are checked finite here, a piece at a time."""
        found = self._rows_of(name)
        if found is None:
            return None
        t, transposed = found
        begin = self.header.data_offset + t.offset
        raw = (
            self._mapped[begin : begin + t.nbytes]
            if self._mapped is not None
            else np.memmap(self.header.path, dtype=np.uint8, mode="r", offset=begin, shape=(t.nbytes,))
        )
        rows = QuantisedRows(raw.reshape(t.shape[0], -1), t.type, t.shape[1], transposed)
        if t.name not in self._finite:
            step = max(1, PIECE_BYTES // (4 * t.shape[1]))
            for start in range(0, t.shape[0], step):
                bad = first_nonfinite(rows.rows(slice(start, start + step)))
                if bad is not None:
                    raise ArrayError(f"{self.header.path}: NaN or inf in tensor {t.name} at {(start + bad[0], bad[1])}")
            self._finite.add(t.name)
        return rows

    def read_ahead(self, prefix: str) -> None:
        """Start reading the bytes of tfm's tensors under `prefix` ('blocks.3.') into the page cache."""
        hf = dict.fromkeys(
            rule.hf
            for name, rule in self.rule_of.items()
            if name.startswith(prefix) and self.arch.from_metadata(rule.hf) is None
        )
        tensors, start = self.header.tensors, self.header.data_offset
        ranges = [(start + tensors[p].offset, tensors[p].nbytes) for n in hf for p in self.pieces.get(n, {n: ()})]
        read_ahead(self.header.path, ranges)

    def held(self) -> Held:
        """The bytes the file holds for each of tfm's tensors, for the plan (a Q4_K_M file's blocks differ)."""
        tensors = self.header.tensors
        types = sorted({type_name(t.type) for t in tensors.values()})

        def stored(name: str) -> int:
            if self.arch.from_metadata(name) is not None:
                return 4  # (a float32 in the metadata)
            return sum(tensors[piece].nbytes for piece in self.pieces.get(name, {name: ()}))

        rows = frozenset(name for name in ("embedding.E", "head.W") if self._rows_of(name) is not None)
        return Held(f"GGUF {', '.join(types)}", bytes_by_tensor(self.rule_of, self.shapes, stored), rows=rows)

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.rule_of:
            rule = self.rule_of[name]
            return dict(split(rule, self.stored(rule.hf, kept=len(rule.tfm) > 1), self.shapes))[name]
        if f"{name}[0]" in self.rule_of:  # experts stored one by one
            return np.stack([self[f"{name}[{e}]"] for e in range(self.shapes[name][0])])
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def gguf_weights(path: str | Path, spec: Spec) -> GGUFWeights:
    """The weights of a GGUF file, for `spec`: the file's metadata must describe the same model."""
    own = spec_from_gguf(path)
    if own.model_keys() != spec.model_keys():
        differ = spec.differing_keys(own)
        raise ArrayError(f"{path}: its metadata is another model ({', '.join(differ)} differ from '{spec.label}')")
    return GGUFWeights(path, spec)


def gguf_summary(path: str | Path, spec: Spec) -> dict[str, Any]:
    """What `tfm count FILE.gguf` says of the file, from its header: tensors, bytes, the parameters it holds, and
    per GGML type the tensors, parameters, bytes and bits per weight (the file's real bytes per element x 8)."""
    weights = GGUFWeights(path, spec)  # (checks the fit; reads no data)
    header = weights.header
    by_type: dict[str, dict[str, Any]] = {}
    for t in header.tensors.values():
        row = by_type.setdefault(type_name(t.type), {"tensors": 0, "parameters": 0, "bytes": 0})
        row["tensors"] += 1
        row["parameters"] += t.elements
        row["bytes"] += t.nbytes
    for kind, row in by_type.items():
        row["bits_per_weight"] = 8 * row["bytes"] / row["parameters"]
        row["type_bits_per_weight"] = bits_per_weight(
            next(t.type for t in header.tensors.values() if type_name(t.type) == kind)
        )
    parameters = sum(t.elements for t in header.tensors.values())
    data = sum(t.nbytes for t in header.tensors.values())
    return {
        "file_bytes": header.size,
        "tensors": len(header.tensors),
        "parameters": parameters,
        "tensor_bytes": data,
        "bits_per_weight": 8 * data / parameters,
        "types": by_type,
        "version": header.version,
    }


__all__ = ["GGUFWeights", "gguf_summary", "gguf_weights", "is_gguf", "spec_from_gguf"]
