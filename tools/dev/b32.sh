python3 - > /tmp/b32.jsonl <<'PY'
import json, random
r = random.Random(3)
for _ in range(32):
    print(json.dumps({"prompt_ids": [r.randrange(1000) for _ in range(32)], "max_tokens": 256, "ignore_eos": True}))
PY
M=/tmp/m/llama-3.2-3b-instruct
for args in "decode" "full" "full --piecewise-cuda-graph-tokens 1024" "decode" "full"; do
  echo "== $args"
  INFER_LOG=info build-gpu/infer generate --model $M --device cuda --input /tmp/b32.jsonl --json --max-num-seqs 32 --max-model-len 512 --cuda-graph-mode $args 2>&1 >/dev/null | grep -E "output tok/s|engine step|cuda graphs" | sed 's/.*: 32 requests/32 requests/' | cut -c1-250
done
