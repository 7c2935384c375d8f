"""A model as the commands take it, for Python: `tfm.load(path)` reads what any command reads and returns a Model.

A path names a tfm YAML or JSON spec, a Hugging Face model (its folder, quantised checkpoints included, or its
config.json), tfm's .safetensors weights (the spec kept in their metadata) or a GGUF file. The spec is read at
once; the weights only when first used, tensor by tensor from the file as the model asks for them. Errors are the
TfmErrors the CLI prints as one line. The commands call this module for what a path names, so the library and the
command line cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import OptionError, SpecError
from ..io.weights import FORMATS, Weights, seeded_source  # tfm's weights files
from ..options import count, keywords, named, parameters
from ..spec.definition import Spec
from ..tasks.sources import CheckpointSummary, checkpoint_at, read_lazily, spec_at

if TYPE_CHECKING:  # the result types, for annotations: `tfm.load` imports none of the model, analysis or verify
    from tokenizers import Tokenizer

    from ..analysis.costs import Costs
    from ..analysis.limits import Limit
    from ..analysis.modes import Mode
    from ..analysis.params import ParamCount
    from ..analysis.plan import Plan
    from ..model.decoding import Decoder
    from ..model.encoder_decoder import EncoderDecoder
    from ..model.generate import Generation
    from ..model.transformer import Transformer
    from ..tasks.comparison import Comparison, Thresholds
    from ..tasks.perplexity import PerplexityResult
    from ..tasks.runner import RunResult
    from ..verify.common import Verification


@named()
def load(path: str | Path | None = None, weights: str | Path | None = None, seed: int = 0) -> Model:
    """The model at `path` (None: the built-in default spec), its weights from `weights`, else the checkpoint
    `path` holds, else seeded from `seed`. tfm's .safetensors is a model by itself (its spec in the metadata)."""
    path = None if path is None else Path(path)
    weights = None if weights is None else Path(weights)
    if path is not None and weights is None and path.suffix.lower() in FORMATS:
        if path.suffix.lower() == ".npz":
            raise SpecError(
                f"{path}: tfm's .npz weights keep no spec; name the spec too: tfm.load(SPEC, weights='{path}')"
            )
        path, weights = None, path
    spec, source, said = spec_at(path, weights)
    checkpoint, missing = checkpoint_at(path, weights)
    return Model(spec, source, path, checkpoint, seed, [n for n in (said, missing) if n])


