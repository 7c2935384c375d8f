"""The checks of Gemma 3n's keys (spec/altup_keys.py): AltUp's streams around a sandwich block in one stack, the
active stream among them, Laurel and the per-layer feedforwards' sizes and sparsity."""

from __future__ import annotations

from typing import Any


def check_altup(spec: Any, data: dict[str, Any], source: str, fail) -> None:
    """Raise `fail(source, key, value, expected)` where a Gemma 3n key or a hyper-connections' one does not fit the rest
    of the spec."""
    if spec.altup is None:
        for key in ("altup_active", "altup_correct_scale", "laurel_rank"):
            if key in data:
                raise fail(source, key, data[key], f"no {key} without altup (its streams)")
    else:
        if spec.altup_active >= spec.altup:
            raise fail(source, "altup_active", spec.altup_active, f"a stream below altup = {spec.altup}")
        if spec.norm != "sandwich" or spec.parallel or spec.N_enc is not None or spec.block_groups is not None:
            raise fail(source, "altup", spec.altup, "norm: sandwich in one stack of blocks of their own (Gemma 3n's)")
    if spec.hc_streams is None:
        for key in ("hc_form", "hc_post_scale", "hc_head", "hc_rank", "hc_sinkhorn", "hc_eps"):
            if key in data:
                raise fail(source, key, data[key], f"no {key} without hc_streams (its streams)")
    elif spec.hc_streams < 2 or spec.altup or spec.parallel or spec.N_enc is not None:
        raise fail(source, "hc_streams", spec.hc_streams, "at least 2 streams, in one stack of blocks, no altup")
    elif (spec.hc_form == "gated") != (spec.norm == "none") or (spec.hc_form != "gated" and spec.norm != "pre"):
        expected = "none with hc_form gated (its streams' own norms)" if spec.hc_form == "gated" else "pre"
        raise fail(source, "norm", spec.norm, expected)
    elif (spec.hc_form == "gated") != (spec.hc_rank is not None):
        raise fail(source, "hc_rank", spec.hc_rank, "a rank with hc_form gated, none otherwise")
    elif spec.hc_form != "mixed" and "hc_sinkhorn" in data:
        raise fail(source, "hc_sinkhorn", data["hc_sinkhorn"], f"no hc_sinkhorn with hc_form {spec.hc_form} (no mix)")
    for key in ("r_layers", "sparsity_layers"):
        if key in data and len(data[key]) > spec.N:
            raise fail(source, key, data[key], f"at most N = {spec.N} entries (one per block)")
        if key in data and (spec.E or spec.block_groups is not None):
            raise fail(source, key, data[key], f"no {key} with experts (E) or block_groups")
    if "sparsity_layers" in data and spec.feedforward != "gated":
        raise fail(source, "sparsity_layers", data["sparsity_layers"], "feedforward: gated (its gate is made sparse)")


__all__ = ["check_altup"]
