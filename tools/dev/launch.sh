#!/usr/bin/env bash
# Device-side (not CI): where a batch-1 engine step's CPU time goes, graphs
# vs eager, with and without PDL (INFER_NO_PDL=1). Usage:
# bash tools/dev/launch.sh CONFIGS_DIR model ...
set -u
C=${1:?configs}; shift
mkdir -p /tmp/m
for n in "$@"; do
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    python3 - "$n" > /tmp/req.jsonl <<'PY'
import json, random, sys
r = random.Random(3)
print(json.dumps({"prompt_ids": [r.randrange(1000) for _ in range(32)], "max_tokens": 256, "ignore_eos": True}))
PY
    for pdl in 0; do for mode in none decode full; do
        echo "== $n mode=$mode INFER_NO_PDL=$pdl"
        INFER_NO_PDL=$pdl INFER_LOG=info build-gpu/infer generate --model /tmp/m/$n --device cuda --input /tmp/req.jsonl \
            --json --max-num-seqs 1 --max-model-len 512 --cuda-graph-mode $mode 2>&1 >/dev/null | grep -E "output tok/s|engine step" | sed 's/.*: 1 requests/1 requests/'
    done; done
done
