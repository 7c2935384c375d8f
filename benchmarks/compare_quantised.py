"""`tfm compare` beside `llama-perplexity --kl-divergence` (issue 43): a small LLaMA trained here, against its own
GGUF files (q8_0, q4_0 and q4_k_m written by `tfm convert`), scored by both tools over the same held-out text.

The model: a 4-block LLaMA (d = 256, 3.9M parameters) with a byte-level BPE tokenizer of 1,024 tokens, trained for a
few minutes with PyTorch on Python's standard library (the .py files under /usr/lib/python3.11 but those starting
with 't'), so its distributions are a trained model's and not a seeded one's near-uniform ones; the text scored is
the held-out files starting with 't'. Then:

1. `tfm convert` writes the folder as F32 (the base for llama.cpp), Q8_0, Q4_0 and Q4_K_M GGUF files; where
   llama-quantize is given, it writes Q4_K_M from the F32 file too, and tfm's file must hold its bytes.
2. `tfm compare FOLDER FILE --text held-out.txt --ctx 256 --json` for each file.
3. `llama-perplexity -m f32.gguf -f held-out.txt -c 256 --kl-divergence-base base.kld`, then `--kl-divergence`
   with each file (the F32 one too: llama.cpp's floor); its "KL divergence statistics" and "Same top p" parsed from
   its log. `-nr` (no repacked weights): this machine's processor claims AMX, and llama.cpp's AMX path for q8_0
   and q4_0 weights stops with an illegal instruction here.

Both tools run the same tokens (the GGUF file carries the tokenizer, without a BOS token, so llama-perplexity's
chunks are tfm's: checked by the count of positions scored) and the same chunking (each chunk's second half).
They measure different things, and the figures say how much: tfm runs each file's weights dequantised, with float32
activations, so it measures the weights' quantisation alone; llama.cpp runs the file as it serves it, its matrix
products quantising the activations too (to Q8_0 or Q8_K beside quantised weights), and stores the base's
log-probabilities in 16 bits (the F32 row: its floor, negative KLDs included); tfm keeps float64 probabilities
from float32 logits (its F32 row: 0). Run:

    python benchmarks/compare_quantised.py --work /tmp/tfm-compare \
        --llama-bin /path/to/llama.cpp/build/bin   # llama-perplexity and llama-quantize (optional)

llama.cpp's tools build here from the llama-cpp-python sdist, which vendors llama.cpp's source:
    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 && tar xzf llama_cpp_python-0.3.36.tar.gz
    cd llama_cpp_python-0.3.36/vendor/llama.cpp && cmake -B build -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
    cmake --build build -j2 --target llama-perplexity llama-quantize
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
CORPUS = Path("/usr/lib/python3.11")
CTX = 256
PUBLISHED = {"q8_0": 0.001355, "q4_k_m": 0.031273, "q4_0": 0.071940}  # llama.cpp's LLaMA-3-8B mean KLD
CONFIG = dict(
    model_type="llama",
    vocab_size=1024,
    hidden_size=256,
    intermediate_size=768,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=512,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=False,
    bos_token_id=None,
    eos_token_id=None,
)


def corpus(held_out: bool) -> str:
    files = sorted(p for p in CORPUS.glob("*.py") if p.name.startswith("t") == held_out)
    return "\n".join(p.read_text(errors="replace") for p in files)


def train(folder: Path, steps: int, seed: int = 0) -> dict:
    """The tokenizer and the model, trained here (PyTorch, 2 threads); returns the training's figures."""
    import tokenizers
    import torch
    import transformers

    torch.manual_seed(seed)
    torch.set_num_threads(os.cpu_count() or 2)
    text = corpus(held_out=False)
    tok = tokenizers.ByteLevelBPETokenizer()
    tok.train_from_iterator([text], vocab_size=CONFIG["vocab_size"], min_frequency=2, show_progress=False)
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": False, "add_eos_token": False}))
    ids = np.asarray(tok.encode(text).ids, dtype=np.int64)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.95))
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=3e-3, total_steps=steps, pct_start=0.05)
    rng, batch, started, losses = np.random.default_rng(seed), 16, time.perf_counter(), []
    for step in range(steps):
        starts = rng.integers(0, ids.size - CTX - 1, size=batch)
        x = torch.from_numpy(np.stack([ids[s : s + CTX] for s in starts]))
        loss = model(x, labels=x).loss
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == steps - 1:
            print(f"  step {step}: loss {np.mean(losses[-50:]):.3f}", file=sys.stderr, flush=True)
    model.save_pretrained(folder)
    return {
        "steps": steps,
        "tokens_trained": steps * batch * CTX,
        "corpus_tokens": int(ids.size),
        "final_loss": float(np.mean(losses[-50:])),
        "seconds": time.perf_counter() - started,
    }


