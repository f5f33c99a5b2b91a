#!/usr/bin/env bash
# The random-weight GGUFs of the fast CPU path's benchmarks (bench/cpu_peer.sh), made with
# llama.cpp's own tools: for each model of ../shared/models named, `infer mkmodel --seed 0` with
# its family's real tokenizer, llama.cpp's convert_hf_to_gguf.py to bf16 (bench/llamacpp/
# make_gguf.sh), then llama-quantize to each type. Skips what exists; prints the files made.
#
# Usage: bench/cpu_models.sh [MODELS] [TYPES]
#   MODELS: config folder names, comma-separated (default llama-3.2-1b,qwen3-0.6b)
#   TYPES: llama-quantize types, comma-separated (default Q4_K_M,Q8_0)
#   WORK=/tmp/cpu-models; LLAMA_DIR=/tmp/llama.cpp (built by bench/llamacpp/build.sh cpu);
#   PYTHON: a Python with torch, numpy, transformers and sentencepiece (the converter's needs);
#   INFER=build/infer; CONFIGS=../shared/models.
set -euo pipefail
cd "$(dirname "$0")/.."
LIST=${1:-llama-3.2-1b,qwen3-0.6b}
TYPES=${2:-Q4_K_M,Q8_0}
export WORK=${WORK:-/tmp/cpu-models} LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp} INFER=${INFER:-build/infer}
CONFIGS=${CONFIGS:-../shared/models}
PY=${PYTHON:-python3}
[ -x "$LLAMA_DIR/build/bin/llama-quantize" ] || { echo "cpu_models: no $LLAMA_DIR/build/bin/llama-quantize (bench/llamacpp/build.sh cpu)" >&2; exit 1; }
$PY -c "import torch, numpy, transformers, sentencepiece" 2>/dev/null ||
    { echo "cpu_models: $PY lacks torch, numpy, transformers or sentencepiece (the converter's needs; set PYTHON)" >&2; exit 1; }
mkdir -p "$WORK"
[ -d "$WORK/tokenizers" ] || tar xJf .carry/tokenizers.tar.xz -C "$WORK"
for name in $(tr ',' ' ' <<<"$LIST"); do
    bf16=$(PATH="$(dirname "$(command -v "$PY")"):$PATH" bash bench/llamacpp/make_gguf.sh "$CONFIGS" "$name" "$WORK" "$WORK/convert-$name.log" | tail -n 1)
    for t in $(tr ',' ' ' <<<"$TYPES"); do
        out=$WORK/$name.$t.gguf
        [ -f "$out" ] || "$LLAMA_DIR/build/bin/llama-quantize" "$bf16" "$out" "$t" >"$WORK/quantize-$name-$t.log" 2>&1 ||
            { tail -n 5 "$WORK/quantize-$name-$t.log" >&2; exit 1; }
        echo "$out"
    done
done
