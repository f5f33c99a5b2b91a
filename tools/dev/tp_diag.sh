#!/usr/bin/env bash
# Where a split model's run stops: each case a bench with a time limit, NCCL warnings on.
# On the device: bash tools/dev/tp_diag.sh CONFIGS_DIR MODEL
set -u
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
B=build-gpu
M=/tmp/infer-models/$2
[ -f "$M/model.safetensors" ] || $B/infer mkmodel --config "$1/$2/config.json" --out "$M" >/dev/null
cat >"$OUT/fmt.py" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        r = json.loads(l)
        print(f"b{r['batch']}: {r['output_tok_s']} tok/s {r['step_ms']} ms", end="; ")
PY
$B/gpu_tests bench_allreduce >"$OUT/ar_bench.log" 2>&1
cat "$OUT/ar_bench.log"
case_() { # NAME LIMIT VAR=VALUE bench-args...
    local name=$1 limit=$2 var=$3
    shift 3
    local t0=$(date +%s%N)
    env "$var" timeout -s KILL "$limit" $B/infer bench "$@" --model "$M" --device cuda --prompt-len 0 >"$OUT/$name.out" 2>"$OUT/$name.err"
    local rc=$?
    printf '%-28s rc %3d  %6d ms  %s\n' "$name" $rc $((($(date +%s%N) - t0) / 1000000)) \
        "$(python3 "$OUT/fmt.py" "$OUT/$name.out")"
    [ $rc -ne 0 ] && grep -v "memory plan\|cuda graphs" "$OUT/$name.err" | tail -n 5
}
case_ tp2-b8-full 40 INFER_X=1 --batch 8 --tp 2 --cuda-graph-mode full
case_ tp2-b64-full 40 INFER_X=1 --batch 64 --tp 2 --cuda-graph-mode full
case_ tp2-b64-ipc-full 40 INFER_ALLREDUCE=ipc --batch 64 --tp 2 --cuda-graph-mode full
case_ tp2-b64-nccl-eager 40 INFER_ALLREDUCE=nccl --batch 64 --tp 2 --cuda-graph-mode none
case_ tp2-b1-nccl-full 40 INFER_ALLREDUCE=nccl --batch 1 --tp 2 --cuda-graph-mode full
case_ tp2-b1-off-full 40 INFER_ALLREDUCE=off --batch 1 --tp 2 --cuda-graph-mode full
case_ tp1-b1-full 40 INFER_X=1 --batch 1,64 --cuda-graph-mode full
case_ tp2-ipc-full 60 INFER_ALLREDUCE=ipc --batch 1,64 --tp 2 --cuda-graph-mode full
case_ tp4-ipc-full 60 INFER_ALLREDUCE=ipc --batch 1,64 --tp 4 --cuda-graph-mode full
case_ tp4-b1-off-full 40 INFER_ALLREDUCE=off --batch 1 --tp 4 --cuda-graph-mode full
