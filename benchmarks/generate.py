"""`tfm generate` beside transformers' `generate` on the same weights (issue 26): prompt processing and decoding
apart, in tokens/s, rounds interleaved, per-round ratios with their spread.

    python benchmarks/generate.py [--quick] [--json results.json]

The model: a LLaMA of TinyLlama's kind scaled to this 2-core machine (d = 1024, H = 16, G = 4, r = 2816,
V = 32000, 4 blocks), float32, random weights saved as a Hugging Face folder and read by both. Greedy, batch 1:
a prompt of 256 tokens, then 64 new ones. transformers' prompt time is `generate(max_new_tokens=1)`; its decoding
time is the rest of `generate(max_new_tokens=64)` over the 63 tokens after the first. tfm's prompt time is the
prefill (Decoder.prefill and the first token), its decoding the steps. Both on 2 threads. The tokens of the two
are compared (float32: both run the same products, ties aside).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

SIZES = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
             num_key_value_heads=4, max_position_embeddings=2048)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="2 rounds, 16 new tokens")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds, new, prompt_len = (2, 16, 64) if args.quick else (5, 64, 256)

    import torch
    import transformers
    from threadpoolctl import threadpool_limits

    from transformer_cli import Transformer
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.model.generate import generate
    from transformer_cli.sources import load_weights

    torch.set_num_threads(2)
    folder = Path(tempfile.mkdtemp()) / "llama"
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SIZES)).eval()
    model.save_pretrained(folder)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    spec = spec_from_config(folder)
    ours = Transformer(spec, load_weights(folder, spec), np.float32)
    prompt = np.random.default_rng(0).integers(0, SIZES["vocab_size"], size=(1, prompt_len))
    ids = torch.from_numpy(prompt)

    def theirs(k: int):
        with torch.no_grad():
            return model.generate(ids, max_new_tokens=k, do_sample=False)

    def tfm(k: int):
        with threadpool_limits(2):
            return generate(ours, prompt, k)

    rows = []
    equal = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        tfm(1)
        t1 = time.perf_counter()
        mine = tfm(new)
        t2 = time.perf_counter()
        theirs(1)
        t3 = time.perf_counter()
        reference = theirs(new)
        t4 = time.perf_counter()
        equal = np.array_equal(mine.tokens, reference.numpy())
        tp, td = t1 - t0, (t2 - t1) - (t1 - t0)
        hp, hd = t3 - t2, (t4 - t3) - (t3 - t2)
        rows.append({"tfm_prompt_tps": prompt_len / tp, "tfm_decode_tps": (new - 1) / td,
                     "hf_prompt_tps": prompt_len / hp, "hf_decode_tps": (new - 1) / hd,
                     "prompt_ratio": tp / hp, "decode_ratio": td / hd})  # fmt: skip

    def spread(key: str) -> str:
        values = [r[key] for r in rows]
        return f"{statistics.median(values):.3g} ({min(values):.3g} .. {max(values):.3g})"

    print(f"LLaMA d={SIZES['hidden_size']}, {SIZES['num_hidden_layers']} blocks, V={SIZES['vocab_size']}, float32, "
          f"batch 1, prompt {prompt_len}, {new} new tokens, {rounds} rounds; tokens equal: {equal}")  # fmt: skip
    for what in ("prompt", "decode"):
        print(f"{what:7s} tokens/s  tfm {spread(f'tfm_{what}_tps'):28s} transformers {spread(f'hf_{what}_tps'):28s}"
              f" time ratio tfm/transformers {spread(f'{what}_ratio')}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"sizes": SIZES, "prompt": prompt_len, "new": new, "tokens_equal": equal,
                                         "rounds": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
