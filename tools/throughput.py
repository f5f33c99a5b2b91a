#!/usr/bin/env python3
"""Offline throughput: N requests of P random prompt tokens and O
output tokens each (greedy, eos ignored), all submitted at once to `infer
generate --input` on CUDA, against Hugging Face transformers' batched
generate on the same checkpoint (bf16, static batches, the same token
counts). Prints output tokens per second of each.

Usage: python3 tools/throughput.py INFER MODEL_DIR [--requests 256] [--prompt 512] [--output 256]
       [--hf-batch 256] [--skip-hf]"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time


def run_infer(a, prompts):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "reqs.jsonl")
        with open(path, "w") as f:
            for p in prompts:
                f.write(json.dumps({"prompt_ids": p, "max_tokens": a.output, "ignore_eos": True}) + "\n")
        cmd = [a.infer, "generate", "--model", a.model, "--device", "cuda", "--input", path, "--json",
               "--max-num-seqs", str(a.requests), "--max-num-batched-tokens", str(a.batched_tokens),
               "--max-model-len", str(a.prompt + a.output)]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    summary = [l for l in p.stderr.splitlines() if "output tok/s" in l][-1]
    n_out = sum(len(json.loads(l)["ids"]) for l in p.stdout.splitlines())
    m = re.search(r"in ([0-9.]+) s: ([0-9.]+) output tok/s", summary)
    print(f"infer: {n_out} output tokens, engine {float(m.group(1)):.2f} s = {float(m.group(2)):.1f} output tok/s "
          f"(process wall {wall:.1f} s incl. load)\n  {summary}", flush=True)


def run_hf(a, prompts):
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16).cuda().eval()
    kw = dict(do_sample=False, max_new_tokens=a.output, min_new_tokens=a.output, pad_token_id=0)
    with torch.no_grad():
        model.generate(torch.tensor([prompts[0][:16]], device="cuda"), max_new_tokens=4, min_new_tokens=4,
                       do_sample=False, pad_token_id=0)  # warm-up
        torch.cuda.synchronize()
        t0 = time.time()
        n_out = 0
        for i in range(0, len(prompts), a.hf_batch):
            ids = torch.tensor(prompts[i:i + a.hf_batch], device="cuda")
            out = model.generate(ids, attention_mask=torch.ones_like(ids), **kw)
            n_out += (out.shape[1] - ids.shape[1]) * ids.shape[0]
        torch.cuda.synchronize()
        secs = time.time() - t0
    print(f"transformers {__import__('transformers').__version__} generate (batch {a.hf_batch}, bf16, sdpa): "
          f"{n_out} output tokens in {secs:.2f} s = {n_out / secs:.1f} output tok/s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer")
    ap.add_argument("model")
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--output", type=int, default=256)
    ap.add_argument("--batched-tokens", type=int, default=8192)
    ap.add_argument("--hf-batch", type=int, default=256)
    ap.add_argument("--skip-hf", action="store_true")
    a = ap.parse_args()
    vocab = json.load(open(os.path.join(a.model, "config.json")))["vocab_size"]
    rng = random.Random(11)
    prompts = [[rng.randrange(vocab) for _ in range(a.prompt)] for _ in range(a.requests)]
    run_infer(a, prompts)
    if not a.skip_hf:
        run_hf(a, prompts)


if __name__ == "__main__":
    main()
