#!/usr/bin/env bash
# Device-side (not CI): A/B/... of binaries and env settings on one machine,
# `infer bench --batch BATCHES --prompt-len 0` (full graphs, 32 + 256 tokens),
# the variants alternating, ROUNDS rounds. Usage:
#   ROUNDS=2 BATCHES=1,8 ARGS="--tp 2" bash tools/dev/ab_variants.sh CONFIGS_DIR "m1 m2" 'label=BIN [VAR=V ...]' ...
# e.g. 'base=build-gpu/infer-base' 'new=build-gpu/infer' 'noattn=build-gpu/infer INFER_ATTN_EARLY=0'
set -u
C=${1:?configs}; MODELS=${2:?models}; shift 2
ROUNDS=${ROUNDS:-2}; BATCHES=${BATCHES:-1,8}; ARGS=${ARGS:-}
mkdir -p /tmp/m
for n in $MODELS; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for round in $(seq "$ROUNDS"); do
        for v in "$@"; do
            label=${v%%=*}; rest=${v#*=}; read -r bin envs <<<"$rest"
            env $envs $bin bench --model /tmp/m/$n --device cuda --batch "$BATCHES" --prompt-len 0 --cuda-graph-mode full $ARGS 2>/dev/null |
                python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    host = ''.join(f\", {k} {d[k]:.4f}\" for k in ('host_ms', 'relay_ms', 'enqueue_ms') if k in d)
    print(f\"$n $ARGS round $round $label: batch {d['batch']} {d['output_tok_s']:.1f} tok/s, step {d['step_ms']:.3f} ms{host}\")"
        done
    done
done
