"""Every text model type of the installed transformers (issue 44's sweep): a tiny random model of each, read by tfm
from the folder transformers saves, counted and run against transformers in float64.

A type is *text* when transformers maps it to a causal LM, a masked LM or a seq2seq LM. For each: the config class's
defaults with small sizes put over them (the keys a config class does not have are left out), the model built by
transformers, every parameter drawn at random (seeded; norms' gains about 1), saved, and then:

- refused: tfm refuses the folder in one line (its message kept), or transformers itself cannot build or run the
  model, with the sweep's sizes, with a key and value per head (and the class's head size), nor with its class's
  own head size, key/value heads and window (counted apart, as `not built`);
- exact: tfm's parameter count equals transformers' and its output (logits, or an encoder's last hidden state) is
  within 1e-9 of transformers' in float64: the model as transformers runs it, or, where that is further, with its
  float32 internals recomputed in float64 as the tests do (tests/formats/hf_exact.py);
- wrong: anything else (a count or an output that differs, an error that is not a one-line refusal).

Every other registered type (vision, audio, multimodal wrappers) is not run: its config.json with the sweep's sizes
must be refused in one line (refused), else it counts as wrong.

    python benchmarks/sweep_types.py --json benchmarks/sweep_types.json [--only llama,olmo3]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "formats")]

SIZES = dict(
    vocab_size=97,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    max_position_embeddings=64,
    n_embd=32,
    n_layer=2,
    n_head=4,
    n_positions=64,
    n_inner=40,
    d_model=32,
    d_ff=40,
    num_layers=2,
    num_heads=4,
    d_kv=8,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=40,
    decoder_ffn_dim=40,
    moe_intermediate_size=16,
    num_experts=4,
    num_local_experts=4,
    num_experts_per_tok=2,
    sliding_window=5,
    rotary_dim=4,
    vocab_size_per_layer_input=97,  # (Gemma 3n's and 4's per-layer inputs' own table)
    num_kv_shared_layers=0,  # (Gemma 3n's default, 15, needs more than 15 layers)
    pad_token_id=None,
)
LOOSER = ("num_key_value_heads", "head_dim", "sliding_window")  # left to the class when the first try fails
TOL = 1e-9
SECONDS = 120  # a type that takes longer is recorded as such
MAX_PARAMETERS = 20_000_000  # a tiny model is far smaller: one this large kept a size under a name SIZES lacks


class Slow(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Slow()


def text_types() -> dict[str, str]:
    """model_type -> the auto class to build it with (causal LM first, then masked LM, then seq2seq)."""
    from transformers.models.auto import modeling_auto as auto

    out: dict[str, str] = {}
    for mapping, kind in (
        (auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, "AutoModelForCausalLM"),
        (auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, "AutoModelForSeq2SeqLM"),
        (auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES, "AutoModel"),
    ):
        for model_type in mapping:
            out.setdefault(model_type, kind)
    return out


def other_types() -> list[str]:
    """Every other model_type transformers registers (vision, audio, multimodal wrappers...): not run, only read."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    text = text_types()
    return sorted(t for t in CONFIG_MAPPING_NAMES if t not in text)


def read_alone(model_type: str, folder: Path) -> dict:
    """A type with no text model: its config.json (the sweep's sizes) must be refused in one line."""
    import transformer_cli as tfm
    from transformer_cli.errors import TfmError

    (folder / "config.json").write_text(json.dumps({"model_type": model_type} | SIZES))
    try:
        tfm.load(folder).count()
    except TfmError as error:
        one_line = "\n" not in str(error)
        return {"result": "refused" if one_line else "wrong", "why": str(error).split(": ", 1)[-1][:300]}
    return {"result": "wrong", "why": "read as a text model without a check against transformers"}


def tiny_config(model_type: str, attempt: int = 0):
    """The type's config with the sweep's sizes (attempt 0), then a key and value per head and the class's head size
    (1: latent attention's), then with LOOSER left to the class (2)."""
    import transformers

    cls = transformers.AutoConfig.for_model(model_type).__class__
    defaults = cls()
    sizes = SIZES | ({"num_key_value_heads": SIZES["num_attention_heads"]} if attempt == 1 else {})
    left = {1: ("head_dim",), 2: LOOSER}.get(attempt, ())
    keys = {k: v for k, v in sizes.items() if _has(defaults, k) and k not in left}
    pad = getattr(defaults, "pad_token_id", None)
    if isinstance(pad, int) and pad < SIZES["vocab_size"]:  # (RoBERTa's positions start after it: kept)
        keys["pad_token_id"] = pad
    for name, sub in (getattr(cls, "sub_configs", None) or {}).items():  # (T5Gemma's stacks: each its own config)
        if name in ("encoder", "decoder") and sub is not transformers.AutoConfig:
            keys[name] = {k: v for k, v in sizes.items() if _has(sub(), k) and k not in left and v is not None}
    keys["experts_implementation"] = "eager"  # (transformers' grouped experts do not run in float64)
    try:
        return cls(**keys)
    except Exception as error:  # a class whose pad token must be a number (ModernBERT's decoder): the first id
        if "pad_token_id" not in str(error):
            raise
        return cls(**keys | {"pad_token_id": 0})


def _has(config, key: str) -> bool:
    """Whether the config class has the key (one that varies per layer, Gemma 4's head_dim, raises on a read)."""
    try:
        return hasattr(config, key)
    except Exception:  # noqa: BLE001 - transformers' AmbiguousGlobalPerLayerAttributeError: a key it has
        return True


