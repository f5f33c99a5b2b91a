#!/usr/bin/env bash
# Device-side (not CI): do two settings of the environment give the same
# tokens and log-probabilities? `infer generate --input` of 8 requests
# (greedy and seeded, logprobs on) at once, batch <= 8, full graphs, once
# per setting; exits non-zero on any difference. For changes meant to keep
# the bits (e.g. INFER_AR_PUSH=0 against 1). Usage:
#   ARGS="--tp 2" bash tools/dev/same_output_ab.sh CONFIGS_DIR "m1 m2" 'A=V ...' 'A=V2 ...'
set -u
C=${1:?configs}; MODELS=${2:?models}; A=${3:?env a}; B=${4:?env b}; ARGS=${ARGS:-}
mkdir -p /tmp/m /tmp/same
python3 - >/tmp/same/req.jsonl <<'PY'
import json
for i in range(8):
    print(json.dumps({"prompt_ids": [1 + (i * 37 + j * 11) % 3000 for j in range(4 + 9 * i)], "max_tokens": 40,
                      "temperature": 0.0 if i % 2 == 0 else 0.9, "seed": 100 + i, "logprobs": True,
                      "ignore_eos": True}))
PY
rc=0
for n in $MODELS; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for side in a b; do
        [ $side = a ] && envs=$A || envs=$B
        env $envs build-gpu/infer generate --model /tmp/m/$n --device cuda --input /tmp/same/req.jsonl --json \
            --cuda-graph-mode full $ARGS >/tmp/same/$n.$side 2>/tmp/same/$n.$side.err || { echo "$n $side: exit $?"; tail -3 /tmp/same/$n.$side.err; rc=1; }
    done
    if cmp -s /tmp/same/$n.a /tmp/same/$n.b && [ -s /tmp/same/$n.a ]; then
        echo "$n $ARGS: same output ($(wc -c </tmp/same/$n.a) bytes) with '$A' and '$B'"
    else
        echo "$n $ARGS: DIFFERENT output with '$A' and '$B'"; rc=1
    fi
done
exit $rc
