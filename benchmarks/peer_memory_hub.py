"""The Hub-reading peers of benchmarks/peer_memory.py: hf-mem (served the local files in-process) and gpu_poor's
JavaScript (run by node), each on its own code (see peer_memory.py's docstring for how)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import warnings
from pathlib import Path
from unittest import mock

from peer_memory_common import (
    HF_DIR,
    num,
    quote,
    record,
)


# ------------------------------------------------------------------------------------------------- hf-mem
def safetensors_header(model: str) -> bytes:
    """A model.safetensors made of its header only: names, BF16, shapes of the transformers class's parameters."""
    import torch
    from peer_counts import quiet
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    with quiet():
        config = AutoConfig.from_pretrained(HF_DIR / model)
        cls = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        with torch.device("meta"):
            net = cls.from_config(config, dtype=torch.bfloat16)
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, param in net.named_parameters():  # tied tensors once, as save_pretrained writes them
        size = param.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(param.shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    return len(blob).to_bytes(8, "little") + blob


def hf_mem_memory(model: str, hub_id: str, p: dict, batch: int) -> dict:
    """hf-mem's arun() with its HTTP client served from this machine (see the docstring)."""
    import httpx2
    from hf_mem._print import _bytes_to_gib
    from hf_mem.run import arun
    from hf_mem.safetensors import kv_cache

    files = {
        "config.json": (HF_DIR / model / "config.json").read_bytes(),
        "model.safetensors": safetensors_header(model),
    }
    served: list[str] = []

    def handler(request):
        served.append(f"{request.method} {request.url.path}")
        if request.url.path.startswith("/api/models/"):
            return httpx2.Response(200, json=[{"path": name, "type": "file"} for name in files])
        body = files[request.url.path.rsplit("/", 1)[-1]]
        if rng := request.headers.get("Range"):
            start, end = rng.removeprefix("bytes=").split("-")
            return httpx2.Response(206, content=body[int(start) : int(end) + 1])
        return httpx2.Response(200, content=body)

    client = httpx2.AsyncClient

    def offline_client(**kwargs):
        return client(**{**kwargs, "transport": httpx2.MockTransport(handler)})

    flags = dict(experimental=True, max_model_len=p["n"], batch_size=batch, kv_cache_dtype="bfloat16")
    out = record(units="GiB (1024**3), two decimals: 'KV CACHE (8192 TOKENS, 1.00 GiB)'; --json-output gives bytes")
    out["calls"].append(
        f"hf-mem --model-id {hub_id} --experimental --max-model-len {p['n']} --batch-size {batch} "
        f"--kv-cache-dtype bfloat16  (as hf_mem.run.arun(model_id={hub_id!r}, hf_token='offline', "
        + ", ".join(f"{k}={v!r}" for k, v in flags.items())
        + "), its httpx2.AsyncClient given an httpx2.MockTransport serving config.json and a safetensors header)"
    )
    with mock.patch.object(httpx2, "AsyncClient", offline_client), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = asyncio.run(arun(model_id=hub_id, hf_token="offline", **flags))
    out["served"] = served
    out["warnings"] = [str(w.message) for w in caught if "experimental" not in str(w.message)]
    out.update(
        weights_bytes=result.memory,
        kv_cache_bytes=result.kv_cache,
        inference_total_bytes=result.total_memory,
        parameters=result.safetensors.param_count,
    )
    out["printed"] = {
        k: f"{_bytes_to_gib(v):.2f} GiB"
        for k, v in (("MODEL", result.memory), ("KV CACHE", result.kv_cache), ("TOTAL", result.total_memory))
        if v is not None
    }
    if result.kv_cache is None:
        out["errors"]["kv_cache"] = "no KV cache: " + "; ".join(out["warnings"])
    raw = json.loads(files["config.json"])
    heads = raw.get("num_attention_heads")
    out["includes"] = {
        "weights": "sum over the safetensors header of numel x dtype bytes (here the synthetic BF16 header: every "
        "parameter of the *ForCausalLM / *ForConditionalGeneration class, tied tensors once)",
        "inference_total": "weights + KV cache (no activations, no framework overhead)",
    }
    out["assumed"] = {
        "head_dim": raw.get("head_dim", raw["hidden_size"] // heads) if heads and "hidden_size" in raw else None,
        "kv_heads": raw.get("num_key_value_heads", heads),
        "kv_per_token_per_layer": "2 x num_key_value_heads (default num_attention_heads) x head_dim (default "
        "hidden_size // num_attention_heads) x dtype bytes",
        "sliding_window": "capped at the window only for layers named sliding by layer_types or "
        "sliding_window_pattern; a config with sliding_window and neither counts every layer as full attention",
        "cross_attention_cache": "none; on t5 no KV cache at all: it needs hidden_size, num_hidden_layers and "
        "num_attention_heads in config.json (T5 has d_model, num_layers, num_heads) and only warns",
        "training": "not estimated (inference only)",
        "source": [
            quote(
                Path(kv_cache.__file__),
                'num_key_value_heads: int = config.get("num_key_value_heads"',
                "hf_mem/safetensors/kv_cache.py",
            ),
            quote(Path(kv_cache.__file__), 'head_dim: int = config.get("head_dim"', "hf_mem/safetensors/kv_cache.py"),
            quote(Path(kv_cache.__file__), "return num_hidden_layers, 0", "hf_mem/safetensors/kv_cache.py"),
            quote(Path(kv_cache.__file__), "total_kv_tokens = num_full_layers", "hf_mem/safetensors/kv_cache.py"),
        ],
    }
    return out


# ----------------------------------------------------------------------------------------------- gpu_poor
# Node: evaluate App.js's helpers (everything before the React component) in a vm context and call them.
GPU_POOR_JS = r"""
const fs = require("fs");
const vm = require("vm");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const src = fs.readFileSync(input.app, "utf8");
const helpers = src.slice(src.indexOf("const billion"), src.indexOf("function App()"));
const ctx = vm.createContext({ window: { location: { hostname: "localhost" } }, console: { log() {} } });
vm.runInContext(helpers, ctx);  // its function declarations become the context's globals
vm.runInContext("globalThis.gp = { getAllComputedData, getParseConfig, sanityUploadedConfig };", ctx);
const cMath = vm.runInContext("Math", ctx);
const ceil = cMath.ceil;
const results = input.cases.map((c) => {
  const r = { parsed: ctx.gp.getParseConfig(c.config, () => {}, () => {}) };
  let uploadError = null;
  ctx.gp.sanityUploadedConfig(c.config, (m) => { uploadError = m; }, () => {});
  r.upload_error = uploadError;
  for (const [mode, sel] of Object.entries(input.selections)) {
    for (const exact of [false, true]) {
      let error = null;
      cMath.ceil = exact ? (x) => x : ceil;
      const out = ctx.gp.getAllComputedData(
        c.config, null, null, c.n, 2, sel, (m) => { error = m; }, () => {}, c.batch, "no");
      cMath.ceil = ceil;
      r[mode + (exact ? "_exact" : "_shown")] = out;
      if (error) r[mode + "_error"] = error;
    }
  }
  return r;
});
process.stdout.write(JSON.stringify(results));
"""
GPU_POOR_SELECTIONS = {
    # The page's dropdowns: HF/vLLM inference or full training with Adam, no quantisation.
    "inference": {
        "dropdownTrnOrNot": "inf",
        "dropdownFullOrNot": "full_trn",
        "dropdownOpt": "adam_opt",
        "dropdownQuant": "no_quant",
    },
    "training": {
        "dropdownTrnOrNot": "trn",
        "dropdownFullOrNot": "full_trn",
        "dropdownOpt": "adam_opt",
        "dropdownQuant": "no_quant",
    },
}


def gpu_poor_memory(cases: list[dict], app: Path, node: str) -> list[dict]:
    """gpu_poor's getAllComputedData for every case in one node run; MB (MiB) turned into bytes."""
    if not node:
        reason = "not run: no node on this machine"
        return [record(errors={"all": reason}, note=reason) for _ in cases]
    payload = json.dumps({"app": str(app), "selections": GPU_POOR_SELECTIONS, "cases": cases})
    proc = subprocess.run([node, "-e", GPU_POOR_JS], input=payload, capture_output=True, text=True, check=True)
    mib = 1024 * 1024
    kv_src = quote(app, "inferenceMemory = batchSize*convertToMB(", "src/App.js")
    act_src = quote(app, "(contextLen * hiddenDim * 5 * 2 + contextLen * contextLen * heads * 2)", "src/App.js")
    outs = []
    for c, r in zip(cases, json.loads(proc.stdout), strict=True):
        inf, trn = r.get("inference_exact"), r.get("training_exact")
        out = record(units="MB (1024 * 1024 bytes), rounded up (Math.ceil) in the table the page shows")
        for mode in GPU_POOR_SELECTIONS:
            out["calls"].append(
                f"getAllComputedData(<config.json>, null, null, {c['n']}, 2, {GPU_POOR_SELECTIONS[mode]}, "
                f"setErrorMessage, openModal, {c['batch']}, 'no')"
            )
            if r.get(mode + "_error"):
                out["errors"][mode] = r[mode + "_error"]
        if inf:
            out.update(
                kv_cache_bytes=num(inf["KV Cache"] * mib),
                weights_bytes=num(inf["Model Size"] * mib),
                inference_total_bytes=num(inf["Total"] * mib),
                inference_activation_bytes=num(inf["Activation Memory"] * mib),
            )
            out["printed"]["inference"] = r["inference_shown"]
        if trn:
            out.update(
                training_total_bytes=num(trn["Total"] * mib),
                training_activation_bytes=num(trn["Activation Memory"] * mib),
            )
            out["printed"]["training"] = r["training_shown"]
            out["training_terms"] = {k: num(v * mib) for k, v in trn.items() if k not in ("Total", "KV Cache")}
        out["parsed_config"] = r["parsed"]
        out["upload_path"] = r["upload_error"] or "accepted (same fields)"
        out["includes"] = {
            "weights": "computeModelSize x 2 bytes: 2 V d + L (4 d^2 + 3 d ffn): untied, full multi-head, gated MLP, "
            "for every model",
            "inference_total": "KV cache + weights + activations + 650 MB 'cuda + other overhead'",
            "inference_activation": "batch x (n d 5 x 2 + n^2 heads x 2) bytes (one layer, with the score matrix)",
            "training_total": "weights (2 B/param) + 'Grad & Optimizer' (Adam: 3 x 2 B/param) + activations of all "
            "layers (no checkpointing) + 650 MB overhead",
        }
        out["assumed"] = {
            "head_dim": num(r["parsed"]["hiddenDim"] / r["parsed"]["heads"]),
            "kv_heads": "none: hidden_size whole (all heads)",
            "kv_per_token_per_layer": "2 (K, V) x 2 x 2 x hidden_size bytes: twice the multi-head cache",
            "sliding_window": "no such input",
            "cross_attention_cache": "none (decoder-only reading of the config)",
            "source": [kv_src, act_src],
        }
        outs.append(out)
    return outs
