"""accelerate's parameter count for benchmarks/peer_counts.py: what `accelerate estimate-memory` builds."""

from __future__ import annotations

from peer_counts import quiet


def accelerate_count(entry: dict) -> dict:
    """accelerate's estimate-memory without the Hub.

    create_empty_model (accelerate/commands/estimate.py) does, once it has the config:
        with init_empty_weights(): model = AutoModel.from_config(config, torch_dtype=torch.float32)
    and gather_data then calls calculate_maximum_sizes(model) (accelerate/utils/modeling.py), whose total is
    compute_module_sizes(model)[""]: numel * element size over named_parameters() and named_buffers(). The
    same calls are made here on AutoConfig.for_model(model_type, **fields). AutoModel is the bare model class
    (LlamaModel, not LlamaForCausalLM): no output head. The figure is total bytes / 4 (float32).

    init_empty_weights() (include_buffers False) moves each parameter to meta only once it is registered, so
    a parameter is first allocated for real: where one does not fit in this machine's memory (DeepSeek-V3's
    fused experts, 30 GB a layer in float32) the build fails, and the figure is null with that error.
    """
    import torch
    from accelerate import init_empty_weights
    from accelerate.utils import calculate_maximum_sizes, convert_bytes
    from transformers import AutoConfig, AutoModel

    with quiet():
        config = AutoConfig.for_model(entry["model_type"], **entry["config"])
        try:
            with init_empty_weights():
                model = AutoModel.from_config(config, torch_dtype=torch.float32)
        except RuntimeError as e:
            with torch.device("meta"):
                plain = AutoModel.from_config(config, torch_dtype=torch.float32)
            return {
                "value": None,
                "class": type(plain).__name__,
                "parameters_numel_plain_meta": sum(p.numel() for p in plain.parameters()),
                "note": f"AutoModel.from_config under init_empty_weights() fails: {str(e).splitlines()[0]}",
            }
    total_size, _largest = calculate_maximum_sizes(model)
    params = sum(p.numel() for p in model.parameters())
    buffers = {n: b.numel() * b.element_size() for n, b in model.named_buffers()}
    out = {
        "value": int(total_size) // 4,
        "printed": convert_bytes(total_size),
        "class": type(model).__name__,
        "parameters_numel": params,
        "buffer_bytes": sum(buffers.values()),
        "note": "",
    }
    assert total_size % 4 == 0
    notes = []
    if buffers:
        kinds = ", ".join(sorted({n.split(".")[-1] for n in buffers}))
        notes.append(f"buffers counted: {sum(buffers.values())} bytes ({kinds})")
    # The same class built on torch.device("meta") without accelerate's context: does init_empty_weights change it?
    with quiet():
        with torch.device("meta"):
            plain = AutoModel.from_config(config, torch_dtype=torch.float32)
    out["parameters_numel_plain_meta"] = sum(p.numel() for p in plain.parameters())
    if out["parameters_numel_plain_meta"] != params:
        notes.append(
            f"init_empty_weights re-wraps every registered parameter (big_modeling.py, "
            f"register_empty_parameter), "
            f"so weights tied by assignment become distinct: {params:,} parameters under it, "
            f"{out['parameters_numel_plain_meta']:,} for the same class on torch.device('meta')"
        )
    out["note"] = "; ".join(notes)
    del model, plain
    return out
