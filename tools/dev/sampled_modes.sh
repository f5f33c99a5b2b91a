#!/usr/bin/env bash
# Device-side (not CI): GPU kernel tests, then every graph mode against eager
# with seeded sampling drawn inside the graphs (tools/engine_check.py
# --sampled) and greedy, then compute-sanitizer memcheck over a short run with
# full graphs. Usage: bash tools/dev/sampled_modes.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
M=${MODES:-decode,piecewise,full}
mkdir -p /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | grep -v "^\[PASS\]" | tail -n 4
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    u=0.004; case $n in gemma*) u=0.0006;; esac
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --graph $M --sampled | grep -E "\]:|FAIL|mismatch"
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --graph full | grep -E "\]:|FAIL|mismatch"
done
n=$1
printf '{"prompt_ids": [1,2,3,4,5,6,7,8,9,10], "max_tokens": 8, "temperature": 0.8, "top_k": 20, "seed": 1}\n{"prompt_ids": [5,6,7], "max_tokens": 6, "ignore_eos": true}\n' > /tmp/two.jsonl
timeout 400 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 build-gpu/infer generate --model /tmp/m/$n \
    --device cuda --input /tmp/two.jsonl --max-model-len 256 --max-num-seqs 4 --max-num-batched-tokens 64 \
    --cuda-graph-mode full 2>&1 | grep -E "ERROR SUMMARY|Invalid|requests" | head -8
