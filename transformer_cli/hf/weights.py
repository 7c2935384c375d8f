"""tfm's weights from a Hugging Face checkpoint: the fit of its headers to the config, and tensors on demand.

`checkpoint_weights` first checks every tensor's name, shape and dtype against what the config's model holds
(from the headers alone, so `tfm count FOLDER` reads no data), listing every missing, unexpected and misshapen
tensor with its file. The weights are then a mapping from tfm's names that reads a checkpoint tensor only when
asked (and NumPy keeps no copy of it beyond what the model builds), so loading never holds two copies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..components.held import Held
from ..errors import ArrayError
from ..families import RECORDS
from ..families.layout import Family
from ..io.arrays import first_nonfinite
from ..kernels import bfloat16_to_float32
from ..spec.definition import Spec
from ..spec.stacks import stacks
from ..text import shown
from .checkpoint import Checkpoint, has_checkpoint
from .layouts import Rule, Shapes, bytes_by_tensor, hf_shape, row_parts, rule_count, rules, split, tensor_shapes
from .quant import Scheme, scheme_of
from .quant.base import Stored

FLOATING = ("F64", "F32", "F16", "BF16")
FAMILIES = {kind: record.checkpoint for kind, record in RECORDS.items()}  # each model_type's checkpoint layout

# Names some published files use for the same tensors, and tensors they hold that are not parameters of the
# model tfm builds: (pattern, replacement) tried in order, then the patterns skipped.
ALIASES = {kind: record.aliases for kind, record in RECORDS.items() if record.aliases}
SKIPPED = (
    r"rotary_emb\.inv_freq$",  # buffers some older files saved
    r"\.attn\.(masked_)?bias$",  # GPT-2's causal-mask buffers in the hub's files
)


# Parts of the config's model that a checkpoint may leave out, by model_type: (spec key, its value without the
# part, the part's checkpoint tensors); and the tensors a family's files hold outside its model (heads, buffers).
OPTIONAL = {kind: record.optional for kind, record in RECORDS.items() if record.optional}
SKIPPED_BY_KIND = {kind: record.skipped for kind, record in RECORDS.items() if record.skipped}


def fitted_to_checkpoint(folder: Path, spec: Spec, config: Mapping[str, Any]) -> Spec:
    """`spec`, without an optional part (OPTIONAL) that the folder's checkpoint holds none of (a T5's own head:
    then tied, as transformers reads such a folder)."""

    kind = str(config.get("model_type"))
    if kind not in OPTIONAL or getattr(spec, OPTIONAL[kind][0]) == OPTIONAL[kind][1] or not has_checkpoint(folder):
        return spec
    key, value, names = OPTIONAL[kind]
    wanted = dict.fromkeys(names)
    held = {canonical(name, kind, wanted) for name in Checkpoint(folder).tensors}
    return spec if any(name in held for name in names) else replace(spec, **{key: value})


def family_for(config: Mapping[str, Any]) -> Family:
    """The checkpoint layout of a config's model_type (where its record says, as the config decides: Falcon's, T5's)."""
    kind = config.get("model_type")
    record = RECORDS.get(str(kind))
    if record is not None and record.checkpoint_for is not None:
        return record.checkpoint_for(config)
    return FAMILIES[str(kind)]


def canonical(name: str, kind: str, expected: Mapping[str, Any]) -> str | None:
    """The name tfm expects for a checkpoint tensor's `name`; None for a tensor that is not a parameter."""
    if name in expected:
        return name
    renamed = name
    for pattern, replacement in ALIASES.get(kind, ()):
        renamed = re.sub(pattern, replacement, renamed)
    if renamed in expected:
        return renamed
    if any(re.search(pattern, name) for pattern in SKIPPED + SKIPPED_BY_KIND.get(kind, ())):
        return None
    return name


def _listed(items: list[str], limit: int = 6) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


class Fitted(NamedTuple):
    """A checkpoint checked against its config: tfm's checkpoint name -> the file's name, for the tensors held as
    they are; for the weights a quantised file holds packed, their stored tensors by name; the quantisation."""

    files: dict[str, str]
    packed: dict[str, dict[str, Stored]]
    scheme: Scheme | None
    skipped: tuple[str, ...] = ()  # tensors tfm does not read: heads and buffers outside its model, tied copies


def _packed(checkpoint: Checkpoint, expected: dict[str, tuple[int, ...]], scheme: Scheme | None):
    """The weights the file holds packed, with those tensors: one of their packed tensors is in it, or the weight
    itself is, not as a float (an FP8 weight whose scale is missing is packed, and its scale missing)."""
    if scheme is None:
        return {}
    out = {}
    for name, shape in expected.items():
        stored = scheme.packed(name, shape)
        if not stored:
            continue
        own = checkpoint.tensors.get(name)
        if any(n in checkpoint.tensors for n in stored if n != name) or (own and own.entry.code not in FLOATING):
            scheme.check(name, shape)
            out[name] = stored
    return out


