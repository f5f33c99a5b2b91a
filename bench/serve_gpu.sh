#!/usr/bin/env bash
# Issue 17's GPU report, one model a call (GPU machine, repo root): infer serve in the seed
# plan's configurations (graphs full / none x prefix caching on / off; chunked prefill is on
# in all) beside llama.cpp's llama-server on the same weights, every workload of `infer
# bench-serve` at its own request count and real lengths (contexts to 16k), and a request-rate
# sweep, into $OUT/serve-MODEL (results.jsonl, report.md, samples; plots where gnuplot is),
# packed at the end as $OUT/serve-MODEL.tar.gz (the device sends back few files a call).
# Bring it back, unpack it and redraw it here: `build/infer bench-serve --redraw --report DIR`.
#
# Here: make gpu-build; bench/llamacpp/fetch.sh (llama.cpp's source, the tokenizers) and, to
#   save the GPU machine ~5 minutes a call, bench/llamacpp/build.sh pack-cuda (llama.cpp's CUDA
#   tools and converter, built without a GPU: ~40 minutes on 2 cores).
# There (carry build-gpu/infer, .carry/models, .carry/tokenizers.tar.xz, and
#   .carry/llama.cpp-cuda-bin.tar.xz or else .carry/llama.cpp.tar.xz; only the tokenizer families
#   of the models run fit the 64 MiB beside the prebuilt tools):
#   bash bench/serve_gpu.sh .carry/models MODEL      MODEL: a folder of ../shared/models
#
# The model's checkpoint (`infer mkmodel --seed 0`, its family's tokenizer) is what infer
# serves; llama.cpp serves the bf16 GGUF its converter makes of it: the same weights. Both
# schedule up to 64 sequences (infer --max-num-seqs 64; llama-server -np 64 with one KV pool of
# 327680 tokens shared by the slots, -kvu: paged_attention holds 16 contexts of up to 16512
# tokens at once), flash attention on, every layer on the GPU.
# Knobs (serve_peers.sh's): WORKLOADS, PROMPTS (default: continuous_batching 128,
# chunked_prefill, prefix_caching and sharegpt 64 requests, the others their own count; both
# engines run the same requests, and llama-server's CPU sampler over a 128k-262k vocabulary
# makes its full counts take many minutes; empty: each workload's own), CONFIGS, SWEEP
# ("WORKLOAD:RATES", default sharegpt at 4, 16, 64 requests/s and all at once, SWEEP_PROMPTS
# requests each, default 64; on infer's first configuration, and on llama-server with
# PEER_SWEEP=1), NO_PEER=1. PART=infer or PART=peer runs only infer's configurations or only
# llama-server (into serve-MODEL-PART), so two GPUs can share a slow model's report: join the two
# folders here with bench/merge_reports.sh.
set -u
export NCCL_NVLS_ENABLE=0
CONFIGS_DIR=${1:?usage: serve_gpu.sh CONFIGS_DIR MODEL}
NAME=${2:?usage: serve_gpu.sh CONFIGS_DIR MODEL}
OUT=${OUT:-/tmp/serve-out}
WORK=${WORK:-/tmp/peer}
export LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
export INFER=build-gpu/infer
PART=${PART:-all}
case $PART in
all) TAG=$NAME ;;
infer) TAG=$NAME-infer; export NO_PEER=1 CHECKPOINT_ONLY=1 ;;
peer) TAG=$NAME-peer; export PEER_ONLY=1 ;;
*) echo "serve_gpu: PART is all, infer or peer, not '$PART'" >&2; exit 2 ;;
esac
REPORT=$OUT/serve-$TAG
mkdir -p "$REPORT" "$WORK"
{
    # the GPU this run uses (serve_gpu_all.sh gives each model its own through CUDA_VISIBLE_DEVICES)
    nvidia-smi -i "${CUDA_VISIBLE_DEVICES:-0}" --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | head -n 1
    git rev-parse --short HEAD 2>/dev/null
    date -u +%FT%TZ
} | tee "$REPORT/machine.txt"
t0=$SECONDS
# llama.cpp: its converter first; its tools (llama-server) under a lock, so that a run of
# serve_gpu_all.sh that is building them already is waited for, not raced.
if [ "$PART" != infer ]; then
    bash bench/llamacpp/build.sh source >"$REPORT/llama-build.txt" 2>&1 || { cat "$REPORT/llama-build.txt"; exit 1; }
fi
gguf=$(bash bench/llamacpp/make_gguf.sh "$CONFIGS_DIR" "$NAME" "$WORK" "$REPORT/convert.log") || exit 1
if [ "$PART" != infer ]; then
    flock "$LLAMA_DIR.lock" bash bench/llamacpp/build.sh cuda >>"$REPORT/llama-build.txt" 2>&1 ||
        { cat "$REPORT/llama-build.txt"; exit 1; }
fi
vocab=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); print(c.get('vocab_size') or c['text_config']['vocab_size'])" \
    "$CONFIGS_DIR/$NAME/config.json")
echo "serve_gpu: $NAME ready in $((SECONDS - t0)) s (vocab $vocab)"

# shellcheck disable=SC2097,SC2098 # the values are meant for serve_peers.sh only
INFER_MODEL=$WORK/$NAME INFER_ARGS="--max-num-seqs 64" SLOTS=64 LLAMA_CTX=327680 LLAMA_ARGS=-kvu \
    CONTEXT=${CONTEXT:-16512} VOCAB=$vocab PEER_SWEEP=${PEER_SWEEP:-0} \
    PROMPTS=${PROMPTS-continuous_batching:128 chunked_prefill:64 prefix_caching:64 sharegpt:64} \
    WORKLOADS=${WORKLOADS:-baseline continuous_batching paged_attention chunked_prefill prefix_caching sharegpt} \
    SWEEP=${SWEEP:-sharegpt:4,16,64,inf} SWEEP_PROMPTS=${SWEEP_PROMPTS:-64} \
    LLAMA_SERVER=$LLAMA_DIR/build/bin/llama-server bash bench/serve_peers.sh "$REPORT" "$gguf" cuda
echo "serve_gpu: $NAME done in $((SECONDS - t0)) s"
python3 - "$REPORT/results.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['label']:45} {r['workload']:20} rate {str(r['request_rate']):4} "
          f"{r.get('completed')}/{r.get('requests')} ok, {r.get('duration_s', 0):.1f} s, failed {r.get('failed')}")
PY
tar czf "$OUT/serve-$TAG.tar.gz" -C "$OUT" "serve-$TAG" && rm -rf "$REPORT" && echo "serve_gpu: $OUT/serve-$TAG.tar.gz"
