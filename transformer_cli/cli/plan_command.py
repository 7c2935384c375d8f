"""`tfm plan`: serving and training memory, and roofline time on named hardware, at batch b and context n."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..analysis.hardware import PRESETS
from ..analysis.kv_cache import KV_BYTES
from ..analysis.serving import GGUF_MIXES, LOGITS, WEIGHT_DTYPES, context_cap
from ..analysis.training import OPTIMIZERS
from ..errors import TfmError
from ..text import escaped as shown
from .common import EXIT_CODES, ForceOpt, JsonOpt, SpecArg, app, err, handled, load, out, print_json, spec_json
from .plan_tables import WAYS, devices_table, fits_table, serving_table, time_table, training_table

if TYPE_CHECKING:  # only for annotations: `tfm --help` does not import the plan
    from ..analysis.plan import Plan
    from ..analysis.quantized import Held

WeightDType = Enum("WeightDType", {k: k for k in (*WEIGHT_DTYPES, *GGUF_MIXES)}, type=str)  # type: ignore[misc]
KVDType = Enum("KVDType", {k: k for k in KV_BYTES}, type=str)  # type: ignore[misc]
OptimizerName = Enum("OptimizerName", {k: k for k in OPTIMIZERS}, type=str)  # type: ignore[misc]
LogitsOf = Enum("LogitsOf", {k: k for k in LOGITS}, type=str)  # type: ignore[misc]
HardwareName = Enum("HardwareName", {k: k for k in (*PRESETS, "this")}, type=str)  # type: ignore[misc]


@app.command(epilog=EXIT_CODES)
def plan(
    spec_path: SpecArg = None,
    seq_len: Annotated[
        Optional[int], typer.Option("--seq-len", "-n", min=1, help="Context n [default: 2048, or max_len if less].")
    ] = None,
    batch: Annotated[int, typer.Option("--batch", "-b", min=1, help="Sequences at once.")] = 1,
    source_len: Annotated[
        Optional[int], typer.Option("--source-len", min=1, help="An encoder-decoder's source length [default: n].")
    ] = None,
    weights: Annotated[
        Optional[WeightDType],
        typer.Option("--weights", help="Weights' type [default: bfloat16; a GGUF file's own type]."),
    ] = None,
    kv_dtype: Annotated[KVDType, typer.Option("--kv-dtype", help="KV cache's type.")] = "bfloat16",  # type: ignore[assignment]
    memory: Annotated[
        Optional[str],
        typer.Option(
            "--memory", help="Also find the largest batch and context fitting this size, with its unit (80G)."
        ),
    ] = None,
    optimizer: Annotated[OptimizerName, typer.Option("--optimizer", help="Training's optimizer.")] = "adam-mixed",  # type: ignore[assignment]
    zero: Annotated[int, typer.Option("--zero", min=0, max=3, help="ZeRO stage (0-3) over --devices.")] = 0,
    devices: Annotated[int, typer.Option("--devices", "-D", min=1, help="Data-parallel devices for ZeRO.")] = 1,
    hardware: Annotated[
        Optional[list[HardwareName]],
        typer.Option("--hardware", help="Hardware for the time estimates (repeatable) [default: all, and this]."),
    ] = None,
    lora_rank: Annotated[
        Optional[int], typer.Option("--lora-rank", min=1, help="Train LoRA adapters of this rank, the base frozen.")
    ] = None,
    lora_targets: Annotated[
        Optional[str],
        typer.Option(
            "--lora-targets",
            help="LoRA's modules: all-linear, or names (q_proj,v_proj; a tfm spec: W_Q,W_V) [default: all-linear].",
        ),  # fmt: skip
    ] = None,
    tensor_parallel: Annotated[
        int, typer.Option("--tensor-parallel", min=1, help="Devices splitting each layer (Megatron's way).")
    ] = 1,
    pipeline_parallel: Annotated[
        int, typer.Option("--pipeline-parallel", min=1, help="Pipeline stages, N / P blocks each.")
    ] = 1,
    expert_parallel: Annotated[
        int, typer.Option("--expert-parallel", min=1, help="Devices splitting a mixture's experts.")
    ] = 1,
    logits: Annotated[
        LogitsOf, typer.Option("--logits", help="The prefill's logits: each prompt's last position's, or all.")
    ] = "last",  # type: ignore[assignment]
    plot: Annotated[
        Optional[Path],
        typer.Option(
            "--plot",
            help="Draw serving memory against the context into this .png, .svg or .pdf file "
            "(matplotlib: the plot extra).",
        ),  # fmt: skip
    ] = None,
    plot_weights: Annotated[
        Optional[str],
        typer.Option("--plot-weights", help="Also draw these weights' totals (bfloat16,int4,q4_k_m).", metavar="TYPES"),
    ] = None,
    chart: Annotated[
        Optional[bool],
        typer.Option("--chart/--no-chart", help="Serving memory against the context as bars [default: on a terminal]."),
    ] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Plan serving and training: memory (weights, KV cache, the prefill's peak; model states, activations)
    and time (prefill and decoding on named hardware), at batch b and context n.

    Serving: weights + KV cache + a plain prefill's transient peak, with and without a fused attention kernel;
    --memory finds the largest batch at n and the largest context at b that fit. Training: one device's model
    states (the optimizer's bytes per parameter, split by ZeRO over --devices) and the activations autograd
    keeps (unfused attention, fused, full recomputation); --lora-rank fine-tunes adapters instead, the base frozen
    in --weights (nf4: QLoRA). --tensor-parallel, --pipeline-parallel and --expert-parallel split the model
    over devices: serving, what fits and training are then one device's (its largest stage's).

    Time: a roofline on the vendors' peak dense FLOP/s and bandwidth, lower bounds; "this" measures this machine
    (NumPy GEMM and copy).

    \b
    Examples:
      tfm plan examples/hf/Meta-Llama-3-8B -n 8192 --memory 80G
      tfm plan examples/hf/Meta-Llama-3-8B --weights nf4 --lora-rank 16
      tfm plan examples/hf/Meta-Llama-3-8B --memory 24G --plot plan.svg --plot-weights int4
    """
    from ..analysis.plan import HARDWARE
    from ..analysis.plan import plan as make_plan
    from ..analysis.units import parse_size
    from ..spec.definition import check_length
    from ..spec.stacks import encoder

    with handled(json_out):
        if plot is not None:
            from ..io.outputs import check_output_path
            from .plot import plot_format

            plot_format(plot)
            check_output_path(plot, [spec_path], force)
        spec, _ = load(spec_path)
        cap = context_cap(spec)
        n = seq_len or min(2048, cap or 2048)
        check_length(spec, n, "--seq-len")  # refused beyond learned positions
        if cap and n > cap:
            err.print(f"warning: --seq-len {n:,} is beyond {shown(spec.label)}'s own context of {cap:,} tokens "
                      "(context: max_position_embeddings); the figures are for a model run past it", soft_wrap=True,
                      highlight=False)  # fmt: skip
        if source_len and encoder(spec) is None:
            raise TfmError(
                f"--source-len {source_len}: {spec.label} is not an encoder-decoder (no N_enc), it reads no source"
            )
        if devices > 1 and zero == 0:
            raise TfmError(f"--devices {devices}: needs --zero 1, 2 or 3 (without ZeRO each device holds it all)")
        budget = parse_size(memory, "--memory") if memory else None
        names = tuple(h.value for h in hardware) if hardware else HARDWARE
        kind: str | Held = weights.value if weights is not None else _stored_type(spec_path, spec) or "bfloat16"
        if kind in GGUF_MIXES:
            kind = _mix(spec_path, spec, str(kind))
        if lora_targets and not lora_rank:
            raise TfmError(f"--lora-targets {lora_targets}: needs --lora-rank R (the adapters' rank)")
        lora = _adapters(spec_path, spec, lora_rank, lora_targets or "all-linear") if lora_rank else None
        from ..analysis.parallel import Split

        split = Split(tensor_parallel, pipeline_parallel, expert_parallel)
        result = make_plan(spec, batch, n, source_len, kind, kv_dtype.value, budget, optimizer.value, zero,
                           devices, names, lora, split, logits.value)  # fmt: skip
    with handled(json_out):
        if plot is not None or chart or (chart is None and not json_out and out.is_terminal):
            curve = _curve(spec_path, spec, result, kind, plot_weights, split, names)
            if plot is not None:
                _draw(plot, result, *curve)
    if json_out:
        data = result.to_dict()
        print_json({"name": data.pop("name"), "spec": spec_json(spec), **data})
        return
    tables = (devices_table(result), serving_table(result), fits_table(result), training_table(result),
              time_table(result))  # fmt: skip
    for table in tables:
        if table is not None:
            out.print(table)
    if chart or (chart is None and out.is_terminal):
        from .plot import chart as bars

        out.print(f"Serving {shown(result.name)} against the context, b = {result.batch}")
        out.print(bars(*curve))


