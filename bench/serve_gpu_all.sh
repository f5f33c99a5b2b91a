#!/usr/bin/env bash
# Issue 17's GPU report for several models in one device call: bench/serve_gpu.sh for each model
# at once, each on a GPU of its own (a machine of several GPUs: nvidia-h100-x2 / -x4), each with
# its own port, work folder and share of the CPU threads. One call of ~8 minutes instead of one a
# model; the servers share the host's CPUs and PCIe, so the report says so beside its figures.
#
# There (repo root; carry what serve_gpu.sh needs):
#   bash bench/serve_gpu_all.sh .carry/models gemma-3-1b-it llama-3.2-3b-instruct qwen3-4b
# Brings back $OUT/serve-MODEL.tar.gz and $OUT/serve-MODEL.txt (the run's log) for each model.
# serve_gpu.sh's knobs (PROMPTS, CONFIGS, SWEEP, …) apply to every model.
set -u
export NCCL_NVLS_ENABLE=0
CONFIGS_DIR=${1:?usage: serve_gpu_all.sh CONFIGS_DIR MODEL [MODEL ...]}
shift
[ $# -ge 1 ] || { echo "usage: serve_gpu_all.sh CONFIGS_DIR MODEL [MODEL ...]" >&2; exit 2; }
OUT=${OUT:-/tmp/serve-out}
export LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
gpus=$(nvidia-smi -L | wc -l)
[ "$#" -le "$gpus" ] || { echo "serve_gpu_all: $# models but $gpus GPUs (one a model)" >&2; exit 2; }
mkdir -p "$OUT"
# llama.cpp's tools unpacked (or built) once, before the runs that use them start together
bash bench/llamacpp/build.sh cuda >"$OUT/llama-build.txt" 2>&1 || { cat "$OUT/llama-build.txt"; exit 1; }
threads=$(($(nproc) / $#))
pids=() i=0
for name in "$@"; do
    CUDA_VISIBLE_DEVICES=$i PORT=$((18600 + i)) WORK=/tmp/peer-$name THREADS=$threads OUT=$OUT \
        bash bench/serve_gpu.sh "$CONFIGS_DIR" "$name" >"$OUT/serve-$name.txt" 2>&1 &
    pids+=($!)
    echo "serve_gpu_all: $name on GPU $i, port $((18600 + i)), $threads threads (log $OUT/serve-$name.txt)"
    i=$((i + 1))
done
rc=0
for p in "${pids[@]}"; do
    wait "$p" || rc=1
done
for name in "$@"; do
    grep -E "^serve_gpu: " "$OUT/serve-$name.txt"
done
exit $rc
