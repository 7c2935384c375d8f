"""How a command holds a file's weights, chosen from what fits: the three modes of issue 42.

- resident: every block prepared up front in the compute dtype (the fastest pass; today's path);
- stored: the file's blocks held in memory as stored (bfloat16, a GGUF file's quantised blocks: memory-mapped,
  its pages kept), each block upcast when the pass reaches it and dropped after it;
- streamed: each block read from the file when the pass reaches it and dropped after it, so only the tensors
  outside the blocks (embedding, head, norms) and one block in the compute dtype are held.

The first mode whose estimate fits the tightest limit (--max-memory, else the memory available) is chosen; the
figures and the words saying why go into --json, and to stderr when the weights are not all resident. A command that
runs the model once (`tfm run`, `tfm attention`, `Model.run`) streams whatever the memory: every mode makes each block
once in such a pass, and a copy made up front would serve that one pass only (a 1.1B bfloat16 checkpoint's resident
`tfm run` took 12.8 s and 4.61 GB, its streamed one 3.8 s and 0.77 GB: docs/performance.md). Seeded weights, tfm's
own files and an encoder-decoder's two stacks are resident.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..components.held import Held
from ..kernels import Array
from ..model.narrow import PIECE_BYTES, SLICE_BYTES
from ..model.transformer import Transformer
from ..spec.definition import Spec
from ..spec.stacks import encoder
from .limits import Limit
from .memory import MemoryEstimate, check_memory, estimate_forward, tightest
from .params import count_params
from .units import human

MODES = ("resident", "stored", "streamed")
VOCABULARY = ("embedding.E", "head.W")  # the matrices a model not all resident keeps narrow
WORDS = {
    "resident": "every block prepared up front in {dtype}",
    "stored": "the blocks held as stored ({label}), each upcast to {dtype} when it runs",
    "streamed": "each block read from the file when it runs",
}


@dataclass(frozen=True)
class Mode:
    """The mode a command runs in, its memory estimate, and why it was chosen."""

    name: str  # one of MODES
    estimate: MemoryEstimate
    why: str
    block: int = 0  # bytes of the largest block in the compute dtype (what one more kept block costs)
    room: int | None = None  # bytes the limit leaves beyond the estimate (None: no limit known)
    totals: dict[str, int] | None = None  # each mode's estimated peak, in the order tried
    limit: str | None = None  # the limit that chose: "available", "cgroup", "ulimit", or the option given
    budget: int | None = None  # the bytes an option gave (--max-memory), else None (the machine's own figure)
    usual: bool = False  # a one-pass command's streaming where every block would have fit up front too

    @property
    def said(self) -> bool:
        """Whether a command says the mode on stderr: when the memory kept the weights from being all resident
        (--json always has it); a one pass command's usual streaming is not said."""
        return self.name != "resident" and not self.usual

    @property
    def keep(self) -> int | None:
        """Blocks kept upcast: None (all, prepared up front) when resident, else 1."""
        return None if self.name == "resident" else 1

    def keep_up_to(self, blocks: int) -> int | None:
        """Blocks a command that runs the model again and again (generation) keeps upcast: as many as the room
        holds, up to `blocks` (the block used just before the one made is dropped first: model/weights.py); None
        when resident."""
        if self.name == "resident":
            return None
        if self.room is None or not self.block:
            return blocks
        return max(1, min(blocks, 1 + self.room // self.block))

    def note(self) -> str:
        return f"weights {self.name}: {self.why}"

    def to_dict(self) -> dict[str, Any]:
        """The mode, its estimate by part, every mode's peak and the limit they were set against: the same for the
        same command and budget on any machine (the machine's free memory is in the words, `why`, alone)."""
        limit = {"kind": self.limit, "bytes": self.budget}
        return {"mode": self.name, "estimate": self.estimate.to_dict(), "modes": self.totals, "limit": limit}


@runtime_checkable
class Lazy(Protocol):
    """A file's weights read as the model asks for them (a Hugging Face folder, a GGUF file): what it holds per
    tensor, and a way to keep its bytes in memory as stored."""

    def held(self) -> Held: ...

    def hold(self) -> None: ...


def stored_form(weights: object) -> Held | None:
    """The bytes a lazily read file holds per tensor, or None for weights already in memory (seeded, tfm's files)."""
    return weights.held() if isinstance(weights, Lazy) else None


def build(
    spec: Spec, weights: Mapping[str, Array], dtype: str | np.dtype, mode: Mode, keep: int | None = None
) -> Transformer:
    """The model over `weights` as `mode` holds them: the stored mode keeps the file's bytes mapped; `keep`: the
    blocks kept upcast (default: the mode's)."""
    if mode.name == "stored" and isinstance(weights, Lazy):
        weights.hold()
    return Transformer(spec, weights, dtype, keep_blocks=mode.keep if keep is None else keep)


def mode_estimates(
    spec: Spec, b: int, n: int, dtype: str | np.dtype, held: Held | None, keep: int = 1
) -> dict[str, MemoryEstimate]:
    """The pass's peak in each mode the weights allow: resident only without `held` (the bytes a lazily read
    file holds per tensor); else also stored and streamed, with `keep` blocks upcast beside the one being made.

    A block being made holds its tensors decoded (float32) and their compute-dtype copies, beside the bytes read for
    it (streamed) or the blocks as stored (stored); the embedding and the head are held narrow (decoded to float32
    first, then kept in 2 bytes an element where they are bfloat16 or float16), the head widened a slice at a time."""
    resident = estimate_forward(spec, b, n, dtype)
    if held is None or encoder(spec) is not None:
        return {"resident": resident}
    s = np.dtype(dtype).itemsize
    count = count_params(spec, check=False)
    largest = max(blocks.per_block for blocks in count.decoder)
    outside = count.total - sum(blocks.per_block * blocks.copies for blocks in count.decoder)
    # the embedding and the head kept narrow (model/narrow.py): bfloat16 and float16 in 2 bytes, the rest in 4
    vocabulary = {t.name: t.count for t in count.model if t.name in VOCABULARY}
    # (a GGUF file's quantised ones as stored, `held.rows`, each piece dequantised beside the gguf package's
    # temporaries: a few times PIECE_BYTES)
    narrow = sum(
        held.tensors[name] if name in held.rows else (2 if held.tensors.get(name) == 2 * n else 4) * n
        for name, n in vocabulary.items()
    )
    others = [t.count for t in count.model if t.name not in VOCABULARY]
    block_made = (4 + s) * largest  # a block's tensors decoded (float32) and their copies in the compute dtype
    made = max([block_made, *((4 + s) * t.count for t in count.model)])  # resident: any tensor, decoded and cast
    head = min(SLICE_BYTES, s * max(vocabulary.values(), default=0))  # the head's rows widened at once
    head += 4 * min(PIECE_BYTES, 4 * max(vocabulary.values(), default=0)) if held.rows else 0
    in_pass = s * keep * largest + head  # held in a pass beside the narrow matrices, not while the model is built
    # built: a vocabulary matrix decoded (float32) before it is narrowed, or another tensor decoded and cast
    built = max([*(4 * n for n in vocabulary.values()), *((4 + s) * n for n in others)], default=0) - in_pass
    per_block: dict[str, int] = {}
    for name, size in held.tensors.items():
        if name.startswith("blocks."):
            index = name.split(".", 2)[1]
            per_block[index] = per_block.get(index, 0) + size
    stored = sum(per_block.values())
    streamed = replace(
        resident,
        weights=s * (outside - sum(vocabulary.values())) + narrow + in_pass,
        loaded=max(block_made + max(per_block.values(), default=0), built),
        loaded_is="a block being read and upcast",
    )
    return {
        "resident": replace(resident, loaded=made),  # read tensor by tensor: no whole copy as loaded
        "stored": replace(
            streamed, loaded=max(block_made, built) + stored, loaded_is="the blocks as stored, one being upcast"
        ),
        "streamed": streamed,
    }


def mode_for(
    spec: Spec,
    weights: object,
    b: int,
    n: int,
    dtype: str | np.dtype,
    max_memory: str | None,
    what: str,
    option: str = "--max-memory",
    once: bool = False,
    beside: tuple[int, str] = (0, ""),
    limits: list[Limit] | None = None,
) -> Mode:
    """The mode of a pass over b sequences of n with `weights` (a lazily read file's, else None or weights in
    memory: resident): the first whose estimate fits; `once`: the model runs one pass (streamed first). `beside`:
    bytes the command holds through the pass and what they are, in the refusal's words (compare's kept logits);
    `limits`: the memory limits as read before anything the command holds was allocated (else read now)."""
    held = stored_form(weights)
    label = held.label if held is not None else ""
    estimates = mode_estimates(spec, b, n, dtype, held)
    if beside[0]:
        estimates = {k: replace(e, output=e.output + beside[0], output_is=beside[1]) for k, e in estimates.items()}
    return choose_mode(spec, estimates, dtype, max_memory, what, label, option, once, limits)


def block_bytes(spec: Spec, dtype: str | np.dtype) -> int:
    """Bytes of the largest block in the compute dtype."""
    return np.dtype(dtype).itemsize * max(blocks.per_block for blocks in count_params(spec, check=False).decoder)


def choose_mode(
    spec: Spec,
    estimates: dict[str, MemoryEstimate],
    dtype: str | np.dtype,
    max_memory: str | None,
    what: str,
    label: str = "",
    option: str = "--max-memory",
    once: bool = False,
    limits: list[Limit] | None = None,
) -> Mode:
    """The first mode (resident, stored, streamed) whose estimate fits the tightest limit (`max_memory`, given as
    `option`; `limits` as read earlier, else now); a MemoryLimitError naming the last one's figure when none does.
    `once`: the model runs one pass, so streamed is tried first (each block is made once whatever the mode; see the
    module's note)."""
    limit = tightest(max_memory, option, limits)
    words = {name: WORDS[name].format(dtype=np.dtype(dtype).name, label=label) for name in MODES}
    block = block_bytes(spec, dtype)
    order = sorted(estimates, key=lambda name: name != "streamed") if once else list(estimates)
    for name in order:
        estimate = estimates[name]
        if limit is None or estimate.total <= limit.free:
            room = None if limit is None else limit.free - estimate.total
            within = f"within {limit.name}" if limit is not None else "no memory limit is known here"
            first = "one pass, " if once and name == "streamed" else ""
            why = f"{first}{words[name]}: about {human(estimate.total)}, {within}"
            if len(estimates) > 1:
                why += f" ({'; '.join(f'{other} {human(e.total)}' for other, e in estimates.items())})"
            totals = {other: e.total for other, e in estimates.items()}
            given = limit.free if limit is not None and limit.kind == option else None
            kind = limit.kind if limit is not None else None
            fits = limit is None or estimates[next(iter(estimates))].total <= limit.free  # the first mode, too
            return Mode(name, estimate, why, block, room, totals, kind, given, usual=once and fits)
    what = what if len(estimates) == 1 else f"{what}, {words['streamed']},"
    check_memory(list(estimates.values())[-1], max_memory, what, option, limits)
    raise AssertionError("unreachable: the last estimate exceeds the limit")


__all__ = ["MODES", "Lazy", "Mode", "block_bytes", "build", "choose_mode", "mode_estimates", "mode_for", "stored_form"]
