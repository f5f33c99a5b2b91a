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
            r=$($e build-gpu/infer bench --model /tmp/m/$n --prompt-len 512 --decode-steps 32 2>/dev/null)
            echo "$n $mode($AB) rep $rep: $(echo "$r" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print("graph %.3f ms wall %.3f ms" % (r["graph_step_ms"], r["decode_wall_ms"]))')"
        done
    done
done
