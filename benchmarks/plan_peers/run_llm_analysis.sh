#!/bin/bash
# Runs llm-analysis (git HEAD d841e40, installed from /tmp/peers/llm-analysis into /tmp/peers/venv-git)
# for the tfm peer-comparison setups. Outputs: /tmp/peers/out/la_*.out (full log) and la_*.json (summary dict).
set -u
cd /tmp/peers
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1   # config read from the local HF config.json via AutoConfig
PY=${PY:-/tmp/peers/venv-git/bin/python}
TAG=${TAG:-git}
M=/work/main/examples/hf/Meta-Llama-3-8B
run() { name=$1; shift
  $PY -m llm_analysis.analysis "$@" > out/la_${TAG}_$name.raw 2>&1; rc=$?
  sed 's/\x1b\[[0-9;]*m//g' out/la_${TAG}_$name.raw > out/la_${TAG}_$name.out; rm out/la_${TAG}_$name.raw
  # fire prints the returned dict as JSON at the end
  awk '/^\{/{f=1} f' out/la_${TAG}_$name.out > out/la_${TAG}_$name.json
  echo "$name rc=$rc :: $PY -m llm_analysis.analysis $*"
}
TR="train --model_name $M --gpu_name a10g-pcie-24gb --batch_size_per_gpu 1 --gradient_accumulation_steps 1 --seq_len 2048 --layernorm_dtype_bytes 2"
# A: QLoRA-ish. Tool has no LoRA: native = full fine-tune with 4-bit weights; "frozen" = same with grad/opt bytes set to 0
run A_w4_full_norecomp $TR --dtype_name w4a16e16 --activation_recomputation 0
run A_w4_full_recomp   $TR --dtype_name w4a16e16 --activation_recomputation 4
run A_w4_frozen_norecomp $TR --dtype_name w4a16e16 --activation_recomputation 0 --master_weights_dtype_bytes 0 --other_op_bytes 0
run A_w4_frozen_recomp   $TR --dtype_name w4a16e16 --activation_recomputation 4 --master_weights_dtype_bytes 0 --other_op_bytes 0
# A': bf16 base weights
run A16_full_norecomp $TR --dtype_name w16a16e16 --activation_recomputation 0
run A16_full_recomp   $TR --dtype_name w16a16e16 --activation_recomputation 4
run A16_frozen_norecomp $TR --dtype_name w16a16e16 --activation_recomputation 0 --master_weights_dtype_bytes 0 --other_op_bytes 0
run A16_frozen_recomp   $TR --dtype_name w16a16e16 --activation_recomputation 4 --master_weights_dtype_bytes 0 --other_op_bytes 0
# B: inference, TP=2, bf16, prompt 8192 + 1 generated token
IN="infer --model_name $M --gpu_name a100-sxm-80gb --dtype_name w16a16e16 --tp_size 2 --seq_len 8192 --num_tokens_to_generate 1"
run B_bs1 $IN --batch_size_per_gpu 1
run B_bs8 $IN --batch_size_per_gpu 8
