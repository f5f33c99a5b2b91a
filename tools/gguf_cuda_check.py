#!/usr/bin/env python3
"""The embedded default model on the GPU: the 5 chat prompts of the golden fixture
(tests/fixtures/gguf_golden), each run alone with `--chat --prompt` through the engine on CUDA
(graphs on: the default full mode, and also --cuda-graph-mode none), must give the same greedy
tokens as the CPU backend and as transformers. Where a run departs, the logits of the step where
it does are compared on both backends (`infer logits`): the two best tokens, the CPU margin between
them, and the largest |CUDA - CPU| over the vocabulary, so a near-tie shows as one.

Usage: python3 tools/gguf_cuda_check.py INFER GGUF GOLDEN.json
Prints one line per prompt and mode, then the verdict; exits non-zero on a mismatch."""
import json
import os
import struct
import subprocess
import sys
import tempfile


def generate(infer, gguf, device, prompt, n, extra=()):
    """Through the engine (an --input line), so CUDA replays its graphs."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": n}) + "\n")
    p = subprocess.run([infer, "generate", "--model", gguf, "--device", device, "--input", f.name, "--json",
                        *extra], capture_output=True, text=True)
    os.unlink(f.name)
    if p.returncode != 0:
        sys.exit(f"generate on {device} failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.splitlines()[-1])["ids"], p.stderr.strip().splitlines()[-1]


def last_logits(infer, gguf, device, ids):
    """The last row of `infer logits` (a safetensors file of float32 [rows, vocab])."""
    out = tempfile.mktemp(suffix=".safetensors")
    subprocess.run([infer, "logits", "--model", gguf, "--device", device, "--ids", ",".join(map(str, ids)),
                    "--out", out], check=True, capture_output=True)
    data = open(out, "rb").read()
    os.unlink(out)
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    rows, vocab = header["logits"]["shape"]
    start, end = header["logits"]["data_offsets"]
    body = data[8 + n + start:8 + n + end]
    return list(struct.unpack(f"<{vocab}f", body[(rows - 1) * vocab * 4:]))


def top2(row):
    a = max(range(len(row)), key=row.__getitem__)
    b = max((i for i in range(len(row)) if i != a), key=row.__getitem__)
    return a, b


def main():
    infer, gguf, golden = sys.argv[1:4]
    gold = json.load(open(golden))
    n = gold["max_new_tokens"]
    bad = 0
    for case in gold["cases"]:
        cpu, _ = generate(infer, gguf, "cpu", case["prompt"], n)
        for mode in ("full", "none"):
            cuda, summary = generate(infer, gguf, "cuda", case["prompt"], n, ["--cuda-graph-mode", mode])
            same = cuda == cpu
            bad += not same
            print(f"{case['prompt']!r:48} graphs {mode:4}: CUDA {'==' if same else '!='} CPU, "
                  f"CPU {'==' if cpu == case['output_ids'] else '!='} transformers  [{summary[-60:]}]")
            if not same:
                k = next(i for i, (a, b) in enumerate(zip(cuda, cpu)) if a != b)
                lc = last_logits(infer, gguf, "cpu", case["prompt_ids"] + cpu[:k])
                lg = last_logits(infer, gguf, "cuda", case["prompt_ids"] + cpu[:k])
                a, b = top2(lc)
                print(f"    first difference at output token {k}: CPU {cpu[k]}, CUDA {cuda[k]}; CPU logits "
                      f"{a}:{lc[a]:.4f} {b}:{lc[b]:.4f} (margin {lc[a] - lc[b]:.4f}); CUDA {a}:{lg[a]:.4f} "
                      f"{b}:{lg[b]:.4f}; max |CUDA - CPU| {max(abs(x - y) for x, y in zip(lc, lg)):.4f}")
    # how far apart the backends' logits are, where the fourth prompt once departed (output token 13)
    case = gold["cases"][3]
    ids = case["prompt_ids"] + case["output_ids"][:13]
    lc, lg = last_logits(infer, gguf, "cpu", ids), last_logits(infer, gguf, "cuda", ids)
    a, b = top2(lc)
    print(f"{case['prompt']!r} + 13 tokens: CPU {a}:{lc[a]:.4f} {b}:{lc[b]:.4f}; CUDA {a}:{lg[a]:.4f} {b}:{lg[b]:.4f}; "
          f"max |CUDA - CPU| {max(abs(x - y) for x, y in zip(lc, lg)):.4f}")
    print("verdict:", "all equal" if bad == 0 else f"{bad} runs differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
