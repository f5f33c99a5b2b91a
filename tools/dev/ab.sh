#!/usr/bin/env bash
# Device-side A/B of an environment switch on the decode bench (not CI).
# Usage: bash tools/dev/ab.sh CONFIGS_DIR VAR=VALUE model ...
set -u
C=${1:?configs}; AB=${2:?VAR=VALUE}; shift 2
mkdir -p /tmp/m
build-gpu/gpu_tests --no-bench 2>&1 | tail -n 1
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for rep in 1 2; do
        for mode in base ab; do
            if [ $mode = ab ]; then e="env $AB"; else e=env; fi
            r=$($e build-gpu/infer bench --model /tmp/m/$n --batch 1 --input-len 512 --output-len 64 --prompt-len 0 2>/dev/null)
            echo "$n $mode($AB) rep $rep: $(echo "$r" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print("step %.3f ms, %.1f tok/s" % (r["step_ms"], r["output_tok_s"]))')"
        done
    done
done
