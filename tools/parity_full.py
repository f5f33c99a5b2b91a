#!/usr/bin/env python3
"""Full-size parity with Hugging Face transformers on the GPU machine.

For each config: `infer mkmodel` (random bf16 weights), then transformers
(bf16, CUDA) runs a PROMPT_LEN-token prompt (longer than Gemma 3's 512-token
window) and DECODE_STEPS greedy steps with its KV cache; `infer logits
--device cuda` runs the same ids (the prompt as prefill, the greedy tokens as
decode steps). Per row: rel err = max|ours - ref| / max|ref|; top-1 agreement
over all rows.
The bound (issue 16; the earlier 2e-2 against transformers bf16 is withdrawn:
no bf16 implementation meets it): transformers also runs the same ids in
float32, the reference; infer's bf16 max rel err against it must be within
1.1x transformers bf16's max rel err against it, and infer's top-1 agreement
with it no lower than transformers bf16's minus one point. The comparison
with transformers bf16 itself is printed too, for information.

Usage: python3 tools/parity_full.py INFER WORK_DIR CONFIG.json [CONFIG.json ...]
Prints one line per model and exits non-zero if any bound fails."""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM

PROMPT_LEN = 560
DECODE_STEPS = 16


def hf_logits(path, prompt):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).cuda().eval()
    rows, ids = [], list(prompt)
    with torch.no_grad():
        out = model(torch.tensor([prompt], device="cuda"), use_cache=True)
        rows.append(out.logits[0].float().cpu().numpy())
        past = out.past_key_values
        nxt = int(out.logits[0, -1].argmax())
        for _ in range(DECODE_STEPS):
            ids.append(nxt)
            out = model(torch.tensor([[nxt]], device="cuda"), past_key_values=past, use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0].float().cpu().numpy())
            nxt = int(out.logits[0, -1].argmax())
    del model
    torch.cuda.empty_cache()
    return ids, np.concatenate(rows)


def hf_prompt_logits(path, ids, dtype, attn="sdpa"):
    """transformers' logits of every row of ids, one forward pass, no cache."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn).cuda().eval()
    with torch.no_grad():
        rows = model(torch.tensor([ids], device="cuda"), use_cache=False).logits[0].float().cpu().numpy()
    del model
    torch.cuda.empty_cache()
    return rows


def checkpoint(infer, work, config):
    """(name, path) of the `infer mkmodel --seed 0` checkpoint of config in work, made once."""
    name = os.path.basename(os.path.dirname(os.path.abspath(config)))
    path = os.path.join(work, name)
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        subprocess.run([infer, "mkmodel", "--config", config, "--out", path, "--seed", "0"], check=True,
                       stdout=subprocess.DEVNULL)
    return name, path


def random_prompt(vocab):
    rng = np.random.default_rng(7)
    return [int(x) for x in rng.integers(0, vocab, PROMPT_LEN)]


def rel_err(a, b):
    return np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)


def check(infer, work, config):
    name, path = checkpoint(infer, work, config)
    prompt = random_prompt(json.load(open(config))["vocab_size"])
    ids, ref = hf_logits(path, prompt)
    ids_file = os.path.join(work, name + ".ids.json")
    out_file = os.path.join(work, name + ".logits.safetensors")
    json.dump(ids, open(ids_file, "w"))
    subprocess.run([infer, "logits", "--model", path, "--device", "cuda", "--ids-file", ids_file, "--prefill",
                    str(PROMPT_LEN), "--out", out_file], check=True)
    ours = load_file(out_file)["logits"]
    n = len(ids)
    # row r of ours is the logits after ids[r]; ref rows: prompt rows, then one per decode step
    # (the decode step fed ids[PROMPT_LEN + i], i.e. ours row PROMPT_LEN + i)
    ref = ref[:n]
    ref32 = hf_prompt_logits(path, ids, torch.float32)
    err = rel_err(ours, ref)
    top1 = (ours.argmax(axis=1) == ref.argmax(axis=1)).mean()
    e32, h32 = rel_err(ours, ref32), rel_err(ref, ref32)
    t32 = (ours.argmax(axis=1) == ref32.argmax(axis=1)).mean()
    th32 = (ref.argmax(axis=1) == ref32.argmax(axis=1)).mean()
    ok = e32.max() <= 1.1 * h32.max() and t32 >= th32 - 0.01
    print(f"{name}: rows {n} (prompt {PROMPT_LEN}, decode {DECODE_STEPS}) vs transformers bf16: max rel err prompt "
          f"{err[:PROMPT_LEN].max():.3e} decode {err[PROMPT_LEN:].max():.3e} median {np.median(err):.3e} "
          f"top-1 agreement {100 * top1:.2f}%", flush=True)
    print(f"{name}: vs transformers fp32: infer bf16 max {e32.max():.3e} ({e32.max() / h32.max():.3f}x "
          f"transformers bf16's, bound 1.1x) median {np.median(e32):.3e} top-1 {100 * t32:.2f}% | transformers "
          f"bf16 max {h32.max():.3e} median {np.median(h32):.3e} top-1 {100 * th32:.2f}% (bound "
          f"{100 * th32 - 1:.2f}%) -> {'OK' if ok else 'FAIL'}", flush=True)
    os.unlink(out_file)
    return ok


def main():
    infer, work, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    results = [check(infer, work, c) for c in configs]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