def check_fit(checkpoint: Checkpoint, spec: Spec, config: Mapping[str, Any]) -> Fitted:
    """Check the headers against the config's model; return where each tensor is (Fitted).

    Raises an ArrayError listing every missing, unexpected, misshapen or non-floating tensor, with its file.
    A tied copy that a file holds anyway (a tied head, as older conversions kept; T5's and BART's per-stack
    token embeddings) is accepted if its shape fits, and not read. A quantised checkpoint's packed weights are
    checked as their method stores them (quant/): every packed tensor present, of its shape and dtype.
    """
    family = family_for(config)
    needed, per_block = rule_count(family, spec)
    if needed - len(checkpoint.tensors) >= max(per_block, 1):  # whole blocks missing: told from the counts,
        # before listing a model of any size
        blocks = " and ".join(
            f"{s.spec.N:,} {'encoder ' if s.name == 'encoder' else ''}blocks" for s in stacks(spec)[::-1]
        )
        raise ArrayError(
            f"{checkpoint.folder}: checkpoint does not fit its config.json: it holds {len(checkpoint.tensors):,} "
            f"tensors, the config's model ({blocks}) has {needed:,}"
        )
    shapes = tensor_shapes(spec)
    layout = rules(family, spec)
    expected = {rule.hf: hf_shape(rule, shapes) for rule in layout}
    scheme = scheme_of(config, str(checkpoint.folder / "config.json"))
    packs = _packed(checkpoint, expected, scheme)
    stored = {n: t for name in packs for n, t in packs[name].items()}
    for name in packs:
        del expected[name]
    copies = {name: hf_shape(Rule(name, (ours,)), shapes) for name, ours in _copies(family, spec).items()}
    kind = str(config.get("model_type"))
    found: dict[str, str] = {}
    copied: dict[str, str] = {}
    unexpected, skipped = [], []
    for name in checkpoint.tensors:
        if name in stored:
            continue
        ours = canonical(name, kind, expected)
        if ours is None or ours in family.zero_buffers:
            skipped.append(name)
            continue
        if ours in expected:
            found[ours] = name
        elif ours in copies:
            copied[ours] = name
        elif 0 in checkpoint.shape(name):  # holds nothing: transformers' empty module (GLM-4.5's 0 shared experts)
            skipped.append(name)
        else:
            unexpected.append(f"{shown(name)} ({checkpoint.where(name)})")
    problems = []
    missing = [name for name in expected if name not in found and name not in family.computed]
    missing += [name for name, t in stored.items() if not t.optional and name not in checkpoint.tensors]
    if missing:
        hints = [family.hints[name] for name in missing if name in family.hints]
        problems.append(" ".join([f"missing {_listed(missing)}", *hints]))
    if unexpected:
        problems.append(f"unexpected {_listed(unexpected)}")
    parted = row_parts(layout)
    held = [(n, file, expected[n]) for n, file in found.items() if n not in parted]
    held += [(n, f, copies[n]) for n, f in copied.items()]
    wrong = [
        f"{file} {checkpoint.shape(file)} in {checkpoint.where(file)} (expected {shape})"
        for _, file, shape in held
        if checkpoint.shape(file) != shape
    ]
    wrong += _wrong_parts(checkpoint, parted, found, shapes)
    present = [n for n in stored if n in checkpoint.tensors]
    wrong += [
        f"{n} {checkpoint.shape(n)} in {checkpoint.where(n)} (expected {stored[n].shape})"
        for n in present
        if not stored[n].fits(checkpoint.shape(n))
    ]
    if wrong:
        problems.append(f"wrong shape {_listed(wrong, 3)}")
    codes = [
        f"{found[n]} {checkpoint.tensors[found[n]].entry.code}"
        for n in found
        if checkpoint.tensors[found[n]].entry.code not in FLOATING and not n.endswith(family.integers)
    ]
    codes += [
        f"{n} {checkpoint.tensors[n].entry.code} (expected {' or '.join(stored[n].codes)})"
        for n in present
        if checkpoint.tensors[n].entry.code not in stored[n].codes
    ]
    if codes:
        problems.append(f"{'not floating point' if not stored else 'wrong dtype'} {_listed(codes)}")
    if problems:
        raise ArrayError(f"{checkpoint.folder}: checkpoint does not fit its config.json: " + "; ".join(problems))
    return Fitted(found, packs, scheme, (*skipped, *copied.values()))


