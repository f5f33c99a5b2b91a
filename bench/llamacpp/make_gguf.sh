#!/usr/bin/env bash
# One model of ../shared/models with random weights for both engines (GPU machine): `infer mkmodel
# --seed 0` with its family's real tokenizer files (llama.cpp's converter reads them), fitted to the
# embedding rows (fit_vocab.py), then converted to a bf16 GGUF by llama.cpp's own
# convert_hf_to_gguf.py. Skips what already exists. Prints the GGUF's path last (with
# CHECKPOINT_ONLY=1 it stops before the conversion and prints the checkpoint's).
#
# Usage: bash bench/llamacpp/make_gguf.sh CONFIGS_DIR NAME WORK_DIR [LOG]
#   needs $LLAMA_DIR (bench/llamacpp/build.sh source) and WORK_DIR/tokenizers (from
#   .carry/tokenizers.tar.xz, unpacked here when missing); INFER (default build-gpu/infer).
set -u
CONFIGS=${1:?usage: make_gguf.sh CONFIGS_DIR NAME WORK_DIR [LOG]}
NAME=${2:?usage: make_gguf.sh CONFIGS_DIR NAME WORK_DIR [LOG]}
WORK=${3:?usage: make_gguf.sh CONFIGS_DIR NAME WORK_DIR [LOG]}
LOG=${4:-/dev/stderr}
INFER=${INFER:-build-gpu/infer}
LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
mkdir -p "$WORK"
if [ ! -d "$WORK/tokenizers" ]; then
    tar xJf .carry/tokenizers.tar.xz -C "$WORK" || { echo "make_gguf: no .carry/tokenizers.tar.xz" >&2; exit 1; }
fi
case $NAME in
gemma*) family=gemma3 ;;
llama*) family=llama3 ;;
qwen*) family=qwen3 ;;
*) echo "make_gguf: no tokenizer family for '$NAME' (gemma*, llama*, qwen*)" >&2; exit 1 ;;
esac
ck=$WORK/$NAME gguf=$WORK/$NAME.bf16.gguf
if [ ! -f "$ck/model.safetensors" ]; then
    $INFER mkmodel --config "$CONFIGS/$NAME/config.json" --out "$ck" --seed 0 \
        --tokenizer "$WORK/tokenizers/$family" >/dev/null || { echo "make_gguf: mkmodel $NAME failed" >&2; exit 1; }
    # Gemma 3's tokenizer.json adds one token past the model's 262144 rows (an image
    # placeholder); the converter asserts every id is a row. Text never uses it.
    python3 bench/llamacpp/fit_vocab.py "$ck" >>"$LOG" || exit 1
fi
[ -n "${CHECKPOINT_ONLY:-}" ] && { echo "$ck"; exit 0; }
if [ ! -f "$gguf" ]; then
    t0=$SECONDS
    PYTHONPATH=$LLAMA_DIR/gguf-py python3 "$LLAMA_DIR/convert_hf_to_gguf.py" "$ck" --outtype bf16 \
        --outfile "$gguf" >>"$LOG" 2>&1 || { rm -f "$gguf"; echo "make_gguf: converting $NAME failed (log: $LOG)" >&2; exit 1; }
    echo "make_gguf: $NAME converted in $((SECONDS - t0)) s ($(du -h "$gguf" | cut -f1))" >&2
fi
echo "$gguf"
