#!/usr/bin/env bash
# infer's fast CPU path beside llama.cpp's CPU build on the same GGUF files and threads, in one run
# on this machine: `llama-bench -t T -p 512 -n 64` (pp512 and tg64, 3 repetitions) and `infer bench
# --device cpu --threads T --batch 1 --input-len 32 --output-len 64 --prompt-len 512` for each file,
# the two alternating file by file; then the table (tok/s, and infer over llama.cpp).
#
# Usage: bench/cpu_peer.sh FILE.gguf...        (default: the embedded default model)
#   THREADS=2; REPS=3 (llama-bench repetitions, and infer runs: the best of each is kept);
#   LLAMA_DIR=/tmp/llama.cpp (built here first from .carry/llama.cpp.tar.xz when its tools are
#   missing: bench/llamacpp/fetch.sh, then bench/llamacpp/build.sh cpu); INFER=build/infer;
#   OUT=/tmp/cpu-peer (logs and JSON lines).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2} REPS=${REPS:-3}
export LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
INFER=${INFER:-build/infer} OUT=${OUT:-/tmp/cpu-peer}
BIN=$LLAMA_DIR/build/bin
mkdir -p "$OUT"
[ $# -gt 0 ] || set -- "$(python3 -c 'import sys; sys.path.insert(0, "tests"); from default_model import default_model_path; print(default_model_path())')"
if [ ! -x "$BIN/llama-bench" ]; then
    [ -f .carry/llama.cpp.tar.xz ] || bash bench/llamacpp/fetch.sh
    TARGETS="llama-bench llama-server llama-quantize" bash bench/llamacpp/build.sh cpu
fi
{
    lscpu | grep -m1 "Model name"
    echo "threads $THREADS; infer $(git describe --always --dirty 2>/dev/null); $(cat "$LLAMA_DIR/VENDORED_FROM" | cut -d, -f1)"
} | tee "$OUT/machine.txt"
: >"$OUT/llama.jsonl"
: >"$OUT/infer.jsonl"
for f in "$@"; do
    name=$(basename "$f" .gguf)
    "$BIN/llama-bench" -m "$f" -t "$THREADS" -p 512 -n 64 -r "$REPS" -o jsonl 2>"$OUT/llama-$name.err" |
        sed "s|^{|{\"file\": \"$name\", |" >>"$OUT/llama.jsonl"
    for _ in $(seq "$REPS"); do
        "$INFER" bench --model "$f" --device cpu --threads "$THREADS" --batch 1 --input-len 32 --output-len 64 \
            --prompt-len 512 2>"$OUT/infer-$name.err" | sed "s|^{|{\"file\": \"$name\", |" >>"$OUT/infer.jsonl"
    done
done
python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
llama, infer = {}, {}
for line in open(f"{out}/llama.jsonl"):
    r = json.loads(line)
    key = "pp" if r["n_prompt"] > 0 else "tg"
    llama[(r["file"], key)] = r["avg_ts"]
for line in open(f"{out}/infer.jsonl"):
    r = json.loads(line)
    key, v = ("tg", r["output_tok_s"]) if r["workload"] == "decode" else ("pp", r["prefill_tok_s"])
    infer[(r["file"], key)] = max(v, infer.get((r["file"], key), 0))
    if r["workload"] == "decode":
        infer[(r["file"], "gb")] = max(r["read_gb_s"], infer.get((r["file"], "gb"), 0))
print(f"| file | llama.cpp tg64 | infer decode | x | infer GB/s | llama.cpp pp512 | infer prefill 512 | x |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for f in dict.fromkeys(k[0] for k in infer):
    lt, it, lp, ip = llama.get((f, "tg"), 0), infer.get((f, "tg"), 0), llama.get((f, "pp"), 0), infer.get((f, "pp"), 0)
    print(f"| {f} | {lt:.1f} | {it:.1f} | {it / lt if lt else 0:.2f} | {infer.get((f, 'gb'), 0):.1f} | "
          f"{lp:.1f} | {ip:.1f} | {ip / lp if lp else 0:.2f} |")
EOF
