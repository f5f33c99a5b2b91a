#!/usr/bin/env bash
# Device-side (not CI): kernel tests, then tools/engine_check.py on each model,
# greedy and seeded-sampled. Usage: bash tools/dev/engine.sh CONFIGS_DIR model ...
# (Gemma's small KV rows need a smaller pool to preempt: --util 0.0006.)
set -u
C=${1:?configs}; shift
mkdir -p /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | grep -v "^\[PASS\]" | tail -n 8
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    u=0.004; case $n in gemma*) u=0.0006;; esac
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u | tail -n 2
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --sampled | tail -n 2
done
