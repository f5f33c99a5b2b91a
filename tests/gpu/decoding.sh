#!/usr/bin/env bash
# Speculative and constrained decoding on the GPU machine, from binaries built here by
# `make gpu-build`: for each model, random weights with its family's real tokenizer,
#  - spec: the 64-request check in full-graph mode with --speculative ngram, suffix and draft
#    (the model drafting for itself), each in a 1024-token pool (sequences whose proposals are
#    all kept finish too fast to be preempted otherwise), against eager decoding alone, then batch-1 and batch-8
#    output tok/s on bench-serve's grounded workload, off / ngram / suffix;
#  - constrained: decode tok/s of 1 and 32 chat requests under a JSON Schema against the same
#    requests without it (ignore_eos), alternated, REPS (2) runs each.
# A short table last; logs under $OUT.
#
# On the device (repo root): bash tests/gpu/decoding.sh CONFIGS_DIR TOKENIZERS_DIR [STAGES] [MODELS]
#   CONFIGS_DIR: <model>/config.json; TOKENIZERS_DIR: gemma3/, llama3/, qwen3/ (tokenizer.json and
#   tokenizer_config.json); STAGES: spec,constrained (default both); MODELS: comma-separated names
#   in CONFIGS_DIR (default gemma-3-1b-it,llama-3.2-3b-instruct,qwen3-4b).
set -u
CONFIGS=${1:?usage: decoding.sh CONFIGS_DIR TOKENIZERS_DIR [STAGES] [MODELS]}
TOKS=${2:?usage: decoding.sh CONFIGS_DIR TOKENIZERS_DIR [STAGES] [MODELS]}
STAGES=${3:-spec,constrained}
LIST=${4:-gemma-3-1b-it,llama-3.2-3b-instruct,qwen3-4b}
export INFER_ROOT=${INFER_ROOT:-$PWD}
OUT=${OUT:-/tmp/gpu-out}
B=${B:-build-gpu}
DEVICE=${DEVICE:-cuda} # cpu: a dry run of the script here
MODELS=/tmp/infer-models
mkdir -p "$OUT" "$MODELS"
has() { [[ ",$STAGES," == *",$1,"* ]]; }
table=()

# GET URL: the body, or a failure (the machine may have no curl)
get() { python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" "$1" 2>/dev/null; }

family() { case $1 in gemma*) echo gemma3 ;; llama*) echo llama3 ;; qwen*) echo qwen3 ;; esac; }

model_dir() { # random weights of config $1 with its family's tokenizer, made once
    local d=$MODELS/$1-tok
    [ -f "$d/model.safetensors" ] ||
        $B/infer mkmodel --config "$CONFIGS/$1/config.json" --out "$d" --tokenizer "$TOKS/$(family "$1")" >/dev/null
    echo "$d"
}

# serve MODEL PORT FLAGS...: starts infer serve, waits until it answers
serve() {
    local model=$1 port=$2
    shift 2
    $B/infer serve --model "$model" --device "$DEVICE" --port "$port" "$@" >>"$OUT/serve.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 1 240); do
        get "http://127.0.0.1:$port/health" >/dev/null && return 0
        kill -0 $SERVER 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

if has spec; then
    for name in $(tr ',' ' ' <<<"$LIST"); do
        m=$(model_dir "$name")
        u=0.004; case $name in gemma*) u=0.0006 ;; esac # a pool small enough to preempt
        small="--max-total-tokens 1024"
        python3 tools/engine_check.py $B/infer "$m" --device "$DEVICE" --util $u --graph full \
            --batched-flags "--speculative ngram $small" --batched-flags "--speculative suffix $small" \
            --batched-flags "--speculative draft --speculative-model $m $small" \
            >>"$OUT/spec_check.log" 2>&1
        table+=("$name exactness: $(grep -c -- '-> OK' "$OUT/spec_check.log") runs equal alone so far, $(grep -c -- '-> FAIL' "$OUT/spec_check.log") not")
        vocab=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$m/config.json")
        port=8300
        for method in none ngram suffix; do
            port=$((port + 1))
            flags=(); [ $method = none ] || flags=(--speculative $method)
            if ! serve "$m" $port "${flags[@]}"; then
                table+=("$name $method: the server did not start (serve.log)")
                continue
            fi
            for conc in 1 8; do
                n=$((conc == 1 ? 8 : 24))
                r=$($B/infer bench-serve --url "http://127.0.0.1:$port" --model "$(basename "$m")" --workload grounded \
                    --num-prompts $n --max-concurrency $conc --vocab "$vocab" 2>>"$OUT/bench_serve.err" |
                    tee -a "$OUT/spec_bench.jsonl" | tail -n 1 | python3 -c "import json, sys; r = json.load(sys.stdin)
print(f\"{r['output_tok_s']:.1f} output tok/s, {r['output_tokens']} tokens in {r['duration_s']:.2f} s, TTFT p50 {r['ttft_ms']['p50']:.1f} ms\")")
                spec=$(get "http://127.0.0.1:$port/metrics" | grep -E '^infer_spec_(proposed|accepted)_tokens_total' |
                    awk '{print $2}' | tr '\n' ' ')
                table+=("$name $method batch $conc: $r | proposed, kept so far: $spec")
            done
            kill $SERVER
            wait $SERVER 2>/dev/null
        done
    done
fi

if has constrained; then
    for name in $(tr ',' ' ' <<<"$LIST"); do
        m=$(model_dir "$name")
        for n in 1 32; do
            python3 - "$OUT/c_${name}_$n.jsonl" "$OUT/u_${name}_$n.jsonl" $n <<'PY'
import json, sys
schema = {"type": "object", "properties": {"title": {"type": "string"},
          "paragraphs": {"type": "array", "items": {"type": "string"}}}, "required": ["title", "paragraphs"]}
with open(sys.argv[1], "w") as c, open(sys.argv[2], "w") as u:
    for i in range(int(sys.argv[3])):
        r = {"messages": [{"role": "user", "content": f"Write story {i} about a dragon, as JSON with a title and a "
                           "list of paragraphs."}], "max_tokens": 256, "temperature": 0}
        c.write(json.dumps(dict(r, response_format={"type": "json_schema",
                                                    "json_schema": {"name": "story", "schema": schema}})) + "\n")
        u.write(json.dumps(dict(r, ignore_eos=True)) + "\n")
PY
            for rep in $(seq 1 "${REPS:-2}"); do
                for kind in u c; do
                    f=$OUT/${kind}_${name}_$n
                    INFER_LOG=info $B/infer generate --model "$m" --device "$DEVICE" --input "$f.jsonl" --json >"$f.out" 2>"$f.err"
                    s=$(grep -o '[0-9]* output tokens in.*then [0-9.]* output tok/s' "$f.err")
                    table+=("$name constrained=$([ $kind = c ] && echo yes || echo no) batch $n run $rep: ${s:-$(tail -n 1 "$f.err")}")
                    table+=("    $(grep -o 'engine step, ms on average.*' "$f.err")")
                done
            done
        done
    done
fi

echo
echo "== decoding"
printf '%s\n' "${table[@]}"
