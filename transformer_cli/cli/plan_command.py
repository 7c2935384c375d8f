"""`tfm plan`: serving and training memory, and roofline time on named hardware, at batch b and context n."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..analysis.hardware import PRESETS
from ..analysis.kv_cache import GGML_KV, KV_BYTES
from ..analysis.serving import GGUF_MIXES, LOGITS, WEIGHT_DTYPES
from ..analysis.training import OPTIMIZERS
from ..text import escaped as shown
from .common import EXIT_CODES, ForceOpt, JsonOpt, SpecArg, app, err, handled, load, out, print_json, spec_json
from .plan_tables import (
    WAYS,
    devices_table,
    fits_table,
    llama_cpp_table,
    runs_here_line,
    serving_table,
    time_table,
    training_table,
)

if TYPE_CHECKING:  # only for annotations: `tfm --help` does not import the plan
    from ..analysis.plan import Asked, Plan

WeightDType = Enum("WeightDType", {k: k for k in (*WEIGHT_DTYPES, *GGUF_MIXES)}, type=str)  # type: ignore[misc]
KVDType = Enum("KVDType", {k: k for k in KV_BYTES}, type=str)  # type: ignore[misc]
VDType = Enum("VDType", {k: k for k in GGML_KV}, type=str)  # type: ignore[misc]
OptimizerName = Enum("OptimizerName", {k: k for k in OPTIMIZERS}, type=str)  # type: ignore[misc]
LogitsOf = Enum("LogitsOf", {k: k for k in LOGITS}, type=str)  # type: ignore[misc]
HardwareName = Enum("HardwareName", {k: k for k in (*PRESETS, "this")}, type=str)  # type: ignore[misc]


@app.command(epilog=EXIT_CODES)
def plan(
    spec_path: SpecArg = None,
    seq_len: Annotated[
        Optional[int], typer.Option("--seq-len", "-n", help="Context n [default: 2048, or max_len if less].")
    ] = None,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences at once.")] = 1,
    source_len: Annotated[
        Optional[int], typer.Option("--source-len", help="An encoder-decoder's source length [default: n].")
    ] = None,
    weights: Annotated[
        Optional[WeightDType],
        typer.Option("--weights", help="Weights' type [default: bfloat16; a GGUF file's own type]."),
    ] = None,
    kv_dtype: Annotated[
        Optional[KVDType],
        typer.Option(
            "--kv-dtype",
            help="KV cache's type (GGML's f16, q8_0, ...: llama.cpp's -ctk) [default: bfloat16; llama.cpp's f16].",
        ),
    ] = None,
    memory: Annotated[
        Optional[str],
        typer.Option(
            "--memory",
            help="Also find the largest batch and context fitting this size, with its unit (80G); with --fit, "
            "each device's (24G,24G).",
        ),
    ] = None,
    optimizer: Annotated[OptimizerName, typer.Option("--optimizer", help="Training's optimizer.")] = "adam-mixed",  # type: ignore[assignment]
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage (0-3) over --devices.")] = 0,
    devices: Annotated[int, typer.Option("--devices", "-D", help="Data-parallel devices for ZeRO.")] = 1,
    hardware: Annotated[
        Optional[list[HardwareName]],
        typer.Option("--hardware", help="Hardware for the time estimates (repeatable) [default: all, and this]."),
    ] = None,
    lora_rank: Annotated[
        Optional[int], typer.Option("--lora-rank", help="Train LoRA adapters of this rank, the base frozen.")
    ] = None,
    lora_targets: Annotated[
        Optional[str],
        typer.Option(
            "--lora-targets",
            help="LoRA's modules: all-linear, or names (q_proj,v_proj; a tfm spec: W_Q,W_V) [default: all-linear].",
        ),
    ] = None,
    tensor_parallel: Annotated[
        int, typer.Option("--tensor-parallel", help="Devices splitting each layer (Megatron's way).")
    ] = 1,
    pipeline_parallel: Annotated[
        int, typer.Option("--pipeline-parallel", help="Pipeline stages, N / P blocks each.")
    ] = 1,
    expert_parallel: Annotated[
        int, typer.Option("--expert-parallel", help="Devices splitting a mixture's experts.")
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
        ),
    ] = None,
    plot_weights: Annotated[
        Optional[str],
        typer.Option("--plot-weights", help="Also draw these weights' totals (bfloat16,int4,q4_k_m).", metavar="TYPES"),
    ] = None,
    chart: Annotated[
        Optional[bool],
        typer.Option("--chart/--no-chart", help="Serving memory against the context as bars [default: on a terminal]."),
    ] = None,
    v_dtype: Annotated[
        Optional[VDType], typer.Option("--v-dtype", help="llama.cpp: V's type (-ctv) [default: --kv-dtype's].")
    ] = None,
    ubatch: Annotated[int, typer.Option("--ubatch", help="llama.cpp: tokens a pass takes (-ub).")] = 512,
    parallel: Annotated[int, typer.Option("--parallel", help="llama.cpp: sequences sharing the context (-np).")] = 1,
    kv_unified: Annotated[
        bool, typer.Option("--kv-unified", help="llama.cpp: one cache the sequences share (-kvu).")
    ] = False,
    flash_attn: Annotated[
        bool, typer.Option("--flash-attn/--no-flash-attn", help="llama.cpp: flash attention (-fa).")
    ] = True,
    swa_full: Annotated[
        bool, typer.Option("--swa-full", help="llama.cpp: sliding-window blocks cache the whole context.")
    ] = False,
    gpu_layers: Annotated[
        Optional[int], typer.Option("--gpu-layers", help="llama.cpp: layers on the devices (-ngl; -1: all).")
    ] = None,
    tensor_split: Annotated[
        Optional[str], typer.Option("--tensor-split", help="llama.cpp: each device's share of the layers (8,10).")
    ] = None,
    override_tensor: Annotated[
        Optional[list[str]],
        typer.Option("--override-tensor", help="llama.cpp: PATTERN=DEVICE (exps=CPU: experts on the host; -ot)."),
    ] = None,
    no_kv_offload: Annotated[
        bool, typer.Option("--no-kv-offload", help="llama.cpp: the KV cache on the host (-nkvo).")
    ] = False,
    fit: Annotated[
        bool, typer.Option("--fit", help="llama.cpp: the largest context, then the most layers, within --memory.")
    ] = False,
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

    As llama.cpp runs it (a GGUF file, a llama.cpp file type such as --weights q4_k_m, a GGML cache type, or any
    of its flags): its KV cache (K and V apart), states, compute and output buffers, on the host and each device
    (--gpu-layers, --tensor-split, --override-tensor, --no-kv-offload); --fit finds the context and layers.

    Time: a roofline on the vendors' peak dense FLOP/s and bandwidth, lower bounds; "this" measures this machine
    (NumPy GEMM and copy).

    \b
    Examples:
      tfm plan examples/hf/Meta-Llama-3-8B -n 8192 --memory 80G
      tfm plan examples/hf/Meta-Llama-3-8B --weights nf4 --lora-rank 16
      tfm plan examples/hf/Meta-Llama-3-8B --memory 24G --plot plan.svg --plot-weights int4
      tfm plan examples/hf/Meta-Llama-3-8B --weights q4_k_m -n 8192 --gpu-layers 20 --kv-dtype q8_0
    """
    from ..analysis.plan import HARDWARE, plan_asked
    from ..api.models import Model
    from ..tasks.llama_cpp import LlamaCppAsked
    from ..tasks.planning import asked, with_llama_cpp, with_runs_here

    def say(note: str) -> None:
        err.print(shown(note), soft_wrap=True, highlight=False)

    with handled(json_out):
        if plot is not None:
            from ..io.outputs import check_output_path
            from .plot import plot_format

            plot_format(plot)
            check_output_path(plot, [spec_path], force)
        spec, source = load(spec_path)
        names = tuple(h.value for h in hardware) if hardware else HARDWARE
        options = asked(
            Model(spec, source, spec_path, None),
            seq_len,
            batch,
            source_len,
            weights.value if weights is not None else None,
            kv_dtype.value if kv_dtype is not None else "bfloat16",
            memory,
            optimizer.value,
            zero,
            devices,
            names,
            lora_rank,
            lora_targets,
            tensor_parallel,
            pipeline_parallel,
            expert_parallel,
            logits.value,
            say,
        )
        result = with_runs_here(spec_path, options, plan_asked(options))
        llama = LlamaCppAsked(
            v_dtype.value if v_dtype is not None else None,
            ubatch,
            parallel,
            kv_unified,
            flash_attn,
            swa_full,
            gpu_layers,
            tensor_split,
            tuple(override_tensor or ()),
            no_kv_offload,
            fit,
        )
        given = weights.value if weights is not None else None
        kv = kv_dtype.value if kv_dtype is not None else None
        result = with_llama_cpp(spec_path, options, result, given, kv, seq_len, memory, llama, say)
    with handled(json_out):
        if plot is not None or chart or (chart is None and not json_out and out.is_terminal):
            curve = _curve(spec_path, spec, result, options, plot_weights)
            if plot is not None:
                _draw(plot, result, *curve)
    if json_out:
        data = result.to_dict()
        print_json({"name": data.pop("name"), "spec": spec_json(spec), **data})
        return
    tables = (
        devices_table(result),
        serving_table(result),
        llama_cpp_table(result),
        fits_table(result),
        training_table(result),
        time_table(result),
    )
    for table in tables:
        if table is not None:
            out.print(table)
    if result.runs_here is not None:
        out.print(runs_here_line(result), soft_wrap=True, highlight=False)
    if chart or (chart is None and out.is_terminal):
        from .plot import chart as bars

        out.print(f"Serving {shown(result.name)} against the context, b = {result.batch}")
        lengths, series, limits = curve
        out.print(bars(lengths, series, limits, columns=out.width))


def _curve(path: Path | None, spec, p: Plan, options: Asked, also: str | None):
    """(contexts, serving memory at each for each weights type, the limits drawn: the budget, each GPU's memory)."""
    from ..analysis.plan import contexts, serving_curve
    from ..tasks.planning import weights_types

    weights = weights_types(path, spec, options.weights, also)
    lengths = contexts(spec, p.seq_len)
    curve = serving_curve(spec, p.batch, lengths, weights, p.kv_dtype, p.source_len, options.split, p.logits)
    limits: list[tuple[str, int]] = []
    if p.fits is not None:
        limits.append(("--memory budget", p.fits[WAYS[0]].memory))
    by_size: dict[int, list[str]] = {}  # GPUs of one size: one line (bytes, as the budget: one scale)
    for name in options.hardware:
        if name in PRESETS:
            by_size.setdefault(PRESETS[name].memory, []).append(PRESETS[name].name)
    limits += [(", ".join(names), size) for size, names in by_size.items()]
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
