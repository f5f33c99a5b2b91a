#!/usr/bin/env bash
# Everything the GPU machine runs, from binaries built here by `make gpu-build`
# (the machine has no compilers' dev packages): the machine check, every
# kernel test (CUDA op vs its CPU twin), compute-sanitizer memcheck on them,
# full-size parity with transformers, and the benchmarks; a short table last.
#
# On the device (repo root): bash tests/gpu/run.sh CONFIGS_DIR [STAGES]
#   CONFIGS_DIR holds <model>/config.json (a copy of ../shared/models, carried)
#   STAGES: any of check,kernels,sanitizer,engine,parity,bench,kernel-bench
#           (default: all but engine and kernel-bench; engine takes ~8 minutes)
# Logs go to $OUT (or /tmp/gpu-out).
set -u
CONFIGS=${1:?usage: run.sh CONFIGS_DIR [STAGES]}
STAGES=${2:-check,kernels,sanitizer,parity,bench}
export INFER_ROOT=${INFER_ROOT:-$PWD}
OUT=${OUT:-/tmp/gpu-out}
B=build-gpu
MODELS=/tmp/infer-models
mkdir -p "$OUT" "$MODELS"
summary=()
has() { [[ ",$STAGES," == *",$1,"* ]]; }
note() { summary+=("$1"); echo "== $1"; }

if has check; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/machine.txt"
    if ldd $B/infer | grep -q "not found"; then
        ldd $B/infer
        note "check: missing libraries"
        exit 1
    fi
    note "check: $(nvidia-smi --query-gpu=name --format=csv,noheader), libraries resolve"
fi

if has kernels; then
    $B/gpu_tests --no-bench 2>&1 | tee "$OUT/gpu_tests.log"
    note "kernels: $(tail -n 1 "$OUT/gpu_tests.log")"
fi

if has kernel-bench; then
    $B/gpu_tests bench_ 2>&1 | tee "$OUT/kernel_bench.log"
    note "kernel-bench: $(tail -n 1 "$OUT/kernel_bench.log")"
fi

if has sanitizer; then
    if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
        CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
        # correctness tests only (benchmarks are slow under the sanitizer)
        $CS --tool memcheck --error-exitcode 9 $B/gpu_tests --no-bench 2>&1 | tail -n 40 >"$OUT/sanitizer.log"
        rc=${PIPESTATUS[0]}
        note "sanitizer: memcheck exit $rc ($(grep -c 'ERROR SUMMARY: 0' "$OUT/sanitizer.log") clean summaries)"
    else
        note "sanitizer: compute-sanitizer not found"
    fi
fi

if has engine; then
    # every graph mode against eager, 64 requests greedy, seeded and mixed (log-probabilities compared
    # bit for bit), and the 8 -> 5 -> 3 transitions
    for cfg in "$CONFIGS"/*/config.json; do
        name=$(basename "$(dirname "$cfg")")
        [ -f "$MODELS/$name/model.safetensors" ] || $B/infer mkmodel --config "$cfg" --out "$MODELS/$name" >/dev/null
        u=0.004; case $name in gemma*) u=0.0006 ;; esac # a pool small enough to preempt
        for kind in "" --sampled --mixed --transitions; do
            python3 tools/engine_check.py $B/infer "$MODELS/$name" --util $u --graph none,decode,piecewise,full \
                $kind >>"$OUT/engine.log" 2>&1
        done
    done
    grep -E "\]:|mismatch" "$OUT/engine.log"
    note "engine: $(grep -c -- '-> OK' "$OUT/engine.log") runs equal alone, $(grep -c -- '-> FAIL' "$OUT/engine.log") not"
fi

if has parity; then
    python3 tools/parity_full.py $B/infer "$MODELS" "$CONFIGS"/*/config.json 2>&1 | grep -v "Loading weights" |
        tee "$OUT/parity.log"
    while read -r line; do note "parity: $line"; done < <(grep -E "OK|FAIL|fp32" "$OUT/parity.log")
fi

if has bench; then
    for cfg in "$CONFIGS"/*/config.json; do
        name=$(basename "$(dirname "$cfg")")
        [ -f "$MODELS/$name/model.safetensors" ] || $B/infer mkmodel --config "$cfg" --out "$MODELS/$name" >/dev/null
        $B/infer bench --model "$MODELS/$name" --device cuda --batch 1,8,32 --prompt-len 512 2>/dev/null |
            tee -a "$OUT/bench.jsonl"
        for p in 2048 8192; do
            $B/infer bench --model "$MODELS/$name" --device cuda --batch 0 --prompt-len $p \
                --max-num-batched-tokens $p 2>/dev/null | tee -a "$OUT/bench.jsonl"
        done
    done
    note "bench: $(wc -l <"$OUT/bench.jsonl") runs in bench.jsonl"
    python3 - "$OUT/bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"{'model':20} {'batch':>5} {'output tok/s':>12} {'step ms':>8} {'floor ms':>9} {'x floor':>7}")
for r in rows:
    if r["workload"] == "decode":
        print(f"{r['model']:20} {r['batch']:5} {r['output_tok_s']:12.1f} {r['step_ms']:8.3f} {r['floor_ms']:9.3f} "
              f"{r['step_over_floor']:7.2f}")
print(f"{'model':20} {'prompt':>6} {'prefill ms':>10} {'tok/s':>9} {'TFLOP/s':>8}")
for r in rows:
    if r["workload"] == "prefill":
        print(f"{r['model']:20} {r['prompt_len']:6} {r['prefill_ms']:10.2f} {r['prefill_tok_s']:9.0f} "
              f"{r['prefill_tflops']:8.1f}")
PY
fi

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
