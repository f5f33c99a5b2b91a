#!/usr/bin/env bash
# Tensor parallelism on a machine of several GPUs (nvidia-h100-x2 / -x4 / -x8), from
# binaries built here by `make gpu-build`; a short table last, logs in $OUT.
#
# On the device (repo root): bash tests/gpu/tp.sh CONFIGS_DIR STAGES [MODELS]
#   STAGES, comma-separated:
#     check    GPUs, links, libraries
#     kernels  the one-shot all-reduce against the rank-order sum, the logits' IPC gather against
#              the shards side by side, every GPU (+ the all-reduce's timing)
#     smoke    --tp 1, 2 (4, 8) each give 24 greedy tokens of one short prompt (and end); a size
#              that does not divide a model's heads (Gemma-3-1B at 8) is refused naming the flag
#     parity   prompt logits at TP 1/2/4/8 against transformers fp32 (tools/tp_parity.py)
#     engine   64 requests batched = alone, full graphs, greedy, seeded and mixed (log-probabilities
#              compared too), TP 2, 4 (and 8)
#     bench    decode tok/s, batch 1 and 64, full graphs, TP 1/2/4/8, and with every sum over NCCL
#              (INFER_AR_NCCL_ONLY=1, parallel/tuning.h)
#     nodes    TP 2 as two machines (a GPU each, NCCL over sockets): engine check + speed
#   MODELS: config folder names, comma-separated (default: all three)
# Sizes: 2, 4 and 8 as the machine's GPUs allow, each model at those that divide its heads.
# NCCL's NVLink multicast stays off (NCCL_NVLS_ENABLE=0): it can take a shared host's GPUs down.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
CONFIGS=${1:?usage: tp.sh CONFIGS_DIR STAGES [MODELS]}
STAGES=${2:?usage: tp.sh CONFIGS_DIR STAGES [MODELS]}
LIST=${3:-gemma-3-1b-it,llama-3.2-3b-instruct,qwen3-4b}
OUT=${OUT:-/tmp/gpu-out}
B=build-gpu
MODELS=/tmp/infer-models
mkdir -p "$OUT" "$MODELS"
GPUS=$(nvidia-smi -L | wc -l)
SIZES="2"
[ "$GPUS" -ge 4 ] && SIZES="2 4"
[ "$GPUS" -ge 8 ] && SIZES="2 4 8"
summary=()
has() { [[ ",$STAGES," == *",$1,"* ]]; }
note() { summary+=("$1"); echo "== $1"; }
model() { # makes the checkpoint once; prints its path
    [ -f "$MODELS/$1/model.safetensors" ] || $B/infer mkmodel --config "$CONFIGS/$1/config.json" --out "$MODELS/$1" >/dev/null
    echo "$MODELS/$1"
}
names() { tr ',' ' ' <<<"$LIST"; }
heads() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_attention_heads'])" "$CONFIGS/$1/config.json"; }
sizes_of() { # NAME [refused]: the sizes of SIZES that divide the model's attention heads;
    local h s want=0 out=""  # "refused": those that do not (Gemma-3-1B: 4 heads, so 8)
    [ "${2:-}" = refused ] && want=1
    h=$(heads "$1")
    for s in $SIZES; do [ $((h % s != 0)) -eq $want ] && out="$out $s"; done
    echo $out
}

if has check; then
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee "$OUT/machine.txt"
    nvidia-smi topo -m | tee -a "$OUT/machine.txt"
    ls -la /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1 | tee -a "$OUT/machine.txt"
    if ldd $B/infer | grep -q "not found"; then
        ldd $B/infer
        note "check: missing libraries"
        exit 1
    fi
    note "check: $GPUS x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), libraries resolve"
fi

if has kernels; then
    $B/gpu_tests allreduce 2>&1 | tee "$OUT/kernels.log"
    $B/gpu_tests embed 2>&1 | tee -a "$OUT/kernels.log"
    $B/gpu_tests logits_gather 2>&1 | tee -a "$OUT/kernels.log"
    note "kernels: $(grep -c PASS "$OUT/kernels.log") passed, $(grep -c FAIL "$OUT/kernels.log") failed"
fi

