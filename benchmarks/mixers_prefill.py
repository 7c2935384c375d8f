"""A prefill of 2,048 tokens through the mixers that are not attention (issue 45), tfm beside transformers' own
implementation on the CPU (its PyTorch fallback: no mamba_ssm or causal_conv1d kernels installed), same weights.

    python benchmarks/mixers_prefill.py [--quick] [--json benchmarks/mixers_prefill.json]

Models (float32, batch 1, random weights saved by transformers and read by tfm from the folder):
- Mamba-2: 2 blocks of d 768, 24 heads of 64 (I = 1,536), state 128, one group, kernel 4, chunk 256;
- Mamba (Mamba-1): 2 blocks of d 768, 1,536 channels, state 16;
- Qwen3.5 (Gated DeltaNet): 4 blocks of d 1,024 (three linear attention blocks of 8 key heads and 16 value heads
  of 128, one gated attention block of 8 heads), r 2,816;
- LFM2: 4 blocks of d 1,024 (three short convolutions of kernel 3, one attention block of 16 heads), r 2,816;
- DeepSeek-V3.2 (sparse attention): 2 dense blocks of d 1,024, 16 latent heads (kv_rank 256, q_rank 384), an indexer
  of 16 heads of 64 choosing 512 keys a query, r 2,816;
- Zamba2: 4 Mamba-2 blocks of d 768 (24 heads of 64, state 64), two of them after the shared transformer block (16
  heads of 96 over 1,536 rows, rotary, r 2,048, adapters of rank 64);
- GLM-5-Next's text model: 4 dense blocks of d 1,024, 4 streams, two KDA blocks of 8 heads of 128, two latent attention
  blocks as DeepSeek-V3.2's without positions whose indexer keeps 32 pools of 16 keys (512 keys) a query;
- HY-V4: DeepSeek-V3.2's sizes with 4 streams, sinks and gates, half-split rotary; its eager attention (the only one
  transformers runs for it).
- DeepSeek-V4: 4 blocks of d 1,024 and 4 streams, 16 heads of 128 over one key head (a window of 128; a sliding,
  a CSA (an entry every 4 tokens, its indexer of 16 heads of 64 keeping 512), an HCA (every 128 tokens), a CSA
  block), 4 experts of 704 (2 a token, the first block's by id) and the shared one; its eager attention.

Rounds are interleaved (tfm, transformers, tfm, ...); the ratio is taken per round (tfm's time over transformers')
and reported as its median with the lowest and highest. Both run on 2 threads. The logits agree to 1e-4 relative,
but DeepSeek-V3.2's: in float32 both round its index scores, and where two keys score within that rounding at the
cut of 512 the two implementations keep different ones (3.3e-2 here; in float64 they agree to 1e-15,
tests/formats/test_hf_indexed.py).

Zamba2's, GLM-5-Next's and HY-V4's rows were measured later (--only), on a machine running a test suite beside
them: their ratios' spread is wide. HY-V4's outputs differ where DeepSeek-V3.2's do, and more (1.3e-1): transformers
rounds its residual to float32 after every sublayer and its index scores in float32, so keys within that rounding
at the cut differ. GLM-5-Next's row is from after KDA's decays were made a block of 16 columns at a time (products of
matrices between blocks, `components/kda.py: decayed`), on a quiet machine: before, on the loaded one, its ratio was
1.74 and its two KDA blocks' chunked form 8.4 s of tfm's 13.4 (a chunk's (64, 64, D) decays whole); now 1.1 s of
3.2 (cProfile). HY-V4's: the attention kernel 2.9 s of 4.7 (every score made, then masked by the
selection: a fused sparse kernel is what NumPy cannot do), the indexer's choice 0.7 s, the streams 0.3 s.

DeepSeek-V4's row (--only, a quiet machine): its compressed blocks' queries each read their window's band of keys
and then the entries (kernels.attend's `tail`); with every key scored and masked, its ratio was 0.98 and attention
2.2 s of tfm's 4.1 (cProfile), now 0.5 s of 2.3; the experts' loop takes 1.0 s. Its logits differ by 1.6e-5
(float32 beside transformers' own float32; in float64 they agree to 6e-16, tests/formats/test_hf_deepseek_v4.py).

The profile shows where tfm's Mamba-2 prefill goes: the state space scan (chunked: a few products per chunk of 64
columns) beside the same scan done column by column (what a decoder does, 2,048 steps), so that the chunked form's
gain is seen; and the projections (matrix products, BLAS) beside the rest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from transformer_cli import Transformer  # noqa: E402
from transformer_cli.components.mamba2 import Mamba2  # noqa: E402
from transformer_cli.hf.config import spec_from_config  # noqa: E402
from transformer_cli.tasks.sources import load_weights  # noqa: E402

N_TOKENS = 2048
MODELS = {
    "mamba2": (
        "Mamba2Config",
        "Mamba2ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=768, num_hidden_layers=2, num_heads=24, head_dim=64, expand=2,
            state_size=128, n_groups=1, conv_kernel=4, chunk_size=256, residual_in_fp32=False,
        ),
    ),
    "mamba": (
        "MambaConfig",
        "MambaForCausalLM",
        dict(vocab_size=1000, hidden_size=768, num_hidden_layers=2, state_size=16, expand=2, residual_in_fp32=False),
    ),
    "qwen3_5_text": (
        "Qwen3_5TextConfig",
        "Qwen3_5ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=8,
            num_key_value_heads=2, head_dim=128, linear_num_key_heads=8, linear_num_value_heads=16,
            linear_key_head_dim=128, linear_value_head_dim=128,
        ),
    ),
    "lfm2": (
        "Lfm2Config",
        "Lfm2ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=1024, num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=8,
            intermediate_size=4224, layer_types=["conv", "conv", "full_attention", "conv"],
        ),
    ),
    "deepseek_v32": (
        "DeepseekV32Config",
        "DeepseekV32ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=2, num_attention_heads=16,
            num_key_value_heads=16, q_lora_rank=384, kv_lora_rank=256, qk_nope_head_dim=64, qk_rope_head_dim=32,
            v_head_dim=64, index_n_heads=16, index_head_dim=64, index_topk=512, first_k_dense_replace=2,
            n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=256, n_group=1, topk_group=1,
        ),
    ),
    "zamba2": (
        "Zamba2Config",
        "Zamba2ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=768, num_hidden_layers=4, num_attention_heads=16, intermediate_size=2048,
            n_mamba_heads=24, mamba_d_state=64, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"],
            num_mem_blocks=1, adapter_rank=64, use_mem_rope=True,
        ),
    ),
    "glm5_next_text": (
        "Glm5NextTextConfig",
        "Glm5NextTextModel",
        dict(
            vocab_size=1000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
            num_key_value_heads=16, q_lora_rank=384, kv_lora_rank=256, qk_nope_head_dim=64, v_head_dim=64,
            index_n_heads=16, index_head_dim=64, index_topk=512, index_kpool=16, linear_num_heads=8,
            linear_head_dim=128, hc_mult=4, mlp_layer_types=["dense"] * 4, pad_token_id=0,
            layer_types=["linear_attention", "indexed_attention", "linear_attention", "indexed_attention"],
        ),
    ),
    "hy_v4": (
        "HYV4Config",
        "HYV4ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=2, num_attention_heads=16,
            q_lora_rank=384, kv_lora_rank=256, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64,
            index_n_heads=16, index_head_dim=64, index_topk=512, hc_mult=4, mlp_layer_types=["dense"] * 2,
            indexer_types=["full", "full"], pad_token_id=0, bos_token_id=1, eos_token_id=2,
            attn_implementation="eager",
        ),
    ),
    "deepseek_v4": (
        "DeepseekV4Config",
        "DeepseekV4ForCausalLM",
        dict(
            vocab_size=1000, hidden_size=1024, moe_intermediate_size=704, num_hidden_layers=4, num_attention_heads=16,
            head_dim=128, q_lora_rank=384, partial_rotary_factor=0.25, o_groups=4, o_lora_rank=256,
            n_routed_experts=4, num_experts_per_tok=2, index_n_heads=16, index_head_dim=64, index_topk=512,
            hc_mult=4, layer_types=["sliding_attention", "compressed_sparse_attention",
                                    "heavily_compressed_attention", "compressed_sparse_attention"],
            mlp_layer_types=["hash_moe", "moe", "moe", "moe"], attn_implementation="eager",
        ),
    ),
}  # fmt: skip


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def compare(name: str, rounds: int) -> dict:
    import torch
    import transformers

    config_class, model_class, keys = MODELS[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys)).eval()
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        spec = spec_from_config(folder)
        ours = Transformer(spec, load_weights(folder, spec), np.float32)
    ids = np.random.default_rng(0).integers(0, keys["vocab_size"], size=(1, N_TOKENS))
    tokens = torch.from_numpy(ids)

    def theirs():
        with torch.no_grad():
            out = model(tokens, use_cache=False)  # (GLM-5-Next's text model: its hidden states)
        return (out.logits if hasattr(out, "logits") else out.last_hidden_state).numpy().transpose(0, 2, 1)

    agreement = float(np.abs(ours(ids) - theirs()).max() / np.abs(theirs()).max())
    ratios, tfm_times, peer_times = [], [], []
    for _ in range(rounds):
        a = timed(lambda: ours(ids))
        time.sleep(0.2)
        b = timed(theirs)
        time.sleep(0.2)
        tfm_times.append(a)
        peer_times.append(b)
        ratios.append(a / b)
    return {
        "model": name,
        "tokens": N_TOKENS,
        "tfm_s": statistics.median(tfm_times),
        "transformers_s": statistics.median(peer_times),
        "ratio_median": statistics.median(ratios),
        "ratio_low": min(ratios),
        "ratio_high": max(ratios),
        "max_relative_difference": agreement,
    }


def profile() -> dict:
    """Mamba-2's scan alone at 2,048 columns, chunked and column by column (float32, the benchmark's sizes)."""
    import transformer_cli.spec.validate  # noqa: F401 (the registries)
    from transformer_cli import Spec

    spec = Spec(
        N=1, H=24, m=64, d=768, r=1536, attention="mamba2", feedforward="none", ssm_heads=24, ssm_head_dim=64,
        ssm_state=128, ssm_groups=1, conv_kernel=4, mask="causal", norm="pre", norm_type="rmsnorm",
    )  # fmt: skip
    mixer = Mamba2(spec)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 64, 1, N_TOKENS)).astype(np.float32)
    B, C = (rng.normal(size=(1, 128, 1, N_TOKENS)).astype(np.float32) for _ in range(2))
    dt = rng.uniform(0.001, 0.1, size=(24, 1, N_TOKENS)).astype(np.float32)
    A = -np.exp(rng.normal(size=24)).astype(np.float32)
    chunked = timed(lambda: mixer.scan(x, B, C, dt, A))
    S = np.zeros((1, 24, 64, 128), np.float32)
    stepped = timed(
        lambda: [mixer._step(S, x[..., t], B[..., t], C[..., t], dt[..., t], A, True) for t in range(N_TOKENS)]
    )
    W = rng.normal(size=(2 * 1536 + 2 * 128 + 24, 768)).astype(np.float32)
    X = rng.normal(size=(768, N_TOKENS)).astype(np.float32)
    projection = timed(lambda: W @ X)
    return {"scan_chunked_s": chunked, "scan_column_by_column_s": stepped, "in_projection_s": projection}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round each")
    parser.add_argument("--json", type=Path, help="write the figures here (rows of the models not run kept)")
    parser.add_argument("--only", nargs="*", default=None, help="these models alone, no profile")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    rounds = 1 if args.quick else 5
    found: dict = {"rows": [compare(name, rounds) for name in args.only or MODELS]}
    if args.only is None:
        found["profile"] = profile()
    elif args.json and args.json.exists():  # (the other models' rows and the profile as recorded)
        kept = json.loads(args.json.read_text())
        found["rows"] = [r for r in kept["rows"] if r["model"] not in args.only] + found["rows"]
        found["profile"] = kept["profile"]
    for row in found["rows"][-len(args.only or MODELS) :]:
        print(
            f"{row['model']:8} {row['tokens']} tokens: tfm {row['tfm_s']:.3f} s, transformers "
            f"{row['transformers_s']:.3f} s, ratio {row['ratio_median']:.2f} ({row['ratio_low']:.2f}-"
            f"{row['ratio_high']:.2f}); logits within {row['max_relative_difference']:.1e}"
        )
    p = found.get("profile") or {}
    if p and args.only is None:
        print(
            f"mamba2 scan at {N_TOKENS} columns: chunked {p['scan_chunked_s']:.3f} s, column by column "
            f"{p['scan_column_by_column_s']:.3f} s; one in-projection {p['in_projection_s']:.3f} s"
        )
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