def _wrong_parts(checkpoint: Checkpoint, parted: dict[str, str], found: dict[str, str], shapes: Shapes) -> list[str]:
    """The tensors held in parts whose parts do not make them up: any split of the rows is their concatenation
    (transformers saves OLMo-Hybrid's convolution in equal chunks, the published files by q's, k's, v's rows)."""
    wrong = []
    for name in dict.fromkeys(parted.values()):
        files = [found[hf] for hf, whole in parted.items() if whole == name and hf in found]
        held = [checkpoint.shape(file) for file in files]
        if sum(shape[0] for shape in held) != shapes[name][0] or any(s[1:] != shapes[name][1:] for s in held):
            listed = " + ".join(f"{file} {shape}" for file, shape in zip(files, held, strict=True))
            wrong.append(f"{listed} in {checkpoint.where(files[0])} (expected {shapes[name]} in all)")
    return wrong


def _copies(family: Family, spec: Spec) -> dict[str, str]:
    """The tied copies a file may hold: the family's, and the head when it is tied to the embedding."""
    head = family.globals_.get("head.W")
    return family.copies | ({head: "embedding.E"} if head and spec.tie_embeddings and spec.V else {})


def _check_zero_buffers(checkpoint: Checkpoint, family: Family) -> None:
    """A buffer tfm's model has no place for (BART's final_logits_bias) must be zero, or tfm would run another
    model than transformers does."""
    for name in family.zero_buffers:
        if name in checkpoint.tensors and np.any(checkpoint.read(name) != 0):
            where = checkpoint.where(name)
            raise ArrayError(
                f"{checkpoint.folder}: {name} ({where}) is not all zero: transformers adds it to the logits, "
                "tfm's model has no such bias"
            )


def _check_fixed_buffers(checkpoint: Checkpoint, family: Family) -> None:
    """A buffer tfm holds as a constant (Apertus's xIELU beta and eps) must be that constant (to its dtype's
    rounding: 1%), or tfm would run another model than transformers does."""
    for buffer, value in family.fixed_buffers:
        for name in checkpoint.tensors:
            if name.endswith("." + buffer):
                held = np.asarray(checkpoint.read(name), dtype=np.float64)
                if not np.allclose(held, value, rtol=1e-2, atol=0.0):
                    raise ArrayError(
                        f"{checkpoint.folder}: {name} ({checkpoint.where(name)}) is {float(held.reshape(-1)[0])!r}: "
                        f"transformers uses it, tfm's model holds {value!r}"
                    )


