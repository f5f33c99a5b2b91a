#!/usr/bin/env bash
# Device-side (not CI): `infer bench` graph step under each value of one
# environment variable, two rounds. Usage:
# bash tools/dev/env_sweep.sh CONFIGS_DIR VAR v1,v2,... model ...
set -u
C=${1:?configs}; VAR=${2:?var}; VALS=${3:?values}; shift 3
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for round in 1 2; do
        line="$n round $round:"
        for v in ${VALS//,/ }; do
            g=$(env $VAR=$v build-gpu/infer bench --model /tmp/m/$n --prompt-len 512 --decode-steps 8 2>/dev/null |
                python3 -c "import json,sys; print(json.load(sys.stdin)['graph_step_ms'])")
            line="$line $VAR=$v $g ms;"
        done
        echo "$line"
    done
done