def one(model_type: str, kind: str, folder: Path) -> dict:
    """One type's result: the class tfm's record names where it has one (BertModel, not BertLMHeadModel), else the
    auto class `kind`."""
    import torch
    import transformers
    from helpers_hf_transformers import parameters
    from hf_exact import exact

    import transformer_cli as tfm
    from transformer_cli.errors import TfmError
    from transformer_cli.families import RECORDS

    record = RECORDS.get(model_type)
    build = getattr(transformers, record.hf_class) if record is not None else getattr(transformers, kind).from_config
    failed = None
    for attempt in range(3):  # the sweep's sizes, then as tiny_config retries them where transformers fails
        try:
            config = tiny_config(model_type, attempt)
            torch.manual_seed(0)
            with torch.device("meta"):  # (its size first: a config whose sizes go by other names stays large)
                size = sum(p.numel() for p in build(config).parameters())
            if size > MAX_PARAMETERS:
                return {"result": "not built", "why": f"{size:,} parameters with this sweep's sizes (its keys differ)"}
            model = build(config).double().eval()
            with torch.no_grad():  # every parameter drawn (an initialiser's zeros, as AFMoE's router, tie the routing)
                for name, p in model.named_parameters():
                    if "embed_positions" not in name:  # (Marian's and Pegasus' sinusoids, kept as built)
                        gain = 1.0 if "norm" in name and name.endswith("weight") else 0.0
                        p.copy_(torch.randn_like(p) * 0.3 + gain)
            ids = np.random.default_rng(0).integers(3, min(getattr(config, "vocab_size", None) or 97, 97), size=(1, 9))
            _output(model, ids, bool(getattr(config, "is_encoder_decoder", False)))  # transformers runs it
            model.save_pretrained(folder)
            failed = None
            break
        except Exception as error:  # noqa: BLE001 - transformers could not build, run or save it: not tfm's to judge
            failed = {"result": "not built", "why": f"{type(error).__name__}: {str(error)[:200]}"}
    if failed is not None:
        return failed
    try:
        ours = tfm.load(folder)
        total = ours.count().total
    except TfmError as error:
        return {"result": "refused", "why": str(error).split(": ", 1)[-1][:300]}
    theirs_total = parameters(model)  # (less LongCat-Flash's zero experts' projections, never read)
    if total != theirs_total:
        return {"result": "wrong", "why": f"count {total} != transformers' {theirs_total}"}
    V = ours.spec.V or 97
    ids = np.random.default_rng(0).integers(3, min(V, 97), size=(1, 9))
    seq2seq = ours.spec.N_enc is not None
    try:
        got = ours.run(ids, target=ids if seq2seq else None, dtype="float64").output
    except TfmError as error:
        return {"result": "refused", "why": f"run: {str(error)[:300]}"}
    theirs = _output(model, ids, seq2seq)  # in float64 as it is; then with its float32 steps recomputed in float64
    if got.shape != theirs.shape:
        return {"result": "wrong", "why": f"output {got.shape} != transformers' {theirs.shape}"}
    error = float(np.max(np.abs(got - theirs)) / max(np.max(np.abs(theirs)), 1e-300))
    if error >= TOL:
        theirs = _output(exact(model), ids, seq2seq)
        error = min(error, float(np.max(np.abs(got - theirs)) / max(np.max(np.abs(theirs)), 1e-300)))
    return {"result": "exact" if error < TOL else "wrong", "relative_error": error}


def _output(reference, ids: np.ndarray, seq2seq: bool) -> np.ndarray:
    """transformers' logits (or an encoder's last hidden state) on `ids`, in tfm's layout (b, V, n)."""
    import torch

    with torch.no_grad():
        if seq2seq:
            out = reference(input_ids=torch.from_numpy(ids), decoder_input_ids=torch.from_numpy(ids), use_cache=False)
        else:  # (no cache: a hybrid of two layers, none of them attention, fails to make one)
            out = reference(torch.from_numpy(ids), use_cache=False)
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state).double().numpy().transpose(0, 2, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", default=None, help="Comma-separated model types (default: every text type).")
    args = parser.parse_args()
    import transformers

    types = text_types()
    others = [] if args.only else other_types()
    if args.only:
        types = {t: types[t] for t in args.only.split(",")}
    rows: dict[str, dict] = {}
    signal.signal(signal.SIGALRM, _alarm)
    started = time.perf_counter()
    for model_type, kind in sorted(types.items()):
        with tempfile.TemporaryDirectory() as folder:
            signal.alarm(SECONDS)
            try:
                rows[model_type] = one(model_type, kind, Path(folder))
            except Slow:
                rows[model_type] = {"result": "wrong", "why": f"took over {SECONDS} s"}
            except Exception as error:  # noqa: BLE001 - a crash in tfm is a wrong answer, kept with its trace
                last = traceback.extract_tb(error.__traceback__)[-1]
                rows[model_type] = {
                    "result": "wrong",
                    "why": f"{type(error).__name__}: {error} ({last.filename}:{last.lineno})"[:300],
                }
            finally:
                signal.alarm(0)
        row = rows[model_type]
        why = row.get("why") or (f"relative error {row['relative_error']:.2e}" if "relative_error" in row else "")
        print(f"{model_type:32} {row['result']:10} {why[:90]}", flush=True)
    text_totals: dict[str, int] = {}
    for row in rows.values():
        text_totals[row["result"]] = text_totals.get(row["result"], 0) + 1
    for model_type in others:  # (read only: the rest of transformers' types)
        with tempfile.TemporaryDirectory() as folder:
            rows[model_type] = read_alone(model_type, Path(folder)) | {"text": False}
    totals: dict[str, int] = {}
    for row in rows.values():
        totals[row["result"]] = totals.get(row["result"], 0) + 1
    summary = {
        "transformers": transformers.__version__,
        "type_count": len(rows),
        "text_types": len(types),
        "text_totals": text_totals,
        "totals": totals,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps(summary | {"types": rows}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
