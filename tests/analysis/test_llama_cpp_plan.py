"""llama.cpp's memory (analysis/llama_cpp.py) against llama.cpp's own logs: tests/data/llama_cpp_buffers.json,
recorded by scripts/record_llamacpp_buffers.py (the command in the file) from llama.cpp's CPU backend, for seven
small random models (dense, many heads, sliding window, MoE, latent attention, a hybrid of convolutions and
attention, Mamba-2) and seven full-size ones from published configs (their GGUF files sparse: headers only), at
two contexts and two ubatch sizes, with and without flash attention, K and V in each GGML type, several sequences.
The log prints MiB to two decimals: tfm's figures are compared at that precision."""

import pytest
from llama_cpp_records import DATA, spec_of, tensors_of

from transformer_cli.analysis import llama_cpp
from transformer_cli.analysis.llama_cpp import Runtime, compute_bytes, layer_memory, output_bytes
from transformer_cli.errors import SpecError

MiB = 2**20
CASES = DATA["cases"]
LATENT = ("deepseek3-mla", "DeepSeek-V2-Lite")


def runtime(p):
    return Runtime(
        p["n_ctx"],
        p["n_ubatch"],
        p["n_batch"],
        p.get("n_seq_max", 1),
        p.get("kv_unified", False),
        p.get("type_k", "f16"),
        p.get("type_v", "f16"),
        p["flash_attn"],
        p["swa_full"],
    )


def caches(spec, rt):
    """tfm's caches as llama.cpp logs them: the full blocks' (cells, blocks, K MiB, V MiB), then the sliding ones';
    the states' (R MiB, S MiB); the output buffer's MiB."""
    memory = layer_memory(spec, rt)
    out = []
    for group in ([m for m in memory if m.k and not m.window], [m for m in memory if m.k and m.window]):
        if group:
            k, v = (round(sum(getattr(m, x) for m in group) / MiB, 2) for x in "kv")
            out.append((group[0].cells, len(group), k, v))
    indexed = [m for m in memory if m.index]  # (llama.cpp's indexer cache: its own log line, after the main one)
    if indexed:
        out.append((indexed[0].cells, len(indexed), round(sum(m.index for m in indexed) / MiB, 2), 0.0))
    states = [(round(sum(m.r for m in memory) / MiB, 2), round(sum(m.s for m in memory) / MiB, 2))]
    return out, states if any(m.r or m.s for m in memory) else [], round(output_bytes(spec, rt) / MiB, 2)


def logged(case):
    kv = [(k["cells"], k["layers"], k["K"][1], k["V"][1]) for k in case["kv"]]
    return kv, [(s["R"][1], s["S"][1]) for s in case["states"]], case["output"]["CPU"]


def label(case):
    p = case["params"]
    extra = "".join(f"-{k}{v}" for k, v in p.items() if k not in ("n_batch", "n_ctx", "n_ubatch"))
    return f"{case['model']}-c{p['n_ctx']}-ub{p['n_ubatch']}{extra}"


@pytest.mark.parametrize("case", [c for c in CASES if "refused" not in c], ids=label)
def test_the_caches_states_and_output_buffer_are_llama_cpps_to_its_log(case):
    """K and V of each cache (full, sliding) with their cells and blocks, the recurrent states, the output buffer:
    every figure llama.cpp logs, equal at its two decimals of MiB."""
    spec, rt = spec_of(case["model"]), runtime(case["params"])
    assert caches(spec, rt) == logged(case)
    assert llama_cpp.cells(rt).n_ctx == case["n_ctx"] and llama_cpp.cells(rt).per_stream == case["n_ctx_seq"]


@pytest.mark.parametrize("case", [c for c in CASES if "refused" in c], ids=label)
def test_what_llama_cpp_refuses_tfm_refuses_naming_llama_cpps_reason(case):
    """A quantised V without flash attention, a block of 32 not dividing a head of 16, K and V of two types with
    latent attention: refused in one line that quotes llama.cpp's words."""
    words = case["refused"].split("llama_init_from_model: ")[1]
    with pytest.raises(SpecError) as refused:
        layer_memory(spec_of(case["model"]), runtime(case["params"]))
    said = str(refused.value)
    assert "\n" not in said
    key = next(k for k in ("quantized V cache", "does not divide", "different K") if k in words)
    assert key.replace("quantized", "quantised") in said or key in said


