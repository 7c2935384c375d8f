"""`tfm generate` beside transformers' `generate` on the same weights (issue 26): prompt processing and decoding
apart, in tokens/s, rounds interleaved, per-round ratios with their spread.

    python benchmarks/generate.py [--quick] [--json results.json] [--llama-python /tmp/lcpp/bin/python]

The model: a LLaMA of TinyLlama's kind scaled to this 2-core machine (d = 1024, H = 16, G = 4, r = 2816,
V = 32000, 4 blocks), float32, random weights saved as a Hugging Face folder and read by both. Greedy, batch 1:
a prompt of 256 tokens, then 64 new ones. transformers' prompt time is `generate(max_new_tokens=1)`; its decoding
time is the rest of `generate(max_new_tokens=64)` over the 63 tokens after the first. tfm's prompt time is the
prefill (Decoder.prefill and the first token), its decoding the steps. Both on 2 threads. The tokens of the two
are compared (float32: both run the same products, ties aside).

With --llama-python (the Python of a venv where llama-cpp-python 0.3.36 is built, as benchmarks/gguf_llama_cpp.py
says), llama.cpp runs too, in its own process held open over the rounds (so that its round falls between the
others'): the same weights as the GGUF F32 file `tfm convert` writes (no tokenizer: no_vocab, ids in), 2 threads,
an F32 KV cache, greedy by the argmax of its last logits (llama_get_logits: without logits_all the Python
wrapper keeps none); its prompt time is eval(prompt) and the first token, its
decoding the evals of the tokens after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

SIZES = dict(
    vocab_size=32000,
    hidden_size=1024,
    intermediate_size=2816,
    num_hidden_layers=4,
    num_attention_heads=16,
    num_key_value_heads=4,
    max_position_embeddings=2048,
)


LLAMA_CPP = """
import json, sys, time, numpy as np
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=int(sys.argv[2]), verbose=False, n_threads=2, n_threads_batch=2,
            n_batch=512, type_k=0, type_v=0)
prompt, new = [int(x) for x in sys.argv[3].split(",")], int(sys.argv[4])
last = lambda: int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))))  # (the last's)
for line in sys.stdin:  # one round per line
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    tokens = [last()]
    t1 = time.perf_counter()
    for _ in range(new - 1):
        llm.eval(tokens[-1:])
        tokens.append(last())
    t2 = time.perf_counter()
    print(json.dumps({"prompt_s": t1 - t0, "decode_s": t2 - t1, "tokens": tokens}), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="2 rounds, 16 new tokens")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--llama-python", help="a Python with llama-cpp-python, to run llama.cpp beside")
    args = parser.parse_args()
    rounds, new, prompt_len = (2, 16, 64) if args.quick else (5, 64, 256)

    import torch
    import transformers
    from threadpoolctl import threadpool_limits

    from transformer_cli import Transformer
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.model.generate import generate
    from transformer_cli.tasks.sources import load_weights

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

    llama = None
    if args.llama_python:
        from transformer_cli.tasks.conversions import to_gguf

        to_gguf(folder, folder / "m.gguf", "f32")
        llama = subprocess.Popen(
            [
                args.llama_python,
                "-c",
                LLAMA_CPP,
                str(folder / "m.gguf"),
                str(prompt_len + new),
                ",".join(map(str, prompt[0])),
                str(new),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    rows = []
    equal = llama_equal = llama_prefix = None
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
        equal = np.array_equal(mine.sequences, reference.numpy())
        tp, td = t1 - t0, (t2 - t1) - (t1 - t0)
        hp, hd = t3 - t2, (t4 - t3) - (t3 - t2)
        rows.append(
            {
                "tfm_prompt_tps": prompt_len / tp,
                "tfm_decode_tps": (new - 1) / td,
                "hf_prompt_tps": prompt_len / hp,
                "hf_decode_tps": (new - 1) / hd,
                "prompt_ratio": tp / hp,
                "decode_ratio": td / hd,
            }
        )
        if llama is not None:
            assert llama.stdin is not None and llama.stdout is not None
            time.sleep(0.2)
            llama.stdin.write("go\n")
            llama.stdin.flush()
            got = json.loads(llama.stdout.readline())
            llama_equal = got["tokens"] == mine.new_tokens[0].tolist()
            same = [a == b for a, b in zip(got["tokens"], mine.new_tokens[0].tolist(), strict=True)]
            llama_prefix = same.index(False) if False in same else len(same)  # the tokens equal before the first not
            lp, ld = got["prompt_s"], got["decode_s"]
            rows[-1] |= {
                "llama_prompt_tps": prompt_len / lp,
                "llama_decode_tps": (new - 1) / ld,
                "llama_prompt_ratio": tp / lp,
                "llama_decode_ratio": td / ld,
            }

    def spread(key: str) -> str:
        values = [r[key] for r in rows]
        return f"{statistics.median(values):.3g} ({min(values):.3g} .. {max(values):.3g})"

    print(
        f"LLaMA d={SIZES['hidden_size']}, {SIZES['num_hidden_layers']} blocks, V={SIZES['vocab_size']}, float32, "
        f"batch 1, prompt {prompt_len}, {new} new tokens, {rounds} rounds; tokens equal: {equal}"
    )
    for what in ("prompt", "decode"):
        print(
            f"{what:7s} tokens/s  tfm {spread(f'tfm_{what}_tps'):28s} transformers {spread(f'hf_{what}_tps'):28s}"
            f" time ratio tfm/transformers {spread(f'{what}_ratio')}"
        )
        if llama is not None:
            print(
                f"{'':7s} llama.cpp {spread(f'llama_{what}_tps'):28s} time ratio tfm/llama.cpp "
                f"{spread(f'llama_{what}_ratio')}"
            )
    if llama is not None:
        print(f"llama.cpp's greedy tokens equal tfm's: {llama_equal} (the first {llama_prefix} of {new} equal)")
        llama.stdin.close()  # type: ignore[union-attr]
        llama.wait()
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "sizes": SIZES,
                    "prompt": prompt_len,
                    "new": new,
                    "tokens_equal": equal,
                    "llama_cpp_tokens_equal": llama_equal,
                    "llama_cpp_equal_prefix": llama_prefix,
                    "rounds": rows,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
