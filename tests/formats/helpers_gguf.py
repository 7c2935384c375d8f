"""The families the GGUF tests write and read back."""

from __future__ import annotations

FAMILIES = ["llama", "qwen2", "qwen3", "mixtral", "qwen2_moe-all-routed", "qwen3_moe-all-routed", "gemma",
            "gemma2-gguf", "gemma3-gguf", "gemma3_text-four-layers", "llama3-gguf", "llama-rope-linear",
            "llama-rope-yarn", "phi3",
            "phi3-longrope", "starcoder2-no-window", "gpt2", "falcon-7b", "falcon-40b", "olmo2", "granite", "cohere",
            "cohere-qk-norm-tied", "stablelm", "stablelm-parallel", "stablelm-qk-layernorm", "bloom", "bloom-6-heads",
            "gpt_neox", "gpt_neox-sequential", "phi-gguf", "phimoe-gguf", "gpt_oss-gguf", "deepseek_v3-gguf",
            "deepseek_v2", "gptj-gguf"]  # fmt: skip
