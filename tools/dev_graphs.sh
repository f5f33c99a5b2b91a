#!/usr/bin/env bash
# Device-side (not CI): kernel tests, graphs against eager on the 64-request
# test (greedy and seeded sampling), then decode speed none vs decode.
# Usage: bash tools/dev_graphs.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
mkdir -p /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | grep -v "^\[PASS\]" | tail -n 3
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    u=0.004; case $n in gemma*) u=0.0006;; esac
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u | tail -n 3
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --sampled | tail -n 1
done
for n in "$@"; do timeout 400 python3 tools/decode_speed.py build-gpu/infer /tmp/m/$n; done
