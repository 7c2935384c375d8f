"""`tfm plan`'s llama.cpp part on a model's files: its GGUF tensors' bytes (a GGUF file's own, or the file
llama-quantize or the converter would make of a folder), llama.cpp's flags checked, --fit applied; the figures are
analysis/llama_cpp_plan.py's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..analysis.llama_cpp import CACHE_TYPES, Runtime
from ..analysis.llama_cpp_plan import LlamaCppPlan, fit, plan_llama_cpp
from ..analysis.offload import Offload, parse_overrides
from ..analysis.serving import context_cap
from ..analysis.units import size
from ..errors import OptionError, TfmError
from ..options import count
from ..spec.definition import Spec

NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}  # (tfm's names of GGML's float types)


@dataclass(frozen=True)
class LlamaCppAsked:
    """llama.cpp's flags as `tfm plan` takes them (None: llama.cpp's default)."""

    v_dtype: str | None = None  # -ctv [default: -ctk's]
    ubatch: int = 512  # -ub
    parallel: int = 1  # -np
    kv_unified: bool = False  # -kvu
    flash_attn: bool = True  # -fa
    swa_full: bool = False  # --swa-full
    gpu_layers: int | None = None  # -ngl (-1: all)
    tensor_split: str | None = None  # --tensor-split 8,10
    override_tensor: Sequence[str] = ()  # -ot exps=CPU
    no_kv_offload: bool = False  # -nkvo
    fit: bool = False  # --fit on

    @property
    def given(self) -> bool:
        """Whether any flag asks for llama.cpp's part."""
        return self != LlamaCppAsked()


def llama_cpp_part(
    path: Path | None,
    spec: Spec,
    weights: Any,  # the plan's weights: a type's name or a Held (a llama.cpp mix, a file's own)
    weights_asked: bool,  # --weights given (else a GGUF file's own tensors)
    kv_dtype: str,
    n: int,
    context_given: bool,
    memory: str | None,
    asked: LlamaCppAsked,
    say: Callable[[str], None],
) -> LlamaCppPlan:
    """llama.cpp's memory for the model at `path` (its spec `spec`) with the flags asked: a context of n (the
    plan's; --fit without -n starts from the model's own, as llama.cpp's), K in --kv-dtype, V in --v-dtype;
    --memory: each device's size, for --fit."""
    type_k = NAMES.get(kv_dtype, kv_dtype)
    type_v = NAMES.get(asked.v_dtype or "", asked.v_dtype or type_k)
    for kind, option in ((type_k, "kv-dtype"), (type_v, "v-dtype")):
        if kind not in CACHE_TYPES:
            raise OptionError(f"--{option} {kind}: llama.cpp's caches take {', '.join(CACHE_TYPES)}")
    count(asked.ubatch, "ubatch")
    count(asked.parallel, "parallel")
    n_ctx = n if context_given or not asked.fit else context_cap(spec) or n
    rt = Runtime(
        n_ctx, asked.ubatch, 2048, asked.parallel, asked.kv_unified, type_k, type_v, asked.flash_attn, asked.swa_full
    )
    budgets = [size(part.strip(), "--memory") for part in memory.split(",")] if memory else []
    offload = _offload(asked, budgets)
    arch = gguf_arch(path, spec)
    tensors = gguf_tensor_bytes(path, spec, arch, None if not weights_asked else weights)
    spec = as_llama_cpp_reads(spec, arch, path)
    if asked.fit:
        if not budgets:
            raise OptionError("--fit: needs --memory, each device's size (12G, or 24G,24G for two)")
        rt, offload, said = fit(spec, tensors, rt, offload, budgets, context_given, _placed(asked))
        found = plan_llama_cpp(spec, tensors, rt, offload)
        layers = spec.N + 1 if offload.gpu_layers == -1 else offload.gpu_layers or 0
        flags: dict[str, Any] = {"n_ctx": rt.n_ctx, "gpu_layers": layers, "said": said}
        flags |= {"tensor_split": list(offload.split)} if len(offload.split) > 1 else {}
        flags |= {"override_tensor": [f"{p}={d}" for p, d in offload.overrides]} if offload.overrides else {}
        return LlamaCppPlan(**{**found.__dict__, "fit": flags})
    return plan_llama_cpp(spec, tensors, rt, offload)


def _placed(asked: LlamaCppAsked) -> bool:
    """Whether the user placed the blocks (-ngl, --tensor-split, -ot): llama.cpp's --fit then keeps them."""
    return asked.gpu_layers not in (None, -1) or asked.tensor_split is not None or bool(asked.override_tensor)


