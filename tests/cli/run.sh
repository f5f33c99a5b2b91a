#!/usr/bin/env bash
# CLI tests: mkmodel / info / generate on the tiny fixtures, determinism, and
# that malformed checkpoints and bad flags fail with a message naming the
# problem. Usage: INFER=path/to/infer bash tests/cli/run.sh
set -u
INFER=${INFER:-build/infer}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIX=$ROOT/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "[PASS] $1"; }
bad() { failed=$((failed + 1)); echo "[FAIL] $1"; }

# expect_fail NAME NEEDLE CMD...: CMD must exit non-zero and print NEEDLE on stderr
expect_fail() {
    local name=$1 needle=$2
    shift 2
    if "$@" >"$TMP/out" 2>"$TMP/err"; then
        bad "$name: exited 0"
    elif ! grep -qF -- "$needle" "$TMP/err"; then
        bad "$name: stderr lacks '$needle': $(head -c 300 "$TMP/err")"
    else
        ok "$name"
    fi
}

# sum of element counts in a safetensors header, read independently of infer
st_numel() {
    python3 - "$1" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
total = 0
for k, v in h.items():
    if k == "__metadata__":
        continue
    c = 1
    for d in v["shape"]:
        c *= d
    total += c
print(total)
PY
}

for m in llama qwen3 gemma3; do
    cfg=$FIX/tiny-$m/config.json
    "$INFER" mkmodel --config "$cfg" --out "$TMP/$m-a" --seed 3 --threads 1 >/dev/null &&
        "$INFER" mkmodel --config "$cfg" --out "$TMP/$m-b" --seed 3 --threads 2 >/dev/null &&
        "$INFER" mkmodel --config "$cfg" --out "$TMP/$m-c" --seed 4 >/dev/null
    if cmp -s "$TMP/$m-a/model.safetensors" "$TMP/$m-b/model.safetensors"; then
        ok "$m: mkmodel is deterministic across thread counts"
    else
        bad "$m: mkmodel output depends on the thread count"
    fi
    if cmp -s "$TMP/$m-a/model.safetensors" "$TMP/$m-c/model.safetensors"; then
        bad "$m: different seeds gave the same weights"
    else
        ok "$m: the seed changes the weights"
    fi
    params=$("$INFER" info --model "$TMP/$m-a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["parameters"])')
    if [ "$params" = "$(st_numel "$TMP/$m-a/model.safetensors")" ]; then
        ok "$m: info counts $params parameters, as the file holds"
    else
        bad "$m: info says $params parameters, the file holds $(st_numel "$TMP/$m-a/model.safetensors")"
    fi
    a=$("$INFER" generate --model "$FIX/tiny-$m" --prompt-ids 3,1,4,1,5,9,2,6 --max-tokens 12 --json --threads 1 2>/dev/null)
    b=$("$INFER" generate --model "$FIX/tiny-$m" --prompt-ids 3,1,4,1,5,9,2,6 --max-tokens 12 --json --threads 2 2>/dev/null)
    if [ -n "$a" ] && [ "$a" = "$b" ] &&
        echo "$a" | python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["completion_tokens"]==len(o["ids"])>0 and o["prompt_tokens"]==8 and o["finish_reason"] in ("stop","length")'; then
        ok "$m: greedy generate is deterministic and prints the contract's object"
    else
        bad "$m: generate output '$a' vs '$b'"
    fi
done

# --max-total-tokens: a KV cache of exactly one full context gives the same greedy output
a=$("$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 3,1,4,1,5,9,2,6 --max-tokens 12 --json --max-model-len 64 2>/dev/null)
b=$("$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 3,1,4,1,5,9,2,6 --max-tokens 12 --json --max-model-len 64 \
    --max-total-tokens 64 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    ok "--max-total-tokens of one context: the same greedy output"
else
    bad "--max-total-tokens 64: '$b' vs '$a'"
fi
expect_fail "--max-total-tokens below one context" "holds less than one full context of 64 (--max-model-len)" \
    "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 3,1,4 --max-tokens 4 --max-model-len 64 --max-total-tokens 48

# --speculative ngram: the same greedy output (a prompt that repeats itself, so proposals are made)
a=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8,5,6,7,8,5,6,7,8,5,6 --max-tokens 24 --json 2>/dev/null)
b=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8,5,6,7,8,5,6,7,8,5,6 --max-tokens 24 --json \
    --speculative ngram --num-speculative-tokens 3 --prompt-lookup-min 1 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    ok "--speculative ngram: the same greedy output"
else
    bad "--speculative ngram: '$b' vs '$a'"
fi
# --speculative suffix: the same greedy output
b=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8,5,6,7,8,5,6,7,8,5,6 --max-tokens 24 --json \
    --speculative suffix --num-speculative-tokens 8 --suffix-min-prob 0 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    ok "--speculative suffix: the same greedy output"
else
    bad "--speculative suffix: '$b' vs '$a'"
fi
# --speculative draft: the model drafting for itself (its own sampled draws on the same noise, so
# nearly all kept), and a smaller random model of the same vocabulary: the same sampled output
a=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8 --max-tokens 24 --json --temperature 0.8 \
    --seed 7 2>/dev/null)
b=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8 --max-tokens 24 --json --temperature 0.8 \
    --seed 7 --speculative draft --speculative-model "$FIX/tiny-qwen3" 2>"$TMP/err")
