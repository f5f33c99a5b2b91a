#!/usr/bin/env bash
# infer beside llama.cpp on the same weights, in one call on the GPU machine:
# decode tok/s at batch 1, 8, 32 and 128 (32 prompt + 256 output tokens a
# sequence), for the models of ../shared/models with random weights.
#
# Here (development machine):
#   make gpu-build && bench/llamacpp/fetch.sh     (.carry/llama.cpp.tar.xz, .carry/tokenizers.tar.xz)
# There (device, repo root; carry build-gpu/infer, .carry/models, .carry/tokenizers.tar.xz and
# .carry/llama.cpp.tar.xz, or instead .carry/llama.cpp-cuda-bin.tar.xz from
# `bench/llamacpp/build.sh pack-cuda` here, which skips the ~5-minute build there; that tarball is
# ~42 MB, so with the tree and the tokenizers the carry only fits 64 MiB with build-gpu/infer alone
# packed: `tar cJf .carry/infer-one.tar.xz build-gpu/infer`, unpacked there first):
#   bash bench/peer_decode.sh .carry/models [MODELS]      MODELS: config folder names, comma-separated
#
# Each model: `infer mkmodel --seed 0` with its family's real tokenizer files (the converter
# needs them), converted to a bf16 GGUF by llama.cpp's own convert_hf_to_gguf.py; then
# `infer bench --cuda-graph-mode full` on the checkpoint, `llama-bench -n 256` (tg256 at batch 1)
# and `llama-batched-bench -npp 32 -ntg 256 -npl 1,8,32,128` (S_TG) on the GGUF, flash
# attention on, every layer on the GPU. Logs and JSON in $OUT; the table last.
set -u
export NCCL_NVLS_ENABLE=0
CONFIGS=${1:?usage: peer_decode.sh CONFIGS_DIR [MODELS]}
LIST=${2:-gemma-3-1b-it,llama-3.2-3b-instruct,qwen3-4b}
OUT=${OUT:-/tmp/peer-out}
WORK=${WORK:-/tmp/peer}
export LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
BIN=$LLAMA_DIR/build/bin
INFER=build-gpu/infer
mkdir -p "$OUT" "$WORK"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
git rev-parse --short HEAD 2>/dev/null | tee -a "$OUT/machine.txt"

# The source first (its converter); the build (~5 minutes on 16 cores) then runs while the
# checkpoints are made and converted, so that everything fits one call.
bash bench/llamacpp/build.sh source || exit 1
build_pid=
if [ ! -x "$BIN/llama-batched-bench" ]; then
    TARGETS="llama-bench llama-batched-bench" bash bench/llamacpp/build.sh cuda >"$OUT/llama-build.txt" 2>&1 &
    build_pid=$!
fi
ready=()
for name in $(tr ',' ' ' <<<"$LIST"); do
    INFER=$INFER bash bench/llamacpp/make_gguf.sh "$CONFIGS" "$name" "$WORK" "$OUT/convert-$name.log" >/dev/null &&
        ready+=("$name")
done
if [ -n "$build_pid" ]; then
    wait "$build_pid" || { cat "$OUT/llama-build.txt"; exit 1; }
    cat "$OUT/llama-build.txt"
fi

for name in "${ready[@]}"; do
    ck=$WORK/$name gguf=$WORK/$name.bf16.gguf
    $INFER bench --model "$ck" --device cuda --batch 1,8,32,128 --prompt-len 0 --cuda-graph-mode full \
        2>"$OUT/infer-$name.err" | sed "s/^{/{\"name\": \"$name\", /" | tee -a "$OUT/infer.jsonl"
    "$BIN/llama-bench" -m "$gguf" -p 0 -n 256 -ngl 99 -fa on -r 3 -o jsonl 2>"$OUT/llama-bench-$name.err" |
        sed "s/^{/{\"name\": \"$name\", /" | tee -a "$OUT/llama-bench.jsonl"
    "$BIN/llama-batched-bench" -m "$gguf" -ngl 99 -fa on -c $((128 * 288)) -b 2048 -ub 512 \
        -npp 32 -ntg 256 -npl 1,8,32,128 --output-format jsonl 2>"$OUT/batched-bench-$name.err" |
        grep '^{' | sed "s/^{/{\"name\": \"$name\", /" | tee -a "$OUT/batched-bench.jsonl"
done

python3 - "$OUT" <<'PY' | tee "$OUT/table.md"
import json, os, sys
out = sys.argv[1]
def rows(f):
    p = os.path.join(out, f)
    return [json.loads(l) for l in open(p) if l.startswith("{")] if os.path.exists(p) else []
infer = {(r["name"], r["batch"]): r for r in rows("infer.jsonl") if r.get("workload") == "decode"}
tg = {r["name"]: r.get("avg_ts") for r in rows("llama-bench.jsonl") if r.get("n_gen") == 256}
bb = {(r["name"], r["pl"]): r["speed_tg"] for r in rows("batched-bench.jsonl")}
print("| model | batch | infer tok/s (step ms) | llama.cpp tok/s (batched-bench S_TG) | infer / llama.cpp |")
print("|---|---:|---:|---:|---:|")
for name in sorted({k[0] for k in infer} | {k[0] for k in bb}):
    for b in (1, 8, 32, 128):
        i, l = infer.get((name, b)), bb.get((name, b))
        it = f"{i['output_tok_s']:.1f} ({i['step_ms']:.3f})" if i else "-"
        lt = f"{l:.1f}" if l else "-"
        ratio = f"{i['output_tok_s'] / l:.2f}x" if i and l else "-"
        print(f"| {name} | {b} | {it} | {lt} | {ratio} |")
    if tg.get(name):
        print(f"| {name} | 1 (llama-bench tg256) | | {tg[name]:.1f} | "
              + (f"{infer[(name, 1)]['output_tok_s'] / tg[name]:.2f}x |" if (name, 1) in infer else "- |"))
PY
