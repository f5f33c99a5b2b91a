#!/usr/bin/env bash
# GPU machine: a sampler change against its base, the checks and timings of
# docs/benchmarks.md "The sampler's candidates" in one call. Needs
# build-gpu/{infer,gpu_tests} (the change) and build-gpu/{infer,gpu_tests}-base
# (tools/dev/base_binary.sh), both built with the same tests/gpu files.
#   ROWS=FILE MODELS="gemma-3-1b-it llama-3.2-3b-instruct qwen3-4b" ROUNDS=2 \
#     bash tools/dev/sampler_ab.sh CONFIGS_DIR "--temperature 0.8" "--temperature 0.8 --top-p 0.9 --top-k 50" ...
# ROWS: a trained model's logit rows (tools/dev/trained_logit_rows.sh), for
# bench_sampling_model_rows; each further argument is one ARGS of an
# `infer bench` A/B (tools/dev/ab_variants.sh, batch 1 and 8).
set -u
C=${1:?usage: sampler_ab.sh CONFIGS_DIR [BENCH_ARGS ...]}
shift
MODELS=${MODELS:-gemma-3-1b-it llama-3.2-3b-instruct qwen3-4b}
ROUNDS=${ROUNDS:-2}
[ -n "${ROWS:-}" ] && export INFER_BENCH_LOGITS=$ROWS
echo "== gpu_tests sampling_ sample_from_rank_statistics (the change)"
build-gpu/gpu_tests sampling_ sample_from_rank_statistics >/tmp/sampler_ab_tests.txt 2>&1
grep -E "FAIL|^gpu:" /tmp/sampler_ab_tests.txt
grep -E "^\[PASS\] bench" /tmp/sampler_ab_tests.txt
echo "-- the base's benches"
build-gpu/gpu_tests-base bench_sampling 2>&1 | grep -E "^\[PASS\] bench|FAIL"
unset INFER_BENCH_LOGITS
echo "== the same tokens and log-probabilities as the base (10 mixed requests, full graphs)"
mkdir -p /tmp/m /tmp/same
python3 - >/tmp/same/sampler_req.jsonl <<'PY'
import json
for i in range(10):
    r = {"prompt_ids": [1 + (i * 37 + j * 11) % 3000 for j in range(4 + 9 * i)], "max_tokens": 40,
         "temperature": 0.0 if i % 2 == 0 else 0.9, "seed": 100 + i, "logprobs": True, "ignore_eos": True}
    if i == 3: r.update(top_p=0.9, top_k=50)
    if i == 5: r.update(presence_penalty=0.5, logit_bias={"17": 3.0})
    if i == 7: r.update(top_p=0.9)
    if i == 8: r.update(temperature=1.0)
    if i == 9: r.update(min_p=0.05)
    if i in (2, 7): r.update(top_logprobs=5)
    if i == 4: r.update(top_logprobs=20)
    print(json.dumps(r))
PY
for n in $MODELS; do
    [ -f /tmp/m/$n/model.safetensors ] ||
        build-gpu/infer mkmodel --config "$C/$n/config.json" --out /tmp/m/$n --seed 0 >/dev/null
    for b in infer-base infer; do
        build-gpu/$b generate --model /tmp/m/$n --device cuda --input /tmp/same/sampler_req.jsonl --json \
            --cuda-graph-mode full >/tmp/same/$n.$b 2>/tmp/same/$n.$b.err || tail -3 /tmp/same/$n.$b.err
    done
    if cmp -s /tmp/same/$n.infer-base /tmp/same/$n.infer && [ -s /tmp/same/$n.infer ]; then
        echo "$n: same output ($(wc -l </tmp/same/$n.infer) requests, $(wc -c </tmp/same/$n.infer) bytes)"
    else
        echo "$n: DIFFERENT output"
    fi
done
echo "== compute-sanitizer memcheck, sampling_peaked sampling_same_in_any_call"
timeout 200 compute-sanitizer --tool memcheck build-gpu/gpu_tests sampling_peaked sampling_same_in_any_call 2>&1 |
    grep -E "ERROR SUMMARY|^gpu:"
echo "== infer bench A/Bs"
for a in "$@"; do
    ROUNDS=$ROUNDS BATCHES=1,8 ARGS="$a" bash tools/dev/ab_variants.sh "$C" "$MODELS" 'base=build-gpu/infer-base' \
        'new=build-gpu/infer'
done
