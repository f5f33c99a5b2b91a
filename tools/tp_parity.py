#!/usr/bin/env python3
"""Prompt logits of a split model against an fp32 reference (GPU machine).

For each checkpoint: transformers in float32 runs a PROMPT_LEN-token random
prompt (one forward pass); `infer logits --device cuda` runs the same ids as
one prefill at each tensor-parallel size asked for. Per row: rel err =
max|ours - ref| / max|ref|. A split model must be as close to the
reference as one GPU: its max and median rel err within 1.1x of TP 1's.

Usage: python3 tools/tp_parity.py INFER CHECKPOINT_DIR [CHECKPOINT_DIR ...] [--tp 1,2,4]
Prints one line per model and size; exits non-zero if any bound fails."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM

PROMPT_LEN = 560  # past Gemma 3's 512-token window


def reference(path, ids):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).cuda().eval()
    with torch.no_grad():
        rows = model(torch.tensor([ids], device="cuda"), use_cache=False).logits[0].float().cpu().numpy()
    del model
    torch.cuda.empty_cache()
    return rows


def ours(infer, path, ids_file, tp, tmp):
    out = os.path.join(tmp, f"tp{tp}.safetensors")
    cmd = [infer, "logits", "--model", path, "--device", "cuda", "--ids-file", ids_file, "--prefill",
           str(PROMPT_LEN), "--out", out, "--tensor-parallel-size", str(tp)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    return load_file(out)["logits"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--tp", default="1,2,4")
    a = ap.parse_args()
    sizes = [int(x) for x in a.tp.split(",")]
    ok = True
    for path in a.models:
        name = os.path.basename(path.rstrip("/"))
        vocab = json.load(open(os.path.join(path, "config.json")))["vocab_size"]
        ids = [int(x) for x in np.random.default_rng(7).integers(0, vocab, PROMPT_LEN)]
        ref = reference(path, ids)
        with tempfile.TemporaryDirectory() as tmp:
            ids_file = os.path.join(tmp, "ids.json")
            json.dump(ids, open(ids_file, "w"))
            base = None
            for tp in sizes:
                got = ours(a.infer, path, ids_file, tp, tmp)
                err = np.abs(got - ref).max(axis=1) / np.abs(ref).max(axis=1)
                top1 = (got.argmax(axis=1) == ref.argmax(axis=1)).mean()
                mx, md = float(err.max()), float(np.median(err))
                if base is None:
                    base = (mx, md)
                good = mx <= 1.1 * base[0] and md <= 1.1 * base[1]
                ok = ok and good
                print(f"{name} tp {tp}: {PROMPT_LEN} prompt rows vs transformers fp32: max rel err {mx:.3e} "
                      f"({mx / base[0]:.3f}x tp {sizes[0]}), median {md:.3e} ({md / base[1]:.3f}x), top-1 "
                      f"{100 * top1:.2f}% -> {'OK' if good else 'FAIL'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
