#!/usr/bin/env bash
# Issue 17's GPU report for several models in one device call: bench/serve_gpu.sh for each model
# at once, each on a GPU of its own (a machine of several GPUs: nvidia-h100-x2 / -x4), each with
# its own port, work folder and share of the CPU threads. One call of ~8 minutes instead of one a
# model; the servers share the host's CPUs and PCIe, so the report says so beside its figures.
#
# There (repo root; carry what serve_gpu.sh needs):
#   bash bench/serve_gpu_all.sh .carry/models gemma-3-1b-it llama-3.2-3b-instruct qwen3-4b
# An argument is one GPU's work: a model (its whole report), MODEL@infer or MODEL@peer (only that
# part: serve_gpu.sh's PART), or several joined by '+', run one after the other on that GPU:
#   … llama-3.2-3b-instruct@infer+gemma-3-1b-it@peer qwen3-4b@infer gemma-3-1b-it@infer+qwen3-4b@peer …
# spreads three models' six parts over four GPUs. A part may end in ,VAR=VALUE… (no commas in the
# values): serve_gpu.sh's knobs for that part alone (qwen3-4b,WORKLOADS=sharegpt). Brings back $OUT/serve-TAG.tar.gz and
# $OUT/serve-TAG.txt (the run's log) for each (TAG: MODEL, or MODEL-PART); join a model's two
# parts here with bench/merge_reports.sh.
# Without .carry/llama.cpp-cuda-bin.tar.xz, llama.cpp's tools are built here, in the background at
# the lowest CPU priority (JOBS, default three quarters of the cores) while infer's parts run; the
# parts that need them wait for the build. DEADLINE (seconds, default 560) ends every run still
# going then and packs what it has, so a device call's limit never loses a whole report.
# serve_gpu.sh's knobs (PROMPTS, CONFIGS, SWEEP, …) apply to every model.
set -u
export NCCL_NVLS_ENABLE=0
CONFIGS_DIR=${1:?usage: serve_gpu_all.sh CONFIGS_DIR WORK [WORK ...]}
shift
[ $# -ge 1 ] || { echo "usage: serve_gpu_all.sh CONFIGS_DIR WORK [WORK ...]" >&2; exit 2; }
export OUT=${OUT:-/tmp/serve-out} CONFIGS_DIR
export LLAMA_DIR=${LLAMA_DIR:-/tmp/llama.cpp}
gpus=$(nvidia-smi -L | wc -l)
[ "$#" -le "$gpus" ] || { echo "serve_gpu_all: $# GPUs' work but $gpus GPUs" >&2; exit 2; }
mkdir -p "$OUT"
# llama.cpp's source (its converter) once, before the runs that use it start together; its tools
# under the lock serve_gpu.sh waits on (taken here before any run starts)
bash bench/llamacpp/build.sh source >"$OUT/llama-build.txt" 2>&1 || { cat "$OUT/llama-build.txt"; exit 1; }
exec 9>"$LLAMA_DIR.lock"
flock 9
(JOBS=${JOBS:-$(($(nproc) * 3 / 4))} nice -n 19 bash bench/llamacpp/build.sh cuda >>"$OUT/llama-build.txt" 2>&1
    flock -u 9) &
exec 9>&-

tag_of() { # MODEL[@PART][,VAR=VALUE…] -> MODEL or MODEL-PART
    local spec=${1%%,*}
    local name=${spec%@*}
    [ "$spec" = "$name" ] && echo "$name" || echo "$name-${spec#*@}"
}
chain() { # GPU PORT THREADS SPEC[+SPEC ...]: the parts one after the other
    local gpu=$1 port=$2 threads=$3 spec name part tag
    IFS='+' read -r -a specs <<<"$4"
    for spec in "${specs[@]}"; do
        IFS=',' read -r -a knobs <<<"$spec"
        spec=${knobs[0]} knobs=("${knobs[@]:1}")
        name=${spec%@*} part=all tag=$(tag_of "$spec")
        [ "$spec" != "$name" ] && part=${spec#*@}
        env "${knobs[@]}" CUDA_VISIBLE_DEVICES="$gpu" PORT="$port" WORK="/tmp/peer-$tag" THREADS="$threads" \
            PART="$part" bash bench/serve_gpu.sh "$CONFIGS_DIR" "$name" >"$OUT/serve-$tag.txt" 2>&1
    done
}
export -f chain tag_of

threads=$(($(nproc) / $#))
pids=() tags=() i=0
for work in "$@"; do
    IFS='+' read -r -a specs <<<"$work"
    for spec in "${specs[@]}"; do tags+=("$(tag_of "$spec")"); done
    # a process group of its own (setsid), so the deadline ends its servers and load generators too
    setsid bash -c 'chain "$@"' chain "$i" $((18600 + i)) "$threads" "$work" &
    pids+=($!)
    echo "serve_gpu_all: GPU $i: $work (port $((18600 + i)), $threads threads; logs $OUT/serve-TAG.txt)"
    i=$((i + 1))
done
deadline=$((SECONDS + ${DEADLINE:-560}))
while [ $SECONDS -lt $deadline ]; do
    running=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
    [ $running = 0 ] && break
    sleep 2
done
rc=0
for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
        kill -TERM -- "-$p" 2>/dev/null
        sleep 3
        kill -KILL -- "-$p" 2>/dev/null
        rc=1
    fi
    wait "$p" || rc=1
done
for tag in "${tags[@]}"; do
    if [ -d "$OUT/serve-$tag" ]; then # stopped at the deadline, or failed: pack what it has
        echo "serve_gpu_all: $tag did not finish; packing what it has" | tee -a "$OUT/serve-$tag.txt"
        tar czf "$OUT/serve-$tag.tar.gz" -C "$OUT" "serve-$tag"
        rc=1
    fi
    grep -sE "^serve_gpu: " "$OUT/serve-$tag.txt"
done
exit $rc
