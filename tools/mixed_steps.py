#!/usr/bin/env python3
"""Mixed-step benchmark: 32 sequences decoding 256 tokens each
while new 512-token prompts keep arriving: with --max-num-seqs 33 one slot is
left for them, each prompt takes 4 output tokens, so every 4th step is a
mixed step (32 decode rows + a 512-token prefill) and the others are decode
steps of 33 rows. Runs `infer generate --input` under each
--cuda-graph-mode and prints steps, average step time, output tokens per
second and graph replays vs eager steps (engine time, from the summary line).

Usage: python3 tools/mixed_steps.py INFER MODEL_DIR [--modes none,piecewise,full] [--prompts 64]"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile


def run(a, path, mode):
    cmd = [a.infer, "generate", "--model", a.model, "--device", "cuda", "--input", path, "--json",
           "--max-num-seqs", "33", "--max-num-batched-tokens", "2048", "--max-model-len", "1024",
           "--cuda-graph-mode", mode]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    line = [l for l in p.stderr.splitlines() if "output tok/s" in l][-1]
    secs = float(re.search(r"tokens in ([0-9.]+) s", line).group(1))
    tps = float(re.search(r"([0-9.]+) output tok/s", line).group(1))
    steps = int(re.search(r"(\d+) steps", line).group(1))
    rep = re.search(r"(\d+) graph replays, (\d+) eager steps", line)
    cap = [l for l in p.stderr.splitlines() if "cuda graphs:" in l or "engine step" in l]
    return secs, tps, steps, int(rep.group(1)), int(rep.group(2)), "\n    ".join(cap)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer")
    ap.add_argument("model")
    ap.add_argument("--modes", default="none,piecewise,full")
    ap.add_argument("--prompts", type=int, default=64, help="512-token prompts arriving")
    a = ap.parse_args()
    vocab = json.load(open(os.path.join(a.model, "config.json")))["vocab_size"]
    name = os.path.basename(a.model.rstrip("/"))
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mixed.jsonl")
        with open(path, "w") as f:
            for _ in range(32):
                f.write(json.dumps({"prompt_ids": [rng.randrange(vocab) for _ in range(32)], "max_tokens": 256,
                                    "ignore_eos": True}) + "\n")
            for _ in range(a.prompts):
                f.write(json.dumps({"prompt_ids": [rng.randrange(vocab) for _ in range(512)], "max_tokens": 4,
                                    "ignore_eos": True}) + "\n")
        base = None
        for mode in a.modes.split(","):
            secs, tps, steps, rep, eager, cap = run(a, path, mode)
            base = base or tps
            print(f"{name} mixed [{mode:9s}]: {steps} steps, {1e3 * secs / steps:.3f} ms/step, {tps:8.1f} output "
                  f"tok/s ({tps / base:.2f}x none), {rep} replays, {eager} eager", flush=True)
            if cap:
                print(f"    {cap}")


if __name__ == "__main__":
    main()
