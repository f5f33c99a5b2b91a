#!/usr/bin/env bash
# Device-side (not CI): `infer bench` decode step (full graphs, 512-token
# prompts, 64 steps; BATCH=1 or a list) under each value of one environment
# variable, two rounds. Usage:
# bash tools/dev/env_sweep.sh CONFIGS_DIR VAR v1,v2,... model ...   (BIN=path: another infer binary)
set -u
BIN=${BIN:-build-gpu/infer}
C=${1:?configs}; VAR=${2:?var}; VALS=${3:?values}; shift 3
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for round in 1 2; do
        line="$n $(basename "$BIN") round $round:"
        for v in ${VALS//,/ }; do
            g=$(env $VAR=$v "$BIN" bench --model /tmp/m/$n --batch "${BATCH:-1}" --input-len 512 --output-len 64 \
                --prompt-len 0 2>/dev/null | python3 -c "import json,sys; print(' '.join(str(json.loads(l)['step_ms']) for l in sys.stdin if l.startswith('{')))")
            line="$line $VAR=$v $g ms;"
        done
        echo "$line"
    done
done
