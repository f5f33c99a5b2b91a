#!/usr/bin/env bash
# Device-side (not CI): per-kernel GPU times of eager steps (ncu, kernels
# serialised) for `infer bench` on each model, eager: BATCH (1) prompts of
# INPUT_LEN (512) tokens, their prefill and two decode steps; CSVs under $OUT
# (or /tmp). Usage: [BATCH=64 INPUT_LEN=160] bash tools/dev/ncu_step.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
O=${OUT:-/tmp}
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    timeout 400 /usr/local/cuda/bin/ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none \
        --csv --launch-count ${COUNT:-1000} build-gpu/infer bench --model /tmp/m/$n --batch ${BATCH:-1} --input-len ${INPUT_LEN:-512} --output-len 3 --prompt-len 0 --cuda-graph-mode none \
        > $O/ncu_$n.csv 2>/tmp/ncu_err.txt || tail -3 /tmp/ncu_err.txt
    wc -l $O/ncu_$n.csv
done
