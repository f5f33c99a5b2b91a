#!/usr/bin/env bash
# Device-side (not CI): the record of CUDA graphs for every step in one call: GPU tests; graphs
# against eager (full, greedy and seeded sampled) per model; decode speed
# none / decode / full at batch 1, 8, 32, 128; the mixed-step benchmark; the
# capture time and graph memory at generate's default flags.
# Usage: bash tools/dev/final.sh CONFIGS_DIR model ...   (ONLY=defaults: the last part alone)
set -u
C=${1:?configs}; shift
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
done
if [ "${ONLY:-}" != defaults ]; then
build-gpu/gpu_tests --no-bench 2>&1 | grep -v "^\[PASS\]" | tail -n 2
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    u=0.004; case $n in gemma*) u=0.0006;; esac
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --graph full | grep -E "\]:|mismatch"
    timeout 300 python3 tools/engine_check.py build-gpu/infer /tmp/m/$n --util $u --graph full --sampled | grep -E "\]:|mismatch"
done
for n in "$@"; do build-gpu/infer bench --model /tmp/m/$n --batch 1,8 --input-len 512 --output-len 64 --prompt-len 512 2>/dev/null; done
for n in "$@"; do timeout 300 python3 tools/decode_speed.py build-gpu/infer /tmp/m/$n; done
for n in "$@"; do timeout 300 python3 tools/mixed_steps.py build-gpu/infer /tmp/m/$n | grep -v "engine step"; done
fi
printf '{"prompt_ids": [1, 2, 3], "max_tokens": 2}\n' > /tmp/one.jsonl
for n in "$@"; do
    echo "== $n at generate's defaults (engine: --input)"
    for mode in full piecewise decode; do
        build-gpu/infer generate --model /tmp/m/$n --device cuda --input /tmp/one.jsonl --cuda-graph-mode $mode 2>&1 >/dev/null | grep "cuda graphs"
    done
done
