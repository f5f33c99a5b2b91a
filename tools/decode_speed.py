#!/usr/bin/env python3
"""Decode speed through the engine: for each batch size B, B
requests of a 32-token random prompt and 256 greedy output tokens (eos
ignored) submitted at once to `infer generate --input`, under each
--cuda-graph-mode; prints output tokens per second (engine time, from the
summary line), graph replays and eager steps, and each mode's speedup
over the first (none).

Usage: python3 tools/decode_speed.py INFER MODEL_DIR [--batches 1,8,32,128] [--modes none,decode]"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile


def run(a, path, bs, mode):
    cmd = [a.infer, "generate", "--model", a.model, "--device", "cuda", "--input", path, "--json",
           "--max-num-seqs", str(max(bs, 1)), "--max-model-len", "512", "--cuda-graph-mode", mode]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    line = [l for l in p.stderr.splitlines() if "output tok/s" in l][-1]
    tps = float(re.search(r"([0-9.]+) output tok/s", line).group(1))
    rep = re.search(r"(\d+) graph replays, (\d+) eager steps", line)
    return tps, int(rep.group(1)), int(rep.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer")
    ap.add_argument("model")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--modes", default="none,decode,full")
    ap.add_argument("--output", type=int, default=256)
    a = ap.parse_args()
    vocab = json.load(open(os.path.join(a.model, "config.json")))["vocab_size"]
    name = os.path.basename(a.model.rstrip("/"))
    rng = random.Random(3)
    modes = a.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for bs in [int(x) for x in a.batches.split(",")]:
            path = os.path.join(tmp, f"b{bs}.jsonl")
            with open(path, "w") as f:
                for _ in range(bs):
                    f.write(json.dumps({"prompt_ids": [rng.randrange(vocab) for _ in range(32)],
                                        "max_tokens": a.output, "ignore_eos": True}) + "\n")
            res = {m: run(a, path, bs, m) for m in modes}
            cells = "  ".join(f"{m}: {t:8.1f} tok/s ({r} replays, {e} eager)" for m, (t, r, e) in res.items())
            speed = "".join(f"  {m} {res[m][0] / res[modes[0]][0]:.2f}x" for m in modes[1:])
            print(f"{name} batch {bs:4d}: {cells}{speed}", flush=True)


if __name__ == "__main__":
    main()
