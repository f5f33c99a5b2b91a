#!/usr/bin/env bash
# infer serve, in each configuration the seed plan compares, beside llama.cpp's
# llama-server on the same GGUF, through `infer bench-serve`, into one report
# folder: the same workloads, the same prompts (token ids), one server at a time.
#
# Usage: bash bench/serve_peers.sh REPORT_DIR GGUF [cpu|cuda]
#   CONFIGS: infer's configurations, "label=flags" separated by ';' (default on cuda: graphs full
#   and none, each with prefix caching on and off; on cpu: prefix caching on and off); RATES
#   (--request-rate, a sweep; default inf); INFER (default build/infer, or build-gpu/infer for
#   cuda), LLAMA_SERVER (default $LLAMA_DIR/build/bin/llama-server; bench/llamacpp/build.sh
#   builds it; NO_PEER=1 skips it; PEER_ONLY=1 runs it alone, no infer configuration), THREADS
#   (CPU threads of both servers; default all cores),
#   WORKLOADS, PROMPTS (requests a run: N for every workload, or "WORKLOAD:N ..." for those named,
#   the others at their own count; empty: each workload's own count), CONTEXT (--max-context), SLOTS
#   (llama-server's parallel sequences; infer schedules up to --max-num-seqs by itself), VOCAB
#   (prompt ids drawn below), INFER_MODEL (what infer serves, default the GGUF: e.g. the
#   checkpoint it was converted from), INFER_ARGS (flags for every infer configuration),
#   LLAMA_CTX (llama-server's -c, default SLOTS x (CONTEXT + 16)), KV_TOKENS (infer's --max-total-tokens:
#   on cpu LLAMA_CTX by default, the same KV capacity as llama-server's; on cuda unset, the memory
#   share decides; KV_TOKENS=0 leaves it to infer's default), LLAMA_ARGS (more llama-server
#   flags, e.g. -kvu: one KV pool shared by the slots), SWEEP ("WORKLOAD:RATES": that workload
#   once more at each request rate, on infer's first configuration and, unless PEER_SWEEP=0, on
#   llama-server; SWEEP_PROMPTS requests a rate, default PROMPTS).
set -u
REPORT=${1:?usage: serve_peers.sh REPORT_DIR GGUF [cpu|cuda]}
GGUF=${2:?usage: serve_peers.sh REPORT_DIR GGUF [cpu|cuda]}
DEVICE=${3:-cpu}
LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
INFER=${INFER:-$([ "$DEVICE" = cuda ] && echo build-gpu/infer || echo build/infer)}
LLAMA_SERVER=${LLAMA_SERVER:-$LLAMA_DIR/build/bin/llama-server}
THREADS=${THREADS:-$(nproc)}
WORKLOADS=${WORKLOADS:-baseline continuous_batching prefix_caching sharegpt}
PROMPTS=${PROMPTS-32}
INFER_MODEL=${INFER_MODEL:-$GGUF}
INFER_ARGS=${INFER_ARGS:-}
LLAMA_ARGS=${LLAMA_ARGS:-}
SWEEP=${SWEEP:-}
CONTEXT=${CONTEXT:-512}
SLOTS=${SLOTS:-16}
VOCAB=${VOCAB:-32000}
RATES=${RATES:-inf}
if [ "$DEVICE" = cuda ]; then
    CONFIGS=${CONFIGS:-"graphs full=--cuda-graph-mode full;graphs none=--cuda-graph-mode none;graphs full, no prefix cache=--cuda-graph-mode full --disable-prefix-caching;graphs none, no prefix cache=--cuda-graph-mode none --disable-prefix-caching"}
else
    CONFIGS=${CONFIGS:-"prefix cache=;no prefix cache=--disable-prefix-caching"}