def _mix(path: Path | None, spec, mix: str) -> Held:
    """A llama.cpp file type (Q4_K_M: Q4_K with Q6_K where llama-quantize puts it) for the GGUF architecture of
    the model: a folder's model_type, a GGUF file's own, that of the config tfm's weights file keeps, else llama."""
    from ..gguf.mixes import mix_held
    from ..gguf.write import ARCH_OF

    model_type, arch = None, "llama"
    if path is not None and path.is_dir():
        from ..hf.config import read_config

        model_type = read_config(path).get("model_type")
    elif path is not None and path.suffix.lower() == ".gguf":
        from ..gguf.header import read_header

        arch = str(read_header(path).metadata.get("general.architecture"))
    elif path is not None and path.suffix.lower() == ".safetensors":
        import json

        from ..io.safetensors_io import peek

        kept = peek(path)[1].get("hf_config")
        model_type = json.loads(kept).get("model_type") if kept else None
    if model_type is not None:
        if model_type not in ARCH_OF:
            raise TfmError(f"--weights {mix}: model_type '{model_type}' has no GGUF architecture tfm knows (it "
                           f"knows {', '.join(ARCH_OF)})")  # fmt: skip
        arch = ARCH_OF[str(model_type)]
    return mix_held(spec, arch, mix)


