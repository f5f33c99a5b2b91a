#!/usr/bin/env bash
# Device-side (not CI): whole-step A/B of the one-row GEMV variant of each
# named shape (INFER_GEMV_AT, cuda_gemm.c), batch 1, full graphs, through
# tools/dev/ab_variants.sh: the launcher's own choice (base), then for each
# shape every prefetch-hinted variant (tiles 1|2 x unroll 2|4; gated shapes,
# named gu: tiles 2, unroll 2|4, hint 0|1). Usage:
#   ROUNDS=2 bash tools/dev/gemv_sweep.sh CONFIGS_DIR MODEL name=N:K ...
#   e.g. ... qwen3-4b qkv=6144:2560 o=2560:4096 gu=19456:2560 down=2560:9728
set -u
C=${1:?configs}; MODEL=${2:?model}; shift 2
vs=('base=build-gpu/infer')
for sh in "$@"; do
    name=${sh%%=*}; nk=${sh#*=}
    for v in 1:2:1 2:2:1 1:4:1 2:4:1 2:2:0 2:4:0; do
        case $name in
        gu) [ "${v%%:*}" = 2 ] || continue ;;
        *) [ "${v##*:}" = 1 ] || continue ;;
        esac
        vs+=("$name${v//:/}=build-gpu/infer INFER_GEMV_AT=$nk:$v")
    done
done
BATCHES=1 bash tools/dev/ab_variants.sh "$C" "$MODEL" "${vs[@]}"