if has smoke; then
    for name in $(names); do
        m=$(model "$name")
        ids=$(python3 -c "import random; r=random.Random(3); print(','.join(str(r.randrange(1000, 30000)) for _ in range(40)))")
        ref=""
        for tp in $(sizes_of "$name" refused); do # refused, naming the flag
            msg=$(timeout 120 $B/infer generate --model "$m" --device cuda --prompt-ids "$ids" --max-tokens 4 \
                --tp $tp 2>&1 >/dev/null)
            rc=$?
            if [ $rc -ne 0 ] && grep -q -- "--tensor-parallel-size $tp" <<<"$msg"; then
                note "smoke: $name tp $tp refused (exit $rc): $(grep -- "--tensor-parallel-size" <<<"$msg" | head -n 1)"
            else
                note "smoke: $name tp $tp: FAIL, not refused by name (exit $rc)"
            fi
        done
        for tp in 1 $(sizes_of "$name"); do
            t0=$SECONDS
            got=$(timeout 120 $B/infer generate --model "$m" --device cuda --prompt-ids "$ids" --max-tokens 24 --json \
                --batch-invariant --tp $tp 2>"$OUT/smoke-$name-$tp.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])')
            [ -z "$ref" ] && ref=$got
            # a split model sums in another order: on random weights greedy tokens part after a while
            same=$(python3 -c "import sys; a, b = eval(sys.argv[1] or '[]'), eval(sys.argv[2] or '[]'); print(next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))))" "$got" "$ref")
            if [ "$(python3 -c "print(len(${got:-[]}))")" = 24 ]; then
                note "smoke: $name tp $tp: 24 greedy tokens, the first $same equal tp 1's; $(grep -o 'then [0-9.]* output tok/s' "$OUT/smoke-$name-$tp.log"); ended after $((SECONDS - t0)) s"
            else
                note "smoke: $name tp $tp: FAIL $(tail -n 3 "$OUT/smoke-$name-$tp.log" | tr '\n' ' ')"
            fi
        done
    done
fi

if has parity; then
    for name in $(names); do
        python3 tools/tp_parity.py $B/infer "$(model "$name")" --tp "1,$(sizes_of "$name" | tr ' ' ',')" 2>&1 |
            grep -v "Loading weights" | tee -a "$OUT/parity.log"
    done
    while read -r line; do note "parity: $line"; done < <(grep -E "OK|FAIL" "$OUT/parity.log")
fi

if has engine; then
    for name in $(names); do
        m=$(model "$name")
        u=0.004; case $name in gemma*) u=0.0006 ;; esac # a pool small enough to preempt
        for tp in $(sizes_of "$name"); do
            for kind in "" --sampled --mixed; do
                timeout 580 python3 tools/engine_check.py $B/infer "$m" --util $u --graph full --tp $tp $kind \
                    >>"$OUT/engine.log" 2>&1 || echo "engine_check $name tp $tp $kind: exit $?" >>"$OUT/engine.log"
            done
        done
    done
    grep -E "\]:|mismatch|exit|failed" "$OUT/engine.log"
    note "engine: $(grep -c -- '-> OK' "$OUT/engine.log") runs equal alone, $(grep -c -- '-> FAIL' "$OUT/engine.log") not"
fi

bench() { # NAME TAG ENV... -- infer bench args
    local name=$1 tag=$2
    shift 2
    env "$@" 2>>"$OUT/bench-$name.err" | sed "s/^{/{\"tag\": \"$tag\", /" | tee -a "$OUT/bench.jsonl"
}

if has bench; then
    for name in $(names); do
        m=$(model "$name")
        args=(--model "$m" --device cuda --batch 1,64 --prompt-len 0 --cuda-graph-mode full)
        for tp in 1 $(sizes_of "$name"); do
            bench "$name" auto $B/infer bench "${args[@]}" --tp $tp
        done
        for tp in $(sizes_of "$name"); do # the same steps with every sum and the gather over NCCL
            bench "$name" nccl INFER_AR_NCCL_ONLY=1 $B/infer bench "${args[@]}" --tp $tp
        done
    done
    grep -h "cuda graphs" "$OUT"/bench-*.err | sort | uniq -c | sort -rn | head -n 20 >"$OUT/capture.txt"
    python3 - "$OUT/bench.jsonl" <<'PY' | tee "$OUT/bench.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
base = {(r["model"], r["batch"]): r["output_tok_s"] for r in rows if r["tp"] == 1}
step = {(r["model"], r["batch"], r["tp"], r["tag"]): r["step_ms"] for r in rows}
print(f"{'model':22} {'batch':>5} {'tp':>2} {'path':>5} {'tok/s':>8} {'x tp1':>6} {'step ms':>8} {'nccl - auto':>11}")
for r in rows:
    k = (r["model"], r["batch"])
    auto = step.get((r["model"], r["batch"], r["tp"], "auto"))
    d = f"{r['step_ms'] - auto:11.3f}" if auto is not None and r["tag"] == "nccl" else " " * 11
    print(f"{r['model']:22} {r['batch']:5} {r['tp']:2} {r['tag']:>5} {r['output_tok_s']:8.1f} "
          f"{r['output_tok_s'] / base[k] if k in base else 0:6.2f} {r['step_ms']:8.3f} {d}")
PY
    note "bench: $(grep -c '^{' "$OUT/bench.jsonl") runs (bench.txt)"
fi

if has nodes; then
    for name in $(names); do
        m=$(model "$name")
        u=0.004; case $name in gemma*) u=0.0006 ;; esac
        for kind in "" --sampled; do
            timeout 580 python3 tools/engine_check.py $B/infer "$m" --util $u --graph full --tp 2 --nodes 2 $kind \
                >>"$OUT/nodes.log" 2>&1 || echo "engine_check $name 2 nodes $kind: exit $?" >>"$OUT/nodes.log"
        done
        port=$((29600 + RANDOM % 1000))
        args=(--model "$m" --device cuda --batch 1,64 --prompt-len 0 --cuda-graph-mode full --tp 2 --nnodes 2
            --dist-init-addr 127.0.0.1:$port)
        CUDA_VISIBLE_DEVICES=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $B/infer bench "${args[@]}" --node-rank 1 \
            >/dev/null 2>>"$OUT/nodes-bench.err" &
        bench "$name" 2nodes CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $B/infer bench "${args[@]}" \
            --node-rank 0
        wait
    done
    grep -E "\]:|mismatch|exit|failed" "$OUT/nodes.log"
    note "nodes: $(grep -c -- '-> OK' "$OUT/nodes.log") runs equal alone, $(grep -c -- '-> FAIL' "$OUT/nodes.log") not"
fi

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