class CheckpointWeights(Mapping[str, np.ndarray]):
    """tfm's weights by name, each read from the checkpoint when asked for (fused tensors split as views).

    Reading `blocks.0.attention.W_Q` reads the tensor holding it; the one tensor read last is kept, so its
    other pieces (W_K, W_V of a fused query_key_value) do not read it again. NaN or inf is an error naming
    the checkpoint tensor and its file.
    """

    def __init__(self, checkpoint: Checkpoint, spec: Spec, config: Mapping[str, Any]):
        self.checkpoint, self.spec = checkpoint, spec
        self.fitted = check_fit(checkpoint, spec, config)
        self.files = self.fitted.files
        self.family = family_for(config)
        _check_zero_buffers(checkpoint, family_for(config))
        _check_fixed_buffers(checkpoint, family_for(config))
        self.shapes = tensor_shapes(spec)
        self.rule_of: dict[str, Rule] = {}
        layout = rules(family_for(config), spec)
        for rule in layout:
            for name in rule.tfm:
                self.rule_of[name] = rule
        self.names = [t for t in dict.fromkeys(n.split("[")[0] for n in self.rule_of)]
        self.row_parts = {
            name: [p for p in self.rule_of if p.startswith(f"{name}[")] for name in row_parts(layout).values()
        }
        self._last: tuple[str, np.ndarray] | None = None
        self._finite: set[str] = set()  # the checkpoint tensors found finite so far

    def _stored(self, rule: Rule) -> np.ndarray:
        """The checkpoint tensor of a rule, read; kept until another is read where it holds several of tfm's (its
        next piece is asked next), never where it holds one (the embedding would be kept beside the pass)."""
        if self._last is not None and self._last[0] == rule.hf:
            return self._last[1]
        if rule.hf in self.fitted.packed:
            array = self._dequantised(rule)
        elif rule.hf not in self.files:  # a table the family's files leave out (Family.computed)
            array = self.family.computed[rule.hf](self.spec)
        else:
            file_name = self.files[rule.hf]
            array = self._checked(rule.hf, file_name, self.checkpoint.read(file_name))
        self._last = (rule.hf, array) if len(rule.tfm) > 1 else None
        return array

    def _dequantised(self, rule: Rule) -> np.ndarray:
        """A packed weight, rebuilt by its method from the tensors the file holds for it."""
        scheme = self.fitted.scheme
        assert scheme is not None
        if scheme.refused:
            raise ArrayError(f"{self.checkpoint.folder}: {shown(rule.hf)} is packed ({scheme.label}): {scheme.refused}")
        checkpoint, stored = self.checkpoint, self.fitted.packed[rule.hf]

        class Reader:
            def __call__(self, name: str) -> np.ndarray:
                return checkpoint.read(name)

            def has(self, name: str) -> bool:
                return name in checkpoint.tensors and name in stored

            def where(self, name: str) -> str:
                return str(checkpoint.folder / checkpoint.where(name))

        array = scheme.dequantise(rule.hf, hf_shape(rule, self.shapes), Reader())
        bad = first_nonfinite(array) if rule.hf not in self._finite else None
        if bad is not None:
            where = f"{shown(rule.hf)} (dequantised, {scheme.label})"
            raise ArrayError(f"{checkpoint.folder}: NaN or inf in {where} at {bad}")
        self._finite.add(rule.hf)
        return array

    def read_into(
        self, name: str, make: Callable[[tuple[int, ...]], np.ndarray], keep_layout: bool = True
    ) -> np.ndarray | None:
        """tfm's tensor `name` in float32, decoded from the file's bfloat16 bytes straight into `make(shape)` (a
        C-ordered float32 array the caller gives: rows of a stack, memory a dropped block held), where the checkpoint
        holds it as a tensor of its own; else None (the caller reads it). `keep_layout`: None too where the file's
        layout makes it a transposed view (whose products must read it as such: kernels.bfloat16_to_float32)."""
        rule = self.rule_of.get(name)
        if rule is None or len(rule.tfm) > 1 or rule.hf in self.fitted.packed or rule.hf not in self.files:
            return None
        file_name = self.files[rule.hf]
        if self.checkpoint.tensors[file_name].entry.code != "BF16":
            return None
        piece = dict(split(rule, self.checkpoint.stored(file_name), self.shapes))[name]
        if keep_layout and not piece.flags.c_contiguous:
            return None
        return self._checked(rule.hf, file_name, bfloat16_to_float32(piece, make(piece.shape)))

    def _checked(self, hf: str, file_name: str, array: np.ndarray) -> np.ndarray:
        """`array`, the file's tensor `file_name` decoded, refused if it holds NaN or inf: checked once (a streamed
        pass reads it again and again)."""
        bad = first_nonfinite(array) if hf not in self._finite else None
        if bad is not None:
            where = self.checkpoint.where(file_name)
            raise ArrayError(f"{self.checkpoint.folder}: NaN or inf in {shown(file_name)} ({where}) at {bad}")
        self._finite.add(hf)
        return array

    def hold(self) -> None:
        """Keep the checkpoint's bytes in memory as stored from now on (memory-mapped)."""
        self.checkpoint.hold()

    def _holding(self, hf: str) -> list[str]:
        """The file's tensors that hold a checkpoint tensor: itself, or a packed weight's codes, scales, ..."""
        if hf not in self.files and hf not in self.fitted.packed:  # (a computed table: nothing in the file)
            return []
        return [n for n in self.fitted.packed.get(hf) or [self.files[hf]] if n in self.checkpoint.tensors]

    def read_ahead(self, prefix: str) -> None:
        """Start reading the bytes of tfm's tensors under `prefix` ('blocks.3.') into the page cache."""
        hf = dict.fromkeys(rule.hf for name, rule in self.rule_of.items() if name.startswith(prefix))
        self.checkpoint.read_ahead([n for name in hf for n in self._holding(name)])

    def held(self) -> Held:
        """The bytes the checkpoint holds for each of tfm's tensors (a packed weight's scales and zero points
        included), for the plan."""
        tensors = self.checkpoint.tensors

        def stored(hf: str) -> int:
            return sum(tensors[n].entry.end - tensors[n].entry.begin for n in self._holding(hf))

        scheme = self.fitted.scheme
        codes = sorted({tensors[name].entry.code for name in self.files.values()})
        label = scheme.label if scheme is not None else "/".join(codes)
        return Held(label, bytes_by_tensor(self.rule_of, self.shapes, stored))

    def _piece(self, name: str) -> np.ndarray:
        rule = self.rule_of[name]
        return dict(split(rule, self._stored(rule), self.shapes))[name]

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.rule_of:
            return self._piece(name)
        if f"{name}[0]" in self.rule_of:  # an expert tensor (E, ...) or a norm per head, stacked from its pieces
            return np.stack([self._piece(f"{name}[{e}]") for e in range(self.shapes[name][0])])
        if name in self.row_parts:  # rows held in several checkpoint tensors (Family.row_parts), however split
            return np.concatenate([self._stored(self.rule_of[part]) for part in self.row_parts[name]])
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def checkpoint_weights(folder: str | Path, spec: Spec, config: Mapping[str, Any]) -> CheckpointWeights:
    return CheckpointWeights(Checkpoint(folder), spec, config)
