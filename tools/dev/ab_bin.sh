#!/usr/bin/env bash
# Device-side (not CI): A/B of two binaries on one machine: `infer bench`
# decode graph step and batch-1 engine decode (full graphs), alternating
# base / new twice. Usage: bash tools/dev/ab_bin.sh BASE_INFER NEW_INFER CONFIGS_DIR model ...
set -u
A=${1:?base}; B=${2:?new}; C=${3:?configs}; shift 3
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for round in 1 2; do for bin in "$A" "$B"; do
        g=$($bin bench --model /tmp/m/$n --batch 1 --input-len 512 --output-len 64 --prompt-len 0 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['step_ms'])")
        t=$(python3 tools/decode_speed.py $bin /tmp/m/$n --batches 1 --modes full | grep -o "full: *[0-9.]*" | head -1)
        echo "$n $(basename $bin) round $round: step $g ms (512-token context); batch-1 engine $t tok/s"
    done; done
done
