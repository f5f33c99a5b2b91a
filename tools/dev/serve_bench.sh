#!/usr/bin/env bash
# Device-side (not CI), the serve-under-load record: for each model (random weights from its config.json,
# with its real tokenizer and chat template), `infer serve` on CUDA with --cuda-graph-mode none and
# then full, and bench/serve_load.py: N streaming chat requests at concurrency 1, 8, 64.
# Usage: bash tools/dev/serve_bench.sh CONFIGS_DIR TOKENIZERS_DIR name:tokenizer ...
#        (tokenizer dirs hold tokenizer.json or tokenizer.json.gz; N=500 MAXTOK=64 MODES="none full")
set -u
C=${1:?configs}; T=${2:?tokenizers}; shift 2
N=${N:-500}; MAXTOK=${MAXTOK:-64}; MODES=${MODES:-none full}; CONC=${CONC:-1,8,64}
mkdir -p /tmp/m /tmp/tok
for spec in "$@"; do
    n=${spec%%:*}; t=${spec##*:}
    mkdir -p /tmp/tok/$t && cp "$T/$t"/tokenizer_config.json /tmp/tok/$t/
    [ -f /tmp/tok/$t/tokenizer.json ] || { [ -f "$T/$t/tokenizer.json.gz" ] && gunzip -c "$T/$t/tokenizer.json.gz" >/tmp/tok/$t/tokenizer.json || cp "$T/$t/tokenizer.json" /tmp/tok/$t/; }
    [ -f /tmp/m/$n/model.safetensors ] || build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 --tokenizer /tmp/tok/$t >/dev/null
    for mode in $MODES; do
        build-gpu/infer serve --model /tmp/m/$n --device cuda --port 0 --served-model-name $n --cuda-graph-mode $mode \
            --max-num-seqs 64 2>/tmp/serve_${n}_${mode}.log &
        pid=$!
        url=""
        for _ in $(seq 600); do
            url=$(grep -o "http://[0-9.:]*" /tmp/serve_${n}_${mode}.log | head -1)
            [ -n "$url" ] && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.5
        done
        [ -n "$url" ] || { echo "$n $mode: serve did not start"; tail -5 /tmp/serve_${n}_${mode}.log; kill $pid; continue; }
        grep "cuda graphs" /tmp/serve_${n}_${mode}.log | sed "s/^/$n $mode /"
        python3 bench/serve_load.py "$url" $n --requests $N --max-tokens $MAXTOK --concurrency $CONC | sed "s/^/$n $mode /"
        kill -TERM $pid; wait $pid; echo "$n $mode: exit $?"
    done
done