def tfm(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transformer_cli", *map(str, args)], capture_output=True, text=True)


def run(*args: object, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(map(str, args)), env=env, capture_output=True, text=True, check=check)


def llama_stats(log: str) -> dict:
    """llama-perplexity's KL divergence statistics, as it prints them."""
    figures: dict = {}
    for key, pattern in {
        "ppl_a": r"PPL\(base\)\s*:\s*([\d.]+)",
        "ppl_b": r"Mean\s+PPL\(Q\)\s*:\s*([\d.]+)",
        "kld_mean": r"Mean\s+KLD:\s*([-\d.]+)",
        "kld_max": r"Maximum KLD:\s*([-\d.]+)",
        "kld_p99": r"99\.0%\s+KLD:\s*([-\d.]+)",
        "kld_median": r"Median\s+KLD:\s*([-\d.]+)",
        "same_top_p": r"Same top p:\s*([\d.]+)",
        "rms_dp": r"RMS Δp\s*:\s*([\d.]+)",
    }.items():
        found = re.search(pattern, log)
        figures[key] = float(found.group(1)) if found else None
    chunks = re.search(r"calculating KL divergence over (\d+) chunks|(\d+) chunks", log)
    figures["chunks"] = int(next(g for g in chunks.groups() if g)) if chunks else None
    if figures["same_top_p"] is not None:
        figures["same_top_p"] /= 100
    if figures["rms_dp"] is not None:
        figures["rms_dp"] /= 100
    return figures


def llama_kld(llama: Path, env: dict, model: Path, base: Path) -> tuple[dict, str]:
    """llama-perplexity --kl-divergence of `model` against the base's logits: its statistics, and its log. Tried up
    to three times: here it sometimes dies at exit with its output cut short."""
    for attempt in range(1, 4):  # noqa: B007 - (the count is reported after the loop)
        started = time.perf_counter()
        args = ("-c", CTX, "-b", CTX, "-t", 2, "-nr", "--kl-divergence-base", base, "--kl-divergence")
        done = run(llama / "llama-perplexity", "-m", model, *args, env=env, check=False)
        stats = llama_stats(done.stdout + done.stderr)
        if done.returncode == 0 and stats["same_top_p"] is not None:
            break
    seconds = round(time.perf_counter() - started, 2)
    return stats | {"seconds": seconds, "attempts": attempt}, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/tfm-compare"))
    parser.add_argument("--llama-bin", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=HERE / "compare_quantised.json")
    args = parser.parse_args()
    work, folder = args.work, args.work / "model"
    results: dict = {"ctx": CTX, "published_llama3_8b_kld": PUBLISHED}
    if not (folder / "model.safetensors").exists():
        print("training the model (PyTorch) ...", file=sys.stderr)
        results["training"] = train(folder, args.steps)
        (work / "training.json").write_text(json.dumps(results["training"], indent=1))
    else:
        results["training"] = json.loads((work / "training.json").read_text())
    text = work / "held-out.txt"
    text.write_text(corpus(held_out=True)[:400_000])
    files = {kind: work / f"model-{kind}.gguf" for kind in ("f32", "q8_0", "q4_0", "q4_k_m")}
    for kind, path in files.items():
        started = time.perf_counter()
        done = tfm("convert", folder, "-o", path, "--type", kind, "--force")
        assert done.returncode == 0, done.stderr
        results.setdefault("convert_seconds", {})[kind] = round(time.perf_counter() - started, 2)
    llama = args.llama_bin
    env = os.environ | ({"LD_LIBRARY_PATH": str(llama)} if llama else {})
    if llama is not None:
        import gguf

        theirs = work / "model-q4_k_m-llama.gguf"
        started = time.perf_counter()
        run(llama / "llama-quantize", files["f32"], theirs, "Q4_K_M", env=env)
        results["llama_quantize_seconds"] = round(time.perf_counter() - started, 2)
        ours = {t.name: t for t in gguf.GGUFReader(files["q4_k_m"]).tensors}
        same = [
            t.tensor_type == ours[t.name].tensor_type
            and np.array_equal(np.asarray(t.data), np.asarray(ours[t.name].data))
            for t in gguf.GGUFReader(theirs).tensors
        ]
        results["q4_k_m_same_as_llama_quantize"] = f"{sum(same)} of {len(same)} tensors"
        base, started = work / "base.kld", time.perf_counter()
        log = run(llama / "llama-perplexity", "-m", files["f32"], "-f", text, "-c", CTX, "-b", CTX, "-t", 2, "-nr",
                  "--kl-divergence-base", base, env=env)  # fmt: skip
        (work / "llama-perplexity-base.log").write_text(log.stdout + log.stderr)
        results["llama_perplexity_base_seconds"] = round(time.perf_counter() - started, 2)
    rows = {}
    for kind in ("f32", "q8_0", "q4_k_m", "q4_0"):  # (f32: each tool's floor, the base against itself)
        started = time.perf_counter()
        done = tfm("compare", folder, files[kind], "--text", text, "--ctx", CTX, "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        row = {
            "tfm": {
                "kld_mean": data["kld"]["mean"],
                "kld_mean_err": data["kld"]["mean_err"],
                "kld_max": data["kld"]["max"],
                "kld_p99": data["kld"]["p99"],
                "kld_median": data["kld"]["median"],
                "same_top_p": data["same_top_p"],
                "rms_dp": data["delta_p"]["rms"],
                "ppl_a": data["ppl"]["a"],
                "ppl_b": data["ppl"]["b"],
                "positions": data["positions"],
                "chunks": data["chunks"],
                "first_divergent_block": data["first_divergent_block"],
                "seconds": round(time.perf_counter() - started, 2),
            }
        }
        if llama is not None:
            row["llama_perplexity"], log = llama_kld(llama, env, files[kind], work / "base.kld")
            (work / f"llama-perplexity-{kind}.log").write_text(log)
        rows[kind] = row
    results["files"] = rows
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"{'file':8} {'tfm mean KLD':>22} {'llama.cpp mean KLD':>20} {'ratio':>7} {'same top p (tfm/llama)':>24}")
    for kind, row in rows.items():
        ours, theirs = row["tfm"], row.get("llama_perplexity", {})
        their_kld, their_top = (math.nan if theirs.get(k) is None else theirs[k] for k in ("kld_mean", "same_top_p"))
        ratio = ours["kld_mean"] / their_kld if their_kld else math.nan
        print(
            f"{kind:8} {ours['kld_mean']:.6f} ± {ours['kld_mean_err']:.6f} {their_kld:>20.6f}"
            f" {ratio:7.3f} {ours['same_top_p']:.4f} / {their_top:.4f}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
