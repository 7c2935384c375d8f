"""`tfm plan` on a model's files, for the command and `Model.plan`: the options checked, the weights a file holds
(a GGUF file's type, a quantised checkpoint's own bytes), llama.cpp's mixes for the model's architecture, and LoRA
on the modules as the model's own names give them. The figures themselves are analysis/plan.py's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.hardware import PRESETS, THIS_MACHINE
from ..analysis.kv_cache import KV_BYTES
from ..analysis.lora import adapters
from ..analysis.parallel import Split
from ..analysis.plan import HARDWARE, Asked, plan_asked
from ..analysis.quantized import weight_bytes
from ..analysis.serving import FILE_TYPES_AS_GGML, GGUF_MIXES, LOGITS, WEIGHT_DTYPES, context_cap
from ..analysis.training import OPTIMIZERS
from ..analysis.units import human, size
from ..errors import OptionError, TfmError
from ..gguf.model import GGUFWeights, gguf_summary
from ..hf.checkpoint import has_checkpoint
from ..hf.config import config_path, read_config
from ..hf.folder import held_by_config
from ..hf.quant import KEYS
from ..options import count
from ..spec.definition import Spec
from ..spec.load import check_length
from ..spec.stacks import encoder
from .sources import checkpoint_at, is_hugging_face, load_weights, model_kind, read_lazily

if TYPE_CHECKING:
    from ..analysis.plan import Plan
    from ..components.held import Held


def plan_model(model: Any, *args: Any, llama_cpp: Any = None, **options: Any) -> Plan:
    """The plan `tfm plan MODEL` makes with these options (asked()'s), with how its checkpoint runs here, and as
    llama.cpp runs it (`llama_cpp`: a tasks.llama_cpp.LlamaCppAsked of its flags)."""

    options_asked = asked(model, *args, **options)
    path = model.path or model.weights_path
    found = with_runs_here(path, options_asked, plan_asked(options_asked))
    given = inspect.signature(asked).bind(model, *args, **options).arguments  # (by name, as they were given)
    weights, kv, seq_len, memory = (given.get(k) for k in ("weights", "kv_dtype", "seq_len", "memory"))
    return with_llama_cpp(path, options_asked, found, weights, kv, seq_len, memory, llama_cpp)


def with_llama_cpp(
    path: Path | None,
    options: Asked,
    plan: Plan,
    weights: str | None,
    kv_dtype: str | None,
    seq_len: int | None,
    memory: Any,
    llama: Any,  # tasks.llama_cpp.LlamaCppAsked, or None
    say: Callable[[str], None] | None = None,
) -> Plan:
    """The plan with its llama.cpp part where asked: a flag of llama.cpp's, a GGML cache type (--kv-dtype f16,
    q8_0, ...), llama.cpp's file type (--weights q4_k_m), or a GGUF file; without one of llama.cpp's flags, a model
    its part cannot hold (its mixer not modelled, no GGUF architecture) is said, not refused."""
    from ..analysis.kv_cache import GGML_KV
    from .llama_cpp import LlamaCppAsked, llama_cpp_part

    llama = llama or LlamaCppAsked()
    gguf = path is not None and path.suffix.lower() == ".gguf"
    mixed = weights in (*GGUF_MIXES, *FILE_TYPES_AS_GGML)
    if not (llama.given or kv_dtype in GGML_KV or mixed or gguf):
        return plan
    sizes = str(memory) if isinstance(memory, str) and "," in memory else memory
    try:
        found = llama_cpp_part(
            path,
            options.spec,
            options.weights,
            weights is not None,
            kv_dtype or "f16",  # (llama.cpp's default, where none was asked)
            options.n,
            seq_len is not None,
            sizes if isinstance(sizes, str) else None if sizes is None else f"{sizes}B",
            llama,
            say or (lambda note: None),
        )
    except TfmError as e:
        if llama.given:
            raise
        (say or (lambda note: None))(f"note: llama.cpp's part not planned ({e})")
        return plan
    return replace(plan, llama_cpp=found)


def with_runs_here(path: Path | None, options: Asked, plan: Plan) -> Plan:
    """The plan, with how `tfm run` would hold the checkpoint at `path` (a folder, a GGUF file) on this machine, in
    float32 at the plan's b and n under its --memory (else the memory available): the mode (analysis/modes.py),
    its peak, why, and a lower bound on a pass here (the plan's roofline on this machine, plus reading the blocks as
    stored and writing them upcast at its memory bandwidth, in the modes that upcast every pass). A plan of anything
    else is returned as it is."""
    from ..analysis.memory import MemoryLimitError
    from ..analysis.modes import mode_for, stored_form  # (the model's modules: loaded only for a checkpoint)
    from ..analysis.params import count_params

    weights_path, _ = checkpoint_at(path, None) if path is not None else (None, None)
    spec = options.spec
    if weights_path is None or not read_lazily(weights_path) or encoder(spec) is not None:
        return plan
    weights = load_weights(weights_path, spec)
    budget = None if options.memory is None else f"{options.memory}B"
    try:
        mode = mode_for(spec, weights, options.b, options.n, "float32", budget, "a forward pass here", "--memory")
    except MemoryLimitError as refused:
        return replace(plan, runs_here={"mode": None, "why": str(refused)})
    seconds = None
    this = next((t for t in plan.time if t.hardware == THIS_MACHINE), None)
    if this is not None:
        held = stored_form(weights)
        assert held is not None  # (a lazily read file)
        blocks = sum(size for name, size in held.tensors.items() if name.startswith("blocks."))
        upcast = blocks + 4 * sum(b.per_block * b.copies for b in count_params(spec, check=False).decoder)
        seconds = this.time_to_first_token.seconds + (0 if mode.name == "resident" else upcast / this.bandwidth)
    found = mode.to_dict() | {"why": mode.why, "peak_bytes": mode.estimate.total, "pass_seconds": seconds}
    return replace(plan, runs_here=found)


def asked(
    model: Any,  # a models.Model
    seq_len: int | None = None,
    batch: int = 1,
    source_len: int | None = None,
    weights: str | None = None,
    kv_dtype: str = "bfloat16",
    memory: int | str | None = None,
    optimizer: str = "adam-mixed",
    zero: int = 0,
    devices: int = 1,
    hardware: Iterable[str] | None = None,
    lora_rank: int | None = None,
    lora_targets: str | None = None,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int = 1,
    logits: str = "last",
    say: Callable[[str], None] | None = None,
) -> Asked:
    """What `tfm plan MODEL` is asked with these options (by the command's long names; memory as bytes or with
    its unit, "80G"), checked as the command checks them; `say` hears what the command says on stderr (a context
    beyond the model's, a file planned at its own bytes)."""

    say = say or (lambda note: None)
    spec, path = model.spec, model.path or model.weights_path
    chosen = (
        (weights, (*WEIGHT_DTYPES, *GGUF_MIXES), "weights"),
        (kv_dtype, tuple(KV_BYTES), "kv-dtype"),
        (optimizer, tuple(OPTIMIZERS), "optimizer"),
        (logits, tuple(LOGITS), "logits"),
    )
    for given, choices, option in chosen:
        if given is not None and given not in choices:
            raise OptionError(f"--{option} {given}: expected one of {', '.join(choices)}")
    names = ((hardware,) if isinstance(hardware, str) else tuple(hardware)) if hardware else HARDWARE
    for name in names:
        if name not in (*PRESETS, "this"):
            raise OptionError(f"--hardware {name}: expected one of {', '.join((*PRESETS, 'this'))}")
    counts = (
        (batch, "batch"),
        (devices, "devices"),
        (tensor_parallel, "tensor-parallel"),
        (pipeline_parallel, "pipeline-parallel"),
        (expert_parallel, "expert-parallel"),
    )
    for amount, option in counts:
        count(amount, option)
    count(zero, "zero", 0, 3)
    for length, option in ((seq_len, "seq-len"), (source_len, "source-len"), (lora_rank, "lora-rank")):
        if length is not None:
            count(length, option)
    cap = context_cap(spec)
    n = seq_len if seq_len is not None else min(2048, cap or 2048)
    check_length(spec, n, "--seq-len")  # refused beyond learned positions
    if cap and n > cap:
        say(
            f"warning: --seq-len {n:,} is beyond {spec.label}'s own context of {cap:,} tokens (context: "
            "max_position_embeddings); the figures are for a model run past it"
        )
    if source_len is not None and encoder(spec) is None:
        raise TfmError(
            f"--source-len {source_len}: {spec.label} is not an encoder-decoder (no N_enc), it reads no source"
        )
    if devices > 1 and zero == 0:
        raise TfmError(f"--devices {devices}: needs --zero 1, 2 or 3 (without ZeRO each device holds it all)")
    if isinstance(memory, str) and "," in memory:  # (a size per device, for llama.cpp's --fit: the first here)
        memory = memory.split(",")[0].strip()
    budget = None if memory is None else size(memory, "--memory")
    kind: str | Held = weights if weights is not None else stored_type(path, spec, say) or "bfloat16"
    if kind in GGUF_MIXES:
        kind = mix(path, spec, str(kind))
    elif kind in FILE_TYPES_AS_GGML:  # (llama-quantize's file type where llama.cpp has the model, else the type)
        kind = file_type(path, spec, str(kind), say)
    if lora_targets and lora_rank is None:
        raise TfmError(f"--lora-targets {lora_targets}: needs --lora-rank R (the adapters' rank)")
    lora = adapters_of(path, spec, lora_rank, lora_targets or "all-linear") if lora_rank is not None else None
    split = Split(tensor_parallel, pipeline_parallel, expert_parallel)
    return Asked(
        spec,
        b=batch,
        n=n,
        n_src=source_len,
        weights=kind,
        kv=kv_dtype,
        memory=budget,
        optimizer=optimizer,
        zero=zero,
        devices=devices,
        hardware=names,
        lora=lora,
        split=split,
        logits=logits,
    )


def weights_types(path: Path | None, spec: Spec, kind: str | Held, also: str | None) -> list[str | Held]:
    """The weights drawn: the plan's, then each of `also` (--plot-weights: types or llama.cpp mixes, by commas)."""
    found = [kind]
    for name in [w.strip() for w in (also or "").split(",") if w.strip()]:
        if name in GGUF_MIXES:
            found.append(mix(path, spec, name))
        elif name in FILE_TYPES_AS_GGML:
            found.append(file_type(path, spec, name, lambda note: None))
        elif name in WEIGHT_DTYPES:
            found.append(name)
        else:
            raise TfmError(
                f"--plot-weights {also}: '{name}' is no weights type (expected {', '.join(WEIGHT_DTYPES)}, "
                f"or a mix: {', '.join(GGUF_MIXES)})"
            )
    return found


def file_type(path: Path | None, spec: Spec, name: str, say: Callable[[str], None]) -> str | Held:
    """A GGML type's name that is also a file type of llama-quantize (q4_0: Q4_0 but the head Q6_K): that file
    type where the model has a GGUF architecture (mix), else every tensor in that type (said)."""
    try:
        return mix(path, spec, name)
    except TfmError as e:  # (no GGUF architecture for the model, or the model not one of it)
        say(f"note: --weights {name}: every tensor of two or more axes in {name}, not llama-quantize's mix ({e})")
        return name


def mix(path: Path | None, spec: Spec, name: str) -> Held:
    """A llama.cpp file type (Q4_K_M: Q4_K with Q6_K where llama-quantize puts it) for the GGUF architecture of
    the model: a folder's model_type, a GGUF file's own, that of the config tfm's weights file keeps, else llama."""
    from ..gguf.mixes import mix_held
    from ..gguf.write import ARCH_OF

    model_type, file_arch = model_kind(path)
    arch = file_arch or "llama"
    if model_type is not None:
        if model_type not in ARCH_OF:
            raise TfmError(
                f"--weights {name}: model_type '{model_type}' has no GGUF architecture tfm knows (it "
                f"knows {', '.join(sorted(ARCH_OF))})"
            )
        arch = ARCH_OF[str(model_type)]
    return mix_held(spec, arch, name)


def adapters_of(path: Path | None, spec: Spec, rank: int, targets: str) -> Any:
    """LoRA on the model: a Hugging Face model's modules by their names (a folder, or a config file by any name, as
    the spec was read: sources.is_hugging_face), else tfm's own."""

    modules = None
    if path is not None and is_hugging_face(path):
        from ..hf.lora_modules import hf_linear_modules

        modules = hf_linear_modules(spec, read_config(path))
    return adapters(spec, rank, targets, modules)


def stored_type(path: Path | None, spec: Spec, say: Callable[[str], None]) -> str | Held | None:
    """The weights a file holds, for the plan: a GGUF file's one type (as --weights names it); the file's own
    bytes, tensor by tensor, for a GGUF file that mixes types (Q4_K_M: Q4_K and Q6_K) or a quantised Hugging
    Face checkpoint (said); None for anything else (planned in bfloat16)."""
    if path is None:
        return None

    if is_hugging_face(path):  # a folder, or a config file by any name (as the spec was read)
        if not config_path(path).is_file() or not any(key in (config := read_config(path)) for key in KEYS):
            return None
        if not (path.is_dir() and has_checkpoint(path)):  # a published config alone: what its method stores
            held = held_by_config(config, spec, str(config_path(path)))
            say(
                f"note: {path} is quantised and holds no weights: planned at the bytes its method stores ({held.label})"
            )
            return held

        held = load_weights(path, spec).held()  # type: ignore[attr-defined]
        say(f"note: {path} is quantised ({held.label}): planned at its own bytes")
        return held
    if path.suffix.lower() != ".gguf":
        return None

    summary = gguf_summary(path, spec)
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
    types = {kind: row for kind, row in summary["types"].items() if kind != "F32"} or summary["types"]
    main = max(types, key=lambda kind: types[kind]["parameters"])
    kind = names.get(main, main.lower())
    if kind in WEIGHT_DTYPES and weight_bytes(spec)[kind] == summary["tensor_bytes"]:
        return kind
    held = GGUFWeights(path, spec).held()
    say(f"note: {path} stores {', '.join(sorted(summary['types']))}: planned at its own bytes ({human(held.total())})")
    return held
