#!/usr/bin/env bash
# Device-side (not CI): kernel tests, then tools/engine_check.py on each model.
# Usage: bash tools/dev_engine.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
mkdir -p /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | grep -v "^\[PASS\]" | tail -n 5
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    timeout 400 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n
done