fi
LLAMA_CTX=${LLAMA_CTX:-$((SLOTS * (CONTEXT + 16)))}
KV_TOKENS=${KV_TOKENS:-$([ "$DEVICE" = cpu ] && echo "$LLAMA_CTX" || echo 0)}
PORT=${PORT:-18600}
mkdir -p "$REPORT"
[ -n "${NO_PEER:-}" ] || [ -x "$LLAMA_SERVER" ] || { echo "serve_peers: no $LLAMA_SERVER (bench/llamacpp/build.sh)" >&2; exit 1; }

wait_up() { # URL LOG PID
    for _ in $(seq 600); do
        curl -sf "$1/health" >/dev/null 2>&1 || curl -sf "$1/v1/models" >/dev/null 2>&1 && return 0
        kill -0 "$3" 2>/dev/null || { tail -n 20 "$2" >&2; return 1; }
        sleep 0.5
    done
    return 1
}

prompts_for() { # WORKLOAD -> PROMPTS' count for it, or nothing (its own)
    case $PROMPTS in
    *:*) for kv in $PROMPTS; do [ "${kv%%:*}" = "$1" ] && echo "${kv#*:}"; done ;;
    *) echo "$PROMPTS" ;;
    esac
}

one_run() { # LABEL URL WORKLOAD RATES
    local n=() count; count=$(prompts_for "$3")
    [ -n "$count" ] && n=(--num-prompts "$count")
    "$INFER" bench-serve --url "$2" --model m --workload "$3" "${n[@]}" --vocab "$VOCAB" \
        --max-context "$CONTEXT" --request-rate "$4" --label "$1" --report "$REPORT" --time-limit 1800 >/dev/null
}

run_all() { # LABEL URL [sweep]
    for w in $WORKLOADS; do
        one_run "$1" "$2" "$w" "$RATES"
    done
    # (a sweep's rates send the lengths of the workload's run above with token ids of their own, so
    # none finds that run's prompts in the prefix cache)
    [ -n "$SWEEP" ] && [ -n "${3:-}" ] && PROMPTS=${SWEEP_PROMPTS:-$PROMPTS} one_run "$1, rate sweep" "$2" \
        "${SWEEP%%:*}" "${SWEEP#*:}"
    return 0
}

ngl=(); [ "$DEVICE" = cuda ] && ngl=(-ngl 99 -fa on)
url=http://127.0.0.1:$PORT
IFS=';' read -r -a configs <<<"$CONFIGS"
[ -n "${PEER_ONLY:-}" ] && configs=()
first=sweep
for c in "${configs[@]}"; do
    label=${c%%=*} flags=${c#*=}
    # shellcheck disable=SC2086 # the configuration's flags split into words
    "$INFER" serve --model "$INFER_MODEL" --port "$PORT" --device "$DEVICE" --threads "$THREADS" \
        --served-model-name m --max-model-len "$((CONTEXT + 16))" --max-total-tokens "$KV_TOKENS" $INFER_ARGS $flags \
        >"$REPORT/infer-serve-${label// /_}.log" 2>&1 &
    pid=$!
    wait_up "$url" "$REPORT/infer-serve-${label// /_}.log" $pid && run_all "infer $DEVICE, $label" "$url" $first
    first=
    kill $pid; wait $pid 2>/dev/null
done
[ -n "${NO_PEER:-}" ] && { echo "serve_peers: $REPORT/report.md"; exit 0; }

# shellcheck disable=SC2086 # LLAMA_ARGS split into words
"$LLAMA_SERVER" -m "$GGUF" --port "$PORT" -t "$THREADS" -np "$SLOTS" -c "$LLAMA_CTX" \
    "${ngl[@]}" $LLAMA_ARGS >"$REPORT/llama-server.log" 2>&1 &
pid=$!
peer_sweep=sweep; [ "${PEER_SWEEP:-1}" = 0 ] && peer_sweep=
wait_up "$url" "$REPORT/llama-server.log" $pid && run_all "llama.cpp $DEVICE" "$url" $peer_sweep
kill $pid; wait $pid 2>/dev/null
echo "serve_peers: $REPORT/report.md"
