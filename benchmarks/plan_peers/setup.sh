#!/bin/bash
# How the peer-tool environments in /tmp/peers were built (idempotent-ish; rerun from scratch in an empty /tmp/peers).
set -e
cd /tmp/peers
# sources: snapshots obtained with the session's fetch tool (github:cli99/llm-analysis, github:RahulSChand/gpu_poor)
[ -d llm-analysis ] || git clone -q /work/.mirror/cli99+llm-analysis/repo llm-analysis     # HEAD d841e40 (2024-11-13)
[ -d gpu_poor ]     || git clone -q /work/.mirror/RahulSChand+gpu_poor/repo gpu_poor       # HEAD ad2fc0e (2024-12-03)
# venv: PyPI llm-analysis 0.2.2 (older code than git HEAD; no gated-MLP support) -- used only for a footnote
[ -d venv ] || { python3 -m venv venv && venv/bin/pip install -q llm-analysis; }
# venv-git: llm-analysis from git HEAD (primary); transformers/hub pinned as PyPI 0.2.2 pulled them, to read local HF config.json
[ -d venv-git ] || { python3 -m venv venv-git && venv-git/bin/pip install -q ./llm-analysis "transformers==4.31.0" "huggingface-hub==0.14.1"; }
mkdir -p out
