#!/usr/bin/env bash
# Decode speed of two builds on one machine (GPU machine, not CI): batch-1
# and batch-32 output tok/s through the engine with full graphs
# (tools/decode_speed.py), base and new alternating, twice; then the new
# build's `infer bench` on the same workload, which must agree with
# decode_speed.py. Checkpoints from CONFIGS_DIR/<model>/config.json are made
# with the base build's mkmodel (random weights, seed 0) in /tmp/ab.
# Usage: bash tools/ab_decode.sh BASE_INFER NEW_INFER CONFIGS_DIR model ...
set -u
A=${1:?base infer}; B=${2:?new infer}; C=${3:?configs}; shift 3
mkdir -p /tmp/ab
for n in "$@"; do
    [ -f /tmp/ab/$n/model.safetensors ] || $A mkmodel --config "$C/$n/config.json" --out /tmp/ab/$n --seed 0 >/dev/null
    for round in 1 2; do
        python3 tools/decode_speed.py "$A" /tmp/ab/$n --batches 1,32 --modes full | sed "s|^|round $round base: |"
        python3 tools/decode_speed.py "$B" /tmp/ab/$n --batches 1,32 --modes full | sed "s|^|round $round new:  |"
    done
    $B bench --model /tmp/ab/$n --device cuda --batch 1,32 --prompt-len 0 --cuda-graph-mode full 2>/dev/null
done
