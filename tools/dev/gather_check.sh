#!/usr/bin/env bash
# Device-side (not CI), 2+ GPUs: the logits' gather over CUDA IPC (logits_gather.h). Its kernel test,
# then per model TP (2) prompt + decode logits with the IPC gather bit-equal to NCCL's
# (`INFER_GATHER=nccl`). Usage: [TP=4] bash tools/dev/gather_check.sh CONFIGS_DIR ["model ..."]
set -u
export NCCL_NVLS_ENABLE=0
C=${1:?configs}; MODELS=${2:-"llama-3.2-3b-instruct qwen3-4b gemma-3-1b-it"}
B=build-gpu
TP=${TP:-2}
$B/gpu_tests logits_gather | tail -n 2
mkdir -p /tmp/m
ids=$(python3 -c "print(','.join(str((i * 7919) % 5000 + 10) for i in range(40)))")
for n in $MODELS; do
    [ -f /tmp/m/$n/model.safetensors ] || $B/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for g in ipc nccl; do
        INFER_GATHER=$g timeout 120 $B/infer logits --model /tmp/m/$n --device cuda --tp $TP --ids "$ids" --prefill 32 \
            --out /tmp/lg-$n-$g.safetensors 2>/tmp/lg-$n-$g.err || tail -n 3 /tmp/lg-$n-$g.err
    done
    grep -h "logits gathered" /tmp/lg-$n-ipc.err /tmp/lg-$n-nccl.err | sed 's/^/  /'
    cmp /tmp/lg-$n-ipc.safetensors /tmp/lg-$n-nccl.safetensors && echo "$n: TP $TP logits (32-token prompt, 8 decode steps) bit-equal, IPC gather vs NCCL"
done