@dataclass
class Model:
    """A spec, where it came from, and its weights (a checkpoint read lazily, or seeded from `seed`).

    Each method is what the command of its name does, returning the command's typed result, whose to_dict() is
    what the command prints under --json; `weights`, `generation_config` and `tokenizer` are read on first use."""

    spec: Spec
    source: str  # what the spec was read from: a path, "built-in default", or "FILE metadata"
    path: Path | None  # the path loaded (None: the built-in default, or a weights file's spec)
    weights_path: Path | None  # the checkpoint (None: seeded weights)
    seed: int = 0
    notes: list[str] = field(default_factory=list)  # what the CLI says on stderr when loading it

    @property
    def name(self) -> str:
        return self.spec.label

    @cached_property
    def weights(self) -> Weights:
        """The weights, a mapping of tfm's tensor names to arrays (a checkpoint's read as each is asked for)."""
        from ..tasks.runner import get_weights

        return get_weights(self.spec, self.weights_path, self.seed)[0]

    @property
    def weights_source(self) -> str:
        """Where the weights come from, as the commands say it: the checkpoint's path, or "seeded init (seed S)"."""
        return str(self.weights_path) if self.weights_path is not None else seeded_source(self.seed)

    @property
    def lazy(self) -> bool:
        """Whether the weights are a file read tensor by tensor as the pass asks (a Hugging Face folder, a GGUF
        file): how they are held is then chosen from its stored bytes, before any is read (analysis/modes.py)."""
        return self.weights_path is not None and read_lazily(self.weights_path)

    @property
    def dtype(self) -> str:
        """The compute dtype a forward pass defaults to: float32 for a Hugging Face checkpoint, else float64."""
        return "float32" if self.weights_path is not None and self.weights_path.is_dir() else "float64"

    def transformer(self, dtype: str | None = None) -> Transformer | EncoderDecoder:
        """The NumPy model: a Transformer, or an EncoderDecoder (encode(source), decoder) for two stacks."""
        from ..model.transformer import Transformer
        from ..spec.stacks import encoder

        if encoder(self.spec) is None:
            return Transformer(self.spec, self.weights, np.dtype(dtype or self.dtype))
        from ..model.encoder_decoder import EncoderDecoder

        return EncoderDecoder(self.spec, self.weights, np.dtype(dtype or self.dtype))

    def held(
        self,
        dtype: str,
        batch: int,
        seq_len: int,
        max_memory: str | None = None,
        what: str = "this forward pass",
        again: bool = False,
        source_len: int | None = None,
        beside: tuple[int, str] = (0, ""),
        limits: list[Limit] | None = None,
    ) -> tuple[Transformer | EncoderDecoder, Mode | None]:
        """The NumPy model with its weights held as the memory allows (resident, stored or streamed: see
        analysis/modes.py) for a pass over `batch` sequences of `seq_len`, and the mode (None for two stacks); a
        MemoryLimitError before anything is read when no mode fits (Model.mode). `again`: the model runs again and
        again (generation): as many upcast blocks kept as the memory holds."""
        from ..analysis.modes import build

        mode = self.mode(dtype, batch, seq_len, max_memory, what, source_len, beside, limits)
        if mode is None:
            return self.transformer(dtype), None
        keep = mode.keep_up_to(self.spec.N) if again else None
        return build(self.spec, self.weights, dtype, mode, keep), mode

    def mode(
        self,
        dtype: str,
        batch: int,
        seq_len: int,
        max_memory: str | None = None,
        what: str = "this forward pass",
        source_len: int | None = None,
        beside: tuple[int, str] = (0, ""),
        limits: list[Limit] | None = None,
    ) -> Mode | None:
        """How Model.held would hold the weights (None: two stacks, resident), or the MemoryLimitError it would
        raise, with nothing read. An encoder-decoder's sources are `source_len` long (default: seq_len).
        `beside`: bytes the caller holds through the passes and what they are; `limits`: the memory limits as read
        before the caller allocated them (analysis/modes.mode_for)."""
        from ..analysis.memory import check_memory, estimate_encoder_decoder
        from ..analysis.modes import mode_for
        from ..spec.stacks import encoder

        if encoder(self.spec) is not None:
            estimate = estimate_encoder_decoder(self.spec, batch, source_len or seq_len, seq_len, dtype)
            check_memory(estimate, max_memory, what, limits=limits)
            return None
        weights = self.weights if self.lazy else None  # (seeded weights are made only once they fit)
        return mode_for(self.spec, weights, batch, seq_len, dtype, max_memory, what, beside=beside, limits=limits)

    # -- what the commands do ------------------------------------------------------------------------------------

    def count(self) -> ParamCount:
        """`tfm count`: the parameters by tensor and block, with the closed form (a ParamCount)."""
        from ..analysis.params import count_params

        return count_params(self.spec)

    def checkpoint(self) -> CheckpointSummary | None:
        """`tfm count`'s checkpoint line: a folder's or GGUF file's tensors checked against the spec from their
        headers (files, tensors, dtypes, bytes: a CheckpointSummary), or None for seeded weights and tfm's own
        files."""
        from ..tasks.sources import checkpoint_summary

        return checkpoint_summary(self.weights_path, self.spec)

    @named(renamed={"b": "batch", "n": "seq_len", "n_src": "source_len"})
    def costs(self, batch: int = 1, seq_len: int = 16, dtype: str = "float32", source_len: int | None = None) -> Costs:
        """`tfm count --seq-len`: FLOPs by component and memory for inference and training (a Costs); the options
        are the command's, by their long names (b, n and n_src, the old names, still taken)."""
        from ..analysis.costs import costs
        from ..spec.load import check_length
        from ..spec.stacks import encoder

        check_length(self.spec, count(seq_len, "seq-len"), "--seq-len")
        if source_len is not None and encoder(self.spec) is None:
            raise OptionError(
                f"--source-len {source_len}: {self.spec.label} is not an encoder-decoder (no N_enc), it reads no source"
            )
        return costs(self.spec, batch, seq_len, dtype, source_len)

    def plan(self, **options: Any) -> Plan:
        """`tfm plan`: serving and training memory, what fits, time on hardware (a Plan); the options are the
        command's, by their long names (seq_len, batch, weights, memory="80G", lora_rank, tensor_parallel...;
        llama.cpp's: gpu_layers, tensor_split="8,10", override_tensor=["exps=CPU"], v_dtype, ubatch, fit...)."""
        from dataclasses import fields

        from ..tasks.llama_cpp import LlamaCppAsked
        from ..tasks.planning import asked, plan_model

        llama = [f.name for f in fields(LlamaCppAsked)]
        found = keywords(options, [*parameters(asked, skip=1), *llama], "Model.plan")
        flags = LlamaCppAsked(**{k: found.pop(k) for k in llama if k in found})
        return plan_model(self, **found, llama_cpp=flags)

    @named(renamed={"n": "seq_len"})
    def verify(
        self,
        seq_len: int | None = None,
        dtype: str = "float64",
        tol: float | None = None,
        max_memory: str | None = None,
    ) -> Verification:
        """`tfm verify`: every property of the seeds, each against what theory predicts (a Verification: its
        checks, CheckResults, in the order they ran, and the command's exit code)."""
        from ..verify import Verification, prepare, run_checks

        load = lambda: (self.weights, self.weights_source)  # noqa: E731 - (seeded ones made once they fit)
        setup, weights, _ = prepare(self.spec, load, self.seed, dtype, seq_len, tol, max_memory, self.lazy)
        return Verification(run_checks(setup, weights), self.source, self.weights_source, dtype, setup.mode)

    def perplexity(
        self, ids: Any, ctx: int | None = None, dtype: str | None = None, max_memory: str | None = None
    ) -> PerplexityResult:
        """The perplexity over a stream of token ids (n,) with its uncertainty, as llama-perplexity computes it:
        the whole input as one sequence, or with `ctx` chunks of ctx tokens each scoring its second half (a
        PerplexityResult: .perplexity.value, .perplexity.err)."""
        from ..tasks.perplexity import perplexity

        return perplexity(self.spec, self.held, ids, ctx, dtype or self.dtype, max_memory)

    def compare(
        self,
        other: Model | str | Path,
        ids: Any,
        ctx: int | None = None,
        dtype: str | None = None,
        max_memory: str | None = None,
        thresholds: Thresholds | None = None,
        block_tol: float | None = None,
    ) -> Comparison:
        """`tfm compare`: `other` (a Model, or any path `tfm.load` opens) against this model as the base, over a
        stream of token ids: llama-perplexity's KL divergence, delta p, same top token and perplexities, the
        logits' NMSE, and each block's outputs with the first block parting by more than `block_tol` (a
        Comparison; its exit_code 1 when `thresholds` are broken)."""
        from ..tasks.comparison import BLOCK_TOL, compare

        b = other if isinstance(other, Model) else load(other)
        tol = BLOCK_TOL if block_tol is None else block_tol
        dtype = dtype or self.dtype
        return compare(self, b, ids, ctx, dtype, max_memory, thresholds, block_tol=tol)

    @named(renamed={"n": "seq_len", "b": "batch"})
    def sample(self, seq_len: int = 16, batch: int | None = None, seed: int = 0) -> np.ndarray[Any, Any]:
        """`tfm sample`: a seeded input, token ids (n,) or (b, n), or columns (d, n) or (b, d, n)."""
        from ..tasks.runner import random_input

        return random_input(self.spec, seq_len, batch, seed)

    @named()
    def run(self, x: Any, target: Any = None, dtype: str | None = None, max_memory: str | None = None) -> RunResult:
        """`tfm run`: the forward pass on `x` (an array or a .npy path; an encoder-decoder's source, with
        `target`) -> a RunResult: .output the logits (V, n) or columns (d, n), .block_rms per block."""
        from ..tasks.runner import run_forward

        return run_forward(
            self.spec,
            x,
            self.weights_path,
            self.seed,
            dtype or self.dtype,
            max_memory,
            target_path=target,
            weights=self.weights,
        )

    @named()
    def generate(
        self,
        prompt: Any,
        max_new_tokens: int = 16,
        *,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
        stop: list[int] | None = None,
        dtype: str | None = None,
        on_token: Callable[[np.ndarray], None] | None = None,
        say: Callable[[str], None] | None = None,
        max_memory: str | None = None,
    ) -> Generation:
        """`tfm generate`: new tokens after the prompts, token ids (p,) or (b, p), or text (with a tokenizer.json)
        -> a Generation (.tokens the new ones, as the command's --json; .sequences with the prompts, as its -o;
        .stopped, .notes). Greedy unless a temperature is given; stops at the model's eos_token_id unless `stop`
        says; the options are checked as the command checks them, `say` hears its notes. The weights are held as
        `max_memory` (else the memory available) allows: see `held`."""
        from ..tasks.generation import generate_from

        return generate_from(
            self, prompt, max_new_tokens, temperature, top_k, top_p, seed, stop, dtype, on_token, say, max_memory
        )

    @named()
    def decoder(self, b: int, n: int, dtype: str | None = None, source: Any = None) -> Decoder:
        """A KV-cache Decoder for b sequences of at most n positions: prefill(Z), then step(z), column by column;
        an encoder-decoder's decodes over its `source` (ids or columns of the b sequences), encoded once."""
        from ..model.decoding import Decoder
        from ..model.transformer import Transformer

        net = self.transformer(dtype)
        if isinstance(net, Transformer):
            if source is not None:
                raise OptionError(
                    f"Model.decoder: {self.spec.label} is not an encoder-decoder (no N_enc), it reads no source"
                )
            return Decoder(net, b, n)
        if source is None:
            raise OptionError(
                f"Model.decoder: {self.spec.label} is an encoder-decoder, its decoder reads the encoded "
                "source: give source= (ids or columns of the b sequences)"
            )
        memory = net.encode(np.asarray(source))  # (d, n_src) or (b, d, n_src)
        if (1 if memory.ndim == 2 else memory.shape[0]) != b:
            raise OptionError(f"Model.decoder: a source of {np.shape(source)} for b = {b} sequences: expected as many")
        return Decoder(net.decoder, b, n, memory=memory)

    @cached_property
    def generation_config(self) -> dict[str, Any]:
        """The stop, padding and start tokens the model's files give (generation_config.json over config.json)."""
        from ..tasks.generation import generation_config

        return generation_config(self.path, self.weights_path)

    @cached_property
    def tokenizer(self) -> Tokenizer | None:
        """The folder's tokenizer.json (or a GGUF file's vocabulary) as a `tokenizers.Tokenizer`, or None when the
        model has none."""
        from ..tasks.generation import has_tokenizer, tokenizer

        return tokenizer(self.path, required=False) if self.path is not None and has_tokenizer(self.path) else None


def load_spec(path: str | Path) -> Spec:
    """The spec of any model a command takes: a tfm YAML or JSON spec, a Hugging Face folder or config.json, a
    GGUF file, or tfm's .safetensors weights (the spec kept in their metadata)."""
    return load(path).spec


def compare(a: Model | str | Path, b: Model | str | Path, ids: Any, **options: Any) -> Comparison:
    """`tfm compare A B`: B against A (the base), each a Model or any path `tfm.load` opens, over the token ids
    `ids` (n,); the options are Model.compare's (ctx, dtype, max_memory, thresholds, block_tol)."""
    return (a if isinstance(a, Model) else load(a)).compare(b, ids, **options)


def perplexity(model: Model | str | Path, ids: Any, **options: Any) -> PerplexityResult:
    """`tfm perplexity MODEL`: the model's perplexity over the token ids `ids` (n,), with its uncertainty; the
    options are Model.perplexity's (ctx, dtype, max_memory)."""
    return (model if isinstance(model, Model) else load(model)).perplexity(ids, **options)