def _offload(asked: LlamaCppAsked, budgets: list[int]) -> Offload:
    """The placement flags: devices from --tensor-split, else from --memory's sizes (llama.cpp splits by free
    memory), else one; -ngl (with --fit and devices: all, llama.cpp's auto; with --fit, 0 runs on the host alone)."""
    split: tuple[float, ...] = (1.0,)
    if asked.tensor_split is not None:
        try:
            split = tuple(float(x) for x in asked.tensor_split.split(","))
        except ValueError:
            raise OptionError(f"--tensor-split {asked.tensor_split}: expected shares by commas (8,10)") from None
        if any(x < 0 for x in split) or not sum(split):
            raise OptionError(f"--tensor-split {asked.tensor_split}: expected shares of zero or more, not all zero")
    elif len(budgets) > 1:
        split = tuple(float(b) for b in budgets)
    gpu_layers = asked.gpu_layers
    if gpu_layers is None and (asked.tensor_split is not None or len(budgets) > 1 or asked.fit and budgets):
        gpu_layers = -1  # (devices named: all blocks on them, as llama.cpp's default -ngl)
    if gpu_layers == 0 and asked.fit:  # (--fit on the host alone: its --memory is the host's)
        gpu_layers = None
    if gpu_layers is not None and gpu_layers < -1:
        raise OptionError(f"--gpu-layers {gpu_layers}: expected a count, or -1 for all")
    return Offload(gpu_layers, split, asked.no_kv_offload, parse_overrides(asked.override_tensor))


def gguf_arch(path: Path | None, spec: Spec) -> str:
    """The GGUF architecture llama.cpp runs the model as: a GGUF file's own, a folder's model_type's (that of the
    config tfm's weights file keeps), else llama's."""
    from ..gguf.write import ARCH_OF
    from .sources import model_kind

    model_type, file_arch = model_kind(path)
    if model_type is None:
        return file_arch or "llama"
    if model_type not in ARCH_OF:
        raise TfmError(f"{spec.label}: model_type '{model_type}' has no GGUF architecture, so llama.cpp runs none")
    return ARCH_OF[str(model_type)]


def as_llama_cpp_reads(spec: Spec, arch: str, path: Path | None) -> Spec:
    """The model's windows as llama.cpp runs them: those the GGUF file tfm would write holds (a folder's; Mistral's
    window has no key in llama's, so llama.cpp caches every token), none where llama.cpp disables them (Phi-3)."""
    from ..families import GGUF_OF
    from ..gguf.write import as_written

    record = GGUF_OF.get(arch)
    if record is not None and not record.llama_cpp_slides:
        return replace(spec, window=None, attention_layers=None)
    if path is not None and path.suffix.lower() == ".gguf":
        return spec  # (read from the file, as llama.cpp reads it)
    written = as_written(spec, arch)
    if written is None or (written.window, written.attention_layers) == (spec.window, spec.attention_layers):
        return spec
    return replace(spec, window=written.window, attention_layers=written.attention_layers)


def gguf_tensor_bytes(path: Path | None, spec: Spec, arch: str, weights: Any) -> dict[str, int]:
    """Each GGUF tensor's bytes: a GGUF file's own (weights None), else the file of the asked type llama-quantize
    makes (a mix, q8_0, ...) or the converter writes (float32, float16, bfloat16; None: bfloat16) in `arch`."""
    from ..components.held import Held
    from ..gguf.header import read_header
    from ..gguf.mixes import file_bytes

    if path is not None and path.suffix.lower() == ".gguf" and weights is None:  # (the file's own)
        return {name: t.nbytes for name, t in read_header(path).tensors.items()}
    kind = weights.dtype if isinstance(weights, Held) else NAMES.get(weights or "bfloat16")
    if kind is None:
        raise TfmError(
            f"--weights {weights}: llama.cpp runs GGUF files; plan it in one it holds (float32, float16, bfloat16, "
            "or a llama.cpp file type such as q4_k_m)"
        )
    from ..gguf.write import extra_tensors, file_model

    held = file_model(spec, arch)  # (Falcon-H1's head apart, as the converter writes it)
    added = {name: data.nbytes for name, data in extra_tensors(held, arch).items()}
    return file_bytes(held, arch, str(kind)) | added


__all__ = ["LlamaCppAsked", "as_llama_cpp_reads", "gguf_arch", "gguf_tensor_bytes", "llama_cpp_part"]