if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "speculative decoding: [1-9]" "$TMP/err"; then
    ok "--speculative draft: the same seeded output, proposals kept"
else
    bad "--speculative draft: '$b' vs '$a' ($(grep speculative "$TMP/err"))"
fi
python3 - "$FIX/tiny-qwen3/config.json" "$TMP/draft.json" "$TMP/vocab.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
json.dump(dict(c, num_hidden_layers=1), open(sys.argv[2], "w"))
json.dump(dict(c, vocab_size=c["vocab_size"] // 2), open(sys.argv[3], "w"))
PY
"$INFER" mkmodel --config "$TMP/draft.json" --out "$TMP/draft" --seed 5 >/dev/null
"$INFER" mkmodel --config "$TMP/vocab.json" --out "$TMP/vocab" --seed 5 >/dev/null
b=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 5,6,7,8 --max-tokens 24 --json --temperature 0.8 \
    --seed 7 --speculative draft --speculative-model "$TMP/draft" 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    ok "--speculative draft: a one-layer random draft, the same seeded output"
else
    bad "--speculative draft (one-layer draft): '$b' vs '$a'"
fi
expect_fail "a draft of another vocabulary" "a vocabulary of 512 tokens, the model's has 1024" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative draft \
    --speculative-model "$TMP/vocab"
expect_fail "a draft that is not there" "$TMP/no-such-draft" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative draft \
    --speculative-model "$TMP/no-such-draft"
expect_fail "--speculative draft without a model" "--speculative draft needs --speculative-model" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative draft
expect_fail "--speculative-model without draft" "--speculative-model needs --speculative draft" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative-model "$FIX/tiny-qwen3"
expect_fail "a suffix flag with prompt lookup" "--suffix-max-depth needs --speculative suffix" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative ngram \
    --suffix-max-depth 8
expect_fail "a prompt lookup flag with suffix decoding" "--prompt-lookup-min needs --speculative ngram" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative suffix \
    --prompt-lookup-min 2
expect_fail "speculation flags without --speculative" "--num-speculative-tokens needs --speculative" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --num-speculative-tokens 3
expect_fail "--prompt-lookup-min above max" "--prompt-lookup-min 4 is above --prompt-lookup-max 3" \
    "$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 3,1,4 --max-tokens 4 --speculative ngram \
    --prompt-lookup-min 4 --prompt-lookup-max 3

# a sharded checkpoint (index + two shards, split by an independent writer)
# gives exactly the same output as the single file
python3 - "$FIX/tiny-qwen3" "$TMP/sharded" <<'PY'
import json, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
shutil.copy(os.path.join(src, "config.json"), dst)
with open(os.path.join(src, "model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
header.pop("__metadata__", None)
names = sorted(header)
halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
weight_map = {}
for fname, part in halves.items():
    h, blobs, off = {}, [], 0
    for k in part:
        b, e = header[k]["data_offsets"]
        blobs.append(data[b:e])
        h[k] = {"dtype": header[k]["dtype"], "shape": header[k]["shape"], "data_offsets": [off, off + e - b]}
        off += e - b
        weight_map[k] = fname
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    with open(os.path.join(dst, fname), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {}, "weight_map": weight_map}, f)
PY
a=$("$INFER" generate --model "$FIX/tiny-qwen3" --prompt-ids 7,7,7,1 --max-tokens 8 2>/dev/null)
b=$("$INFER" generate --model "$TMP/sharded" --prompt-ids 7,7,7,1 --max-tokens 8 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "sharded checkpoint generates as the single file does"; else bad "sharded: '$b' vs '$a'"; fi
rm "$TMP/sharded/model-00002-of-00002.safetensors"
expect_fail "missing shard" "model-00002-of-00002.safetensors" "$INFER" generate --model "$TMP/sharded" --prompt-ids 1

# --tokenizer copies the tokenizer files in
mkdir -p "$TMP/tok" && echo '{"model": {}}' >"$TMP/tok/tokenizer.json" && echo '{}' >"$TMP/tok/tokenizer_config.json"
if "$INFER" mkmodel --config "$FIX/tiny-llama/config.json" --out "$TMP/withtok" --tokenizer "$TMP/tok" >/dev/null &&
    cmp -s "$TMP/tok/tokenizer.json" "$TMP/withtok/tokenizer.json" && cmp -s "$TMP/tok/tokenizer_config.json" "$TMP/withtok/tokenizer_config.json"; then
    ok "mkmodel --tokenizer copies tokenizer.json and tokenizer_config.json"
else
    bad "mkmodel --tokenizer"
fi
expect_fail "mkmodel --tokenizer without tokenizer.json" "tokenizer.json" "$INFER" mkmodel --config "$FIX/tiny-llama/config.json" --out "$TMP/x2" --tokenizer "$TMP"

# text prompts through the model directory's tokenizer (a tiny model with the
# real Qwen3 vocabulary, so that every id decodes)
TOK=${INFER_SHARED:-$ROOT/../shared}/tokenizers/qwen3
if [ -f "$TOK/tokenizer.json" ]; then
    mkdir -p "$TMP/qtok-cfg" &&
        sed 's/"vocab_size": 1024/"vocab_size": 151669/' "$FIX/tiny-qwen3/config.json" >"$TMP/qtok-cfg/config.json"
    "$INFER" mkmodel --config "$TMP/qtok-cfg/config.json" --out "$TMP/qtok" --tokenizer "$TOK" >/dev/null
    out=$("$INFER" generate --model "$TMP/qtok" --prompt "Hello, world" --max-tokens 6 --json 2>/dev/null)
    want_prompt=$("$INFER" tokenize --model "$TOK" --text "Hello, world")
    if echo "$out" | python3 -c '
import json, subprocess, sys
o = json.load(sys.stdin)
prompt = json.loads(sys.argv[1])
text = subprocess.run([sys.argv[2], "detokenize", "--model", sys.argv[3], "--skip-special", "--ids",
                       ",".join(map(str, o["ids"]))], capture_output=True, text=True, check=True).stdout
assert o["prompt_tokens"] == len(prompt), (o, prompt)
assert o["text"] == text, (o["text"], text)
' "$want_prompt" "$INFER" "$TOK"; then
        ok "generate --prompt encodes with the tokenizer and returns decoded text"
    else
        bad "generate --prompt: $out"
    fi
    # --chat: the prompt goes through the chat template, encoded without added specials
    out=$("$INFER" generate --model "$TMP/qtok" --prompt "What is the capital of France?" --chat --max-tokens 3 --json 2>/dev/null)
    echo '{"messages": [{"role": "user", "content": "What is the capital of France?"}], "add_generation_prompt": true}' >"$TMP/chat.jsonl"
    "$INFER" template --model "$TMP/qtok" --messages "$TMP/chat.jsonl" >"$TMP/rendered.jsonl"
    rendered=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()))' "$TMP/rendered.jsonl")
    n_want=$("$INFER" tokenize --model "$TOK" --file "$TMP/rendered.jsonl" --no-special | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    if [ -n "$out" ] && [ "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt_tokens"])')" = "$n_want" ] &&
        [[ "$rendered" == "<|im_start|>user"* ]]; then
        ok "generate --chat renders the chat template ($n_want prompt tokens)"
    else
        bad "generate --chat: '$out', rendered '$rendered', want $n_want tokens"
    fi
    # --input with text: stop strings cut the text; messages go through the chat template
    full=$("$INFER" generate --model "$TMP/qtok" --prompt-ids 100,200,300 --max-tokens 24 --ignore-eos --json 2>/dev/null)
    stop=$(echo "$full" | python3 -c '
import json, sys
t = json.load(sys.stdin)["text"]
# a stop string at its first occurrence, past the first few characters
for i in range(4, len(t) - 3):
    s = t[i:i + 3]
    if t.find(s) == i and s.strip():
        print(json.dumps(s)); break
')
    printf '{"prompt_ids": [100, 200, 300], "max_tokens": 24, "ignore_eos": true, "stop": ["zzzz", %s]}\n{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 3}\n' "${stop:-null}" >"$TMP/text.jsonl"
    if [ -n "$stop" ] && "$INFER" generate --model "$TMP/qtok" --input "$TMP/text.jsonl" --json >"$TMP/t1" 2>/dev/null &&
        python3 - "$TMP/t1" "$full" "$stop" "$n_want" <<'PY'
import json, sys
res = {o["request"]: o for o in map(json.loads, open(sys.argv[1]))}
full, stop, n_want = json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
cut = full["text"][:full["text"].find(stop)]
assert res[0]["finish_reason"] == "stop" and res[0]["text"] == cut, (res[0], cut)
assert res[0]["ids"] == full["ids"][:len(res[0]["ids"])] and len(res[0]["ids"]) < len(full["ids"])
assert res[1]["prompt_tokens"] == n_want, res[1]
PY
    then
        ok "generate --input: a stop string cuts the text; messages use the chat template"
    else
        bad "generate --input with text: $(cat "$TMP/t1") / $full / $stop"
    fi
    expect_fail "--chat without --prompt" "--chat" "$INFER" generate --model "$TMP/qtok" --prompt-ids 1 --chat
    expect_fail "--prompt without a tokenizer" "tokenizer.json" "$INFER" generate --model "$FIX/tiny-llama" --prompt "hi"
    expect_fail "--prompt and --prompt-ids together" "exactly one" "$INFER" generate --model "$TMP/qtok" --prompt "hi" --prompt-ids 1
else
    echo "[SKIP] generate --prompt: $TOK/tokenizer.json not found (set INFER_SHARED)"
fi

# a grammar over the model's rows, whatever the tokenizer holds: Gemma 3's tokenizer has 262,145 ids
# for its text models' 262,144 rows, Qwen3's 151,669 for 151,936 (padding rows no grammar allows)
SHARED_TOKS=${INFER_SHARED:-$ROOT/../shared}/tokenizers
for pair in gemma3:tiny-gemma3:262144 qwen3:tiny-qwen3:151936; do
    IFS=: read -r fam fix rows <<<"$pair"
    if [ ! -f "$SHARED_TOKS/$fam/tokenizer.json" ]; then
        echo "[SKIP] a grammar on $fam's tokenizer: $SHARED_TOKS/$fam/tokenizer.json not found (set INFER_SHARED)"
        continue
    fi
    mkdir -p "$TMP/g-$fam-cfg" &&
        python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["vocab_size"] = int(sys.argv[2]); json.dump(c, open(sys.argv[3], "w"))' \
            "$FIX/$fix/config.json" "$rows" "$TMP/g-$fam-cfg/config.json"
    "$INFER" mkmodel --config "$TMP/g-$fam-cfg/config.json" --out "$TMP/g-$fam" --tokenizer "$SHARED_TOKS/$fam" >/dev/null
    echo '{"messages": [{"role": "user", "content": "A JSON object, please."}], "max_tokens": 12, "response_format": {"type": "json_schema", "json_schema": {"name": "o", "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}}' >"$TMP/g-$fam.jsonl"
    if "$INFER" generate --model "$TMP/g-$fam" --input "$TMP/g-$fam.jsonl" --json >"$TMP/g-$fam.out" 2>"$TMP/g-$fam.err" &&
        python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); assert o["text"].startswith("{") and max(o["ids"]) < int(sys.argv[2]), o' \
            "$TMP/g-$fam.out" "$rows"; then
        ok "a grammar on $fam's tokenizer ($rows model rows): constrained output"
    else
        bad "a grammar on $fam's tokenizer: $(cat "$TMP/g-$fam.out" "$TMP/g-$fam.err" | tail -n 3)"
    fi
done

# generate --input: a JSONL file of requests through the engine
cat >"$TMP/batch.jsonl" <<'EOF'
{"prompt_ids": [3, 1, 4, 1, 5, 9, 2, 6], "max_tokens": 12}
{"prompt_ids": [2, 7, 1, 8, 2, 8], "max_tokens": 7, "temperature": 0.8, "seed": 11, "n": 2}

{"prompt_ids": [1, 2, 3], "max_tokens": 3, "logprobs": true, "top_logprobs": 2}
EOF
single=$("$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 3,1,4,1,5,9,2,6 --max-tokens 12 --json 2>/dev/null)
single3=$("$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2,3 --max-tokens 3 --json 2>/dev/null)
if "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/batch.jsonl" --json >"$TMP/b1" 2>"$TMP/b1.err" &&
    "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/batch.jsonl" --json --max-num-seqs 1 \
        --max-num-batched-tokens 4 --disable-prefix-caching >"$TMP/b2" 2>/dev/null &&
    python3 - "$TMP/b1" "$TMP/b2" "$single" "$single3" "$TMP/b1.err" <<'PY'
import json, sys
def load(p):
    return {(o["request"], o["index"]): o for o in map(json.loads, open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
single, single3 = json.loads(sys.argv[3]), json.loads(sys.argv[4])
assert sorted(a) == [(0, 0), (1, 0), (1, 1), (2, 0)], sorted(a)
assert a[(0, 0)]["ids"] == single["ids"] and a[(2, 0)]["ids"] == single3["ids"], "batch differs from alone"
assert a == b, "outputs depend on the batch mix or the prefix cache"
assert a[(1, 0)]["ids"] != a[(1, 1)]["ids"], "the two choices drew the same tokens"
assert all(o["completion_tokens"] == len(o["ids"]) for o in a.values())
lp = a[(2, 0)]["logprobs"]["content"]
assert len(lp) == 3 and all(len(t["top_logprobs"]) == 2 and t["logprob"] <= 0 for t in lp), lp
assert "logprobs" not in a[(0, 0)]
err = open(sys.argv[5]).read()
assert "3 requests (4 choices), 17 prompt + 29 output tokens" in err, err
PY
then
    ok "generate --input runs every request through the engine (alone outputs, n choices, logprobs, summary)"
else
    bad "generate --input: $(head -c 600 "$TMP/b1") $(cat "$TMP/b1.err")"
fi
# requests sharing a long prefix hit the prefix cache; the outputs do not change
python3 -c '
import json
sys_prompt = [(j * 37 + 5) % 1000 for j in range(80)]
for i in range(6):
    print(json.dumps({"prompt_ids": sys_prompt + [i + 1, 2 * i + 3], "max_tokens": 6}))
' >"$TMP/shared.jsonl"
"$INFER" generate --model "$FIX/tiny-qwen3" --input "$TMP/shared.jsonl" --json --max-num-seqs 1 >"$TMP/s1" 2>"$TMP/s1.err"
"$INFER" generate --model "$FIX/tiny-qwen3" --input "$TMP/shared.jsonl" --json --max-num-seqs 1 --disable-prefix-caching >"$TMP/s2" 2>"$TMP/s2.err"
if [ "$(sort "$TMP/s1")" = "$(sort "$TMP/s2")" ] && [ "$(wc -l <"$TMP/s1")" = 6 ] &&
    grep -q "prefix cache: 400 of 492 prompt tokens hit" "$TMP/s1.err" && grep -q "prefix cache: 0 of 0 prompt" "$TMP/s2.err"; then
    ok "shared prompt prefixes hit the prefix cache (5 x 80 tokens), outputs as with --disable-prefix-caching"
else
    bad "prefix cache: $(cat "$TMP/s1.err" "$TMP/s2.err")"
fi
# a bad line is named by line number and field, and nothing runs
printf '{"prompt_ids": [1, 2]}\n\n{"prompt_ids": [1], "temperature": "hot"}\n' >"$TMP/bad1.jsonl"
expect_fail "--input: wrong type names line and field" "bad1.jsonl line 3: 'temperature' must be a number" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad1.jsonl"
if [ -s "$TMP/out" ]; then bad "--input: output written before the bad line was refused"; fi
printf '{"prompt_ids": [1], "max_token": 5}\n' >"$TMP/bad2.jsonl"
expect_fail "--input: unknown field" "line 1: unknown field \"max_token\"" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad2.jsonl"
printf '{"prompt_ids": [1]}\n{"prompt_ids": [1]\n' >"$TMP/bad3.jsonl"
expect_fail "--input: broken JSON" "line 2: not valid JSON" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad3.jsonl"
printf '{"prompt": "hi"}\n' >"$TMP/bad4.jsonl"
expect_fail "--input: text prompt without a tokenizer" "bad4.jsonl line 1: prompt: the model has no tokenizer" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad4.jsonl"
printf '{"prompt_ids": [1, 5000]}\n' >"$TMP/bad5.jsonl"
expect_fail "--input: id outside the vocabulary" "bad5.jsonl line 1: 'prompt_ids[1]' must be a token id in [0, " "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad5.jsonl"
printf '{"prompt_ids": [1], "n": 0}\n' >"$TMP/bad6.jsonl"
expect_fail "--input: n out of range" "bad6.jsonl line 1: 'n' must be an integer in [1, 128]" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad6.jsonl"
printf '{"prompt_ids": [1], "top_p": 0}\n' >"$TMP/bad7.jsonl"
expect_fail "--input: top_p out of range" "bad7.jsonl line 1: 'top_p' must be a number in (0, 1]" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/bad7.jsonl"
expect_fail "--cuda-graph-mode: unknown mode" "--cuda-graph-mode: unknown mode 'sometimes'" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode sometimes
expect_fail "--cuda-graph-mode full needs cuda" "--cuda-graph-mode full needs --device cuda" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode full
expect_fail "--cuda-graph-mode piecewise needs cuda" "--cuda-graph-mode piecewise needs --device cuda" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode piecewise
expect_fail "--cuda-graph-mode decode needs cuda" "--cuda-graph-mode decode needs --device cuda" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode decode
expect_fail "--piecewise-cuda-graph-tokens with decode" "--piecewise-cuda-graph-tokens needs --cuda-graph-mode piecewise or full" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode decode --piecewise-cuda-graph-tokens 16,32
expect_fail "--piecewise-cuda-graph-max-tokens on the cpu" "--piecewise-cuda-graph-max-tokens needs CUDA graphs (--device cpu has none)" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --piecewise-cuda-graph-max-tokens 64
expect_fail "--piecewise-cuda-graph-tokens not a list" "piecewise-cuda-graph-tokens" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-mode full --piecewise-cuda-graph-tokens 16,x
expect_fail "--cuda-graph-bs on the cpu" "--cuda-graph-bs needs CUDA graphs (--device cpu has none)" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --temperature 0.5 --cuda-graph-bs 1,2
expect_fail "--stop with --input" "--stop: give \"stop\" in each line of --input instead" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/batch.jsonl" --stop x
expect_fail "--stop empty" "--stop: the text is empty" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --stop ""
expect_fail "--stop without a tokenizer" "--stop: $FIX/tiny-llama has no tokenizer to match the text with" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --stop x
expect_fail "--device unknown" "--device: unknown device 'tpu' (cpu, cpu-reference, cuda or auto)" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --device tpu
if "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,2 --max-tokens 4 --device auto --json >"$TMP/auto" 2>"$TMP/auto.err" &&
    grep -q '"completion_tokens":4' "$TMP/auto"; then
    ok "--device auto runs (cuda when a GPU is there, else cpu)"
else
    bad "--device auto: $(cat "$TMP/auto" "$TMP/auto.err")"
fi
expect_fail "--input: missing file" "/nonexistent.jsonl" "$INFER" generate --model "$FIX/tiny-llama" --input /nonexistent.jsonl
expect_fail "--input with --prompt-ids" "exactly one" "$INFER" generate --model "$FIX/tiny-llama" --input "$TMP/batch.jsonl" --prompt-ids 1
# the single form with a seed goes through the engine and repeats
a=$("$INFER" generate --model "$FIX/tiny-gemma3" --prompt-ids 5,6,7 --max-tokens 8 --temperature 1 --seed 3 --json 2>/dev/null)
b=$("$INFER" generate --model "$FIX/tiny-gemma3" --prompt-ids 5,6,7 --max-tokens 8 --temperature 1 --seed 3 --json --max-num-batched-tokens 2 2>/dev/null)
c=$("$INFER" generate --model "$FIX/tiny-gemma3" --prompt-ids 5,6,7 --max-tokens 8 --temperature 1 --seed 4 --json 2>/dev/null)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ]; then ok "seeded sampling repeats per seed"; else bad "seeded: '$a' '$b' '$c'"; fi

# malformed checkpoints
cp -r "$FIX/tiny-llama" "$TMP/trunc"
head -c 100000 "$FIX/tiny-llama/model.safetensors" >"$TMP/trunc/model.safetensors"
expect_fail "truncated safetensors" "model.safetensors" "$INFER" generate --model "$TMP/trunc" --prompt-ids 1,2
expect_fail "truncated safetensors (info)" "model.safetensors" "$INFER" info --model "$TMP/trunc"
mkdir -p "$TMP/garbage" && cp "$FIX/tiny-llama/config.json" "$TMP/garbage/"
printf '\x10\x00\x00\x00\x00\x00\x00\x00{not json at all' >"$TMP/garbage/model.safetensors"
expect_fail "garbage header" "model.safetensors" "$INFER" generate --model "$TMP/garbage" --prompt-ids 1
mkdir -p "$TMP/noconfig" && cp "$FIX/tiny-llama/model.safetensors" "$TMP/noconfig/"
expect_fail "missing config.json" "config.json" "$INFER" generate --model "$TMP/noconfig" --prompt-ids 1
mkdir -p "$TMP/badconfig" && cp "$FIX/tiny-llama/model.safetensors" "$TMP/badconfig/" && echo '{"architectures": [' >"$TMP/badconfig/config.json"
expect_fail "broken config.json" "config.json" "$INFER" info --model "$TMP/badconfig"
mkdir -p "$TMP/wrongshape" && cp "$FIX/tiny-llama/model.safetensors" "$TMP/wrongshape/" &&
    sed 's/"intermediate_size": 160/"intermediate_size": 128/' "$FIX/tiny-llama/config.json" >"$TMP/wrongshape/config.json"
expect_fail "shape disagrees with config" "mlp.gate_proj.weight" "$INFER" generate --model "$TMP/wrongshape" --prompt-ids 1
mkdir -p "$TMP/missing" && cp "$FIX/tiny-qwen3/model.safetensors" "$TMP/missing/" &&
    sed 's/"tie_word_embeddings": false/"tie_word_embeddings": false, "num_hidden_layers": 4/; s/"num_hidden_layers": 3,//' "$FIX/tiny-qwen3/config.json" >"$TMP/missing/config.json"
expect_fail "missing tensor" "model.layers.3." "$INFER" info --model "$TMP/missing"
expect_fail "no checkpoint dir" "/nonexistent" "$INFER" info --model /nonexistent

# gguf-info on a small GGUF written here with struct only (keys of three
# kinds, alignment 64, a Q8_0 and an F32 tensor), then on broken files
python3 - "$TMP/tiny.gguf" <<'PY'
import struct, sys
def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b
kv = [s("general.architecture") + struct.pack("<I", 8) + s("llama"),
      s("llama.block_count") + struct.pack("<II", 4, 2),
      s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + s("<s>") + s("a") + s("b"),
      s("general.alignment") + struct.pack("<II", 4, 64)]
ti = [s("tok.weight") + struct.pack("<IQQIQ", 2, 32, 3, 8, 0),  # Q8_0 [32, 3]: 3 blocks of 34 bytes
      s("norm.weight") + struct.pack("<IQIQ", 1, 32, 0, 128)]   # F32 [32] at 128
head = b"GGUF" + struct.pack("<IQQ", 3, len(ti), len(kv)) + b"".join(kv) + b"".join(ti)
head += b"\0" * (-len(head) % 64)
open(sys.argv[1], "wb").write(head + bytes(102) + bytes(26) + bytes(128))
PY
if "$INFER" gguf-info "$TMP/tiny.gguf" >"$TMP/gi" 2>"$TMP/gi.err" &&
    grep -qE '^version +3$' "$TMP/gi" && grep -qE '^alignment +64$' "$TMP/gi" &&
    grep -qE '^  general.architecture +STRING +"llama"$' "$TMP/gi" &&
    grep -qE '^  llama.block_count +UINT32 +2$' "$TMP/gi" &&
    grep -qF 'ARRAY    STRING[3] ["<s>", "a", "b"]' "$TMP/gi" &&
    grep -qE '^  tok.weight +Q8_0 +\[32, 3\] +offset 0 +bytes 102$' "$TMP/gi" &&
    grep -qE '^  norm.weight +F32 +\[32\] +offset 128 +bytes 128$' "$TMP/gi" &&
    grep -qxF 'summary: 2 tensors (1 F32, 1 Q8_0), 230 bytes' "$TMP/gi"; then
    ok "gguf-info lists keys, tensors and the summary"
else
    bad "gguf-info: $(cat "$TMP/gi" "$TMP/gi.err")"
fi
expect_fail "gguf-info on a non-GGUF file" "config.json: header: not a GGUF file: bad magic" "$INFER" gguf-info "$FIX/tiny-llama/config.json"
expect_fail "--prompt with a GGUF that has no vocabulary" "tiny.gguf: no tokenizer: tokenizer.ggml.model is missing" "$INFER" generate --model "$TMP/tiny.gguf" --prompt hi
expect_fail "tokenize with a GGUF that has no vocabulary" "tiny.gguf: no tokenizer: tokenizer.ggml.model is missing" "$INFER" tokenize --model "$TMP/tiny.gguf" --text hi
head -c $(($(wc -c <"$TMP/tiny.gguf") - 1)) "$TMP/tiny.gguf" >"$TMP/short.gguf"
expect_fail "gguf-info on a truncated GGUF" "short.gguf: tensor 'norm.weight': 128 bytes at offset 128 run past the end of the data section" "$INFER" gguf-info "$TMP/short.gguf"
head -c 100 "$TMP/tiny.gguf" >"$TMP/short.gguf"
expect_fail "gguf-info on a GGUF cut in its metadata" "metadata key 'llama.block_count': the UINT32 value (4 bytes at offset 98) runs past the end of the file (100 bytes)" "$INFER" gguf-info "$TMP/short.gguf"
expect_fail "gguf-info without a file" "expected one FILE" "$INFER" gguf-info

# bad flags and inputs
expect_fail "max-tokens 0" "--max-tokens" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1 --max-tokens 0
expect_fail "unknown option" "--bogus" "$INFER" generate --model "$FIX/tiny-llama" --bogus 1
expect_fail "bad id list" "--prompt-ids" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1,x
expect_fail "id outside vocabulary" "vocabulary" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 5000
expect_fail "gpu memory utilization out of range" "--gpu-memory-utilization" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1 --gpu-memory-utilization 1.5
expect_fail "gpu memory utilization not a number" "--gpu-memory-utilization" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1 --gpu-memory-utilization x
expect_fail "unknown device" "--device" "$INFER" generate --model "$FIX/tiny-llama" --prompt-ids 1 --device tpu
expect_fail "missing --config" "--config" "$INFER" mkmodel --out "$TMP/x"
expect_fail "unknown command" "unknown command" "$INFER" frobnicate

# every flag's bad values through every subcommand that takes it
if INFER="$INFER" python3 "$ROOT/tests/cli/bad_flags.py" >"$TMP/bad_flags" 2>&1; then
    ok "$(tail -n 1 "$TMP/bad_flags"): each exits non-zero naming its flag, nothing printed or written"
else
    bad "bad flags: $(grep -E 'FAIL|SKIP' "$TMP/bad_flags" | head -n 20)"
fi
grep SKIP "$TMP/bad_flags" || true

# bench of sampled decoding: the line reports the sampling it ran; greedy without the flags
bench_line() {
    "$INFER" bench --model "$FIX/tiny-llama" --batch 2 --input-len 3 --output-len 4 --prompt-len 0 "$@" 2>"$TMP/err"
}
if bench_line --temperature 0.8 --top-p 0.9 --top-k 5 --seed 7 --top-logprobs 5 >"$TMP/bs" &&
    grep -q '"workload": "decode", "batch": 2' "$TMP/bs" &&
    grep -q '"temperature": 0.8, "top_p": 0.9, "top_k": 5, "min_p": 0, "top_logprobs": 5, "speculative": "none"' "$TMP/bs" &&
    bench_line >"$TMP/bg" &&
    grep -q '"temperature": 0, "top_p": 1, "top_k": 0, "min_p": 0, "top_logprobs": 0, "speculative": "none"' "$TMP/bg" &&
    ! bench_line --top-logprobs 21 >/dev/null && grep -q -- "--top-logprobs" "$TMP/err"; then
    ok "bench --temperature --top-p --top-k --top-logprobs: sampled decode says so; greedy by default; 21 refused"
else
    bad "bench sampling flags: $(cat "$TMP/bs" "$TMP/bg" 2>/dev/null | head -c 400) $(head -c 300 "$TMP/err")"
fi

# tensor parallelism on the CPU: ranks as processes, equal to one rank
if INFER="$INFER" python3 "$ROOT/tests/cli/tensor_parallel.py" >"$TMP/tp" 2>&1; then
    ok "tensor parallel: $(grep -c PASS "$TMP/tp") checks (logits over 2, 4 and 8 ranks, batched = alone, a killed rank ends the group, 2 and 4 ranks as 2 machines, the relay through shared memory and TCP, bad relay settings refused)"
else
    bad "tensor parallel: $(grep FAIL "$TMP/tp" | head -n 20) $(tail -n 3 "$TMP/tp")"
fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
