#!/usr/bin/env bash
# Device-side quick loop (not part of CI): kernel tests, then the decode bench
# for the given models. Usage: bash tools/dev/bench.sh CONFIGS_DIR [model ...]
set -u
C=${1:?configs}; shift
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT" /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | tail -n 3
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    build-gpu/infer bench --model /tmp/m/$n --batch 1,8 --input-len 512 --output-len 64 --prompt-len 512 2>/dev/null | tee -a "$OUT/bench.jsonl"
done