def _curve(path: Path | None, spec, p: Plan, kind, also: str | None, split, hardware: tuple[str, ...]):
    """(contexts, serving memory at each for each weights type, the limits drawn: the budget, each GPU's memory)."""
    from ..analysis.plan import contexts, serving_curve
    from ..analysis.units import human

    weights = [kind]
    for name in [w.strip() for w in (also or "").split(",") if w.strip()]:
        if name in GGUF_MIXES:
            weights.append(_mix(path, spec, name))
        elif name in WEIGHT_DTYPES:
            weights.append(name)
        else:
            raise TfmError(f"--plot-weights {also}: '{name}' is no weights type (expected {', '.join(WEIGHT_DTYPES)}, "
                           f"or a mix: {', '.join(GGUF_MIXES)})")  # fmt: skip
    lengths = contexts(spec, p.seq_len)
    curve = serving_curve(spec, p.batch, lengths, weights, p.kv_dtype, p.source_len, split, p.logits)
    limits: list[tuple[str, int]] = []
    if p.fits is not None:
        limits.append((f"budget (--memory {human(p.fits[WAYS[0]].memory)})", p.fits[WAYS[0]].memory))
    by_size: dict[int, list[str]] = {}  # GPUs of one size: one line
    for name in hardware:
        if name in PRESETS:
            by_size.setdefault(PRESETS[name].memory, []).append(PRESETS[name].name)
    limits += [(f"{', '.join(names)} ({size / 1e9:g} GB)", size) for size, names in by_size.items()]
    return lengths, curve, limits


def _draw(path: Path, p: Plan, lengths, curve, limits) -> None:
    from ..io.outputs import write_atomic
    from .plot import figure, plot_format

    devices = f", per device of {p.split.devices}" if p.split else ""
    title = f"{p.name}: serving memory, b = {p.batch}, KV cache {p.kv_dtype}{devices}"
    data = figure(title, lengths, curve, limits, plot_format(path))

    def write(handle) -> None:
        handle.write(data)

    write_atomic(path, write)
    err.print(f"wrote {shown(str(path))}", highlight=False, soft_wrap=True)


def _adapters(path: Path | None, spec, rank: int, targets: str):
    """LoRA on the model: a Hugging Face folder's (or config.json's) modules by their names, else tfm's own."""
    from ..analysis.lora import adapters

    modules = None
    if path is not None and (path.is_dir() or path.name == "config.json"):
        from ..hf.config import read_config
        from ..hf.lora_modules import hf_linear_modules

        modules = hf_linear_modules(spec, read_config(path))
    return adapters(spec, rank, targets, modules)


def _stored_type(path: Path | None, spec) -> str | Held | None:
    """The weights a file holds, for the plan: a GGUF file's one type (as --weights names it); the file's own
    bytes, tensor by tensor, for a GGUF file that mixes types (Q4_K_M: Q4_K and Q6_K) or a quantised Hugging
    Face checkpoint (said on stderr); None for anything else (planned in bfloat16)."""
    if path is None:
        return None
    if path.is_dir():
        from ..hf.config import read_config
        from ..hf.quant import KEYS

        if not (path / "config.json").is_file() or not any(key in read_config(path) for key in KEYS):
            return None
        from ..sources import load_weights

        held = load_weights(path, spec).held()  # type: ignore[attr-defined]
        err.print(f"note: {shown(str(path))} is quantised ({shown(held.label)}): planned at its own bytes",
                  soft_wrap=True, highlight=False)  # fmt: skip
        return held
    if path.suffix.lower() != ".gguf":
        return None
    from ..analysis.quantized import weight_bytes
    from ..analysis.units import human
    from ..gguf.model import GGUFWeights, gguf_summary

    summary = gguf_summary(path, spec)
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
    types = {kind: row for kind, row in summary["types"].items() if kind != "F32"} or summary["types"]
    main = max(types, key=lambda kind: types[kind]["parameters"])
    kind = names.get(main, main.lower())
    if kind in WEIGHT_DTYPES and weight_bytes(spec)[kind] == summary["tensor_bytes"]:
        return kind
    held = GGUFWeights(path, spec).held()
    err.print(f"note: {shown(str(path))} stores {', '.join(sorted(summary['types']))}: planned at its own bytes "
              f"({human(held.total())})", soft_wrap=True, highlight=False)  # fmt: skip
    return held