def test_the_checks_can_fail_without_llama_cpps_padding_windows_or_streams(monkeypatch):
    """Controls: without padding to 256 cells, with every sliding block the whole context, or one stream for
    several sequences, some recorded case differs."""
    ok = [c for c in CASES if "refused" not in c]
    monkeypatch.setattr(llama_cpp, "PAD", 1)
    assert any(caches(spec_of(c["model"]), runtime(c["params"])) != logged(c) for c in ok)
    monkeypatch.undo()
    full = [c for c in ok if c["model"].startswith("gemma") and not c["params"]["swa_full"]]
    rts = [(c, runtime(c["params"] | {"swa_full": True})) for c in full]
    assert sum(caches(spec_of(c["model"]), rt) != logged(c) for c, rt in rts) >= 20  # (where the window is less)
    several = [c for c in ok if c["kv"] and c["params"].get("n_seq_max", 1) > 1 and not c["params"].get("kv_unified")]
    rts = [(c, runtime(c["params"] | {"kv_unified": True})) for c in several]
    assert all(caches(spec_of(c["model"]), rt) != logged(c) for c, rt in rts)


def tolerance(case):
    """The compute estimate's measured bound: 15 % for latent attention (its graph's own tensors are not
    modelled), else 7 % or 3 MiB, whichever is larger (the small models' few MiB are ggml-alloc's layout)."""
    theirs = case["compute"]["CPU"]
    return 0.15 * theirs if case["model"] in LATENT else max(0.07 * theirs, 3)


def test_the_compute_buffer_estimate_is_within_its_stated_error_of_llama_cpps():
    """Every recorded case within its tolerance; the full-size dense and MoE models (Llama 3 8B and 70B, Gemma 2
    9B, Gemma 3 1B, Qwen3-30B-A3B, Mixtral) at F16 caches within 5 %, most exact to the log's decimals."""
    worst = {}
    for case in (c for c in CASES if "refused" not in c):
        ours = compute_bytes(spec_of(case["model"]), runtime(case["params"])) / MiB
        theirs = case["compute"]["CPU"]
        assert abs(ours - theirs) <= tolerance(case), (label(case), ours, theirs)
        worst[case["model"]] = max(worst.get(case["model"], 0), abs(ours - theirs) / theirs)
    full = ("Meta-Llama-3-8B", "Llama-3.1-70B", "gemma-2-9b", "gemma-3-1b-pt", "Qwen3-30B-A3B", "Mixtral-8x7B-v0.1")
    assert all(worst[name] < 0.06 for name in full), worst


def test_the_compute_estimate_can_fail_without_the_scores_or_the_masks():
    """Controls: priced as if flash attention were the other way, or without the masks, cases leave the bound."""
    ok = [c for c in CASES if "refused" not in c and c["params"].get("type_k", "f16") == "f16"]

    def off(case, changes):
        ours = compute_bytes(spec_of(case["model"]), runtime(case["params"] | changes)) / MiB
        return abs(ours - case["compute"]["CPU"]) > tolerance(case)

    assert sum(off(c, {"flash_attn": not c["params"]["flash_attn"], "type_v": "f16"}) for c in ok) >= 10
    assert sum(off(c, {"n_ctx": 256}) for c in ok if c["params"]["n_ctx"] >= 16384) >= 5


@pytest.mark.parametrize("name", sorted(DATA["models"]))
def test_the_weights_are_the_bytes_llama_cpp_maps(name):
    """The GGUF file's tensors (as tfm writes, or llama-quantize types, them) are llama.cpp's model buffer."""
    logged_mib = next(c["model_buffer"]["CPU_Mapped"] for c in CASES if c["model"] == name and "model_buffer" in c)
    assert round(sum(tensors_of(name).values()) / MiB, 2) == logged_mib
