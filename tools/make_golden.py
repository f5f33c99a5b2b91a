#!/usr/bin/env python3
"""Golden logits from Hugging Face transformers for the tiny test checkpoints.

Run where torch and transformers are installed (the GPU machine; see
../shared/design/GPU.md):  python3 tools/make_golden.py OUT_DIR
For each tests/fixtures/tiny-*/ it loads the checkpoint in float32 with eager
attention (the exact math our CPU backend implements), runs a fixed
48-token prompt, then 8 greedy decode steps (each recomputing the whole
sequence, no cache), and writes OUT_DIR/<name>.golden.safetensors with
  prompt_ids [48] I32, decode_ids [8] I32 (the greedy tokens fed back),
  prompt_logits [48, V] F32, decode_logits [8, V] F32.
Copy the files to tests/fixtures/<name>/golden.safetensors.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

PROMPT_LEN = 48
DECODE_STEPS = 8
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def golden(name, out_dir):
    path = os.path.join(ROOT, "tests", "fixtures", name)
    model, info = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise SystemExit(f"{name}: loading problems: {bad}")
    model.eval()
    cfg = model.config
    print(f"{name}: {type(model).__name__}, layer_types={getattr(cfg, 'layer_types', None)}, "
          f"rope={getattr(cfg, 'rope_parameters', None) or getattr(cfg, 'rope_scaling', None)}")
    gen = torch.Generator().manual_seed(1234)
    prompt = torch.randint(0, cfg.vocab_size, (PROMPT_LEN,), generator=gen)
    with torch.no_grad():
        prompt_logits = model(prompt[None], use_cache=False).logits[0].float()
        ids = prompt.clone()
        nxt = prompt_logits[-1].argmax()
        decode_ids, decode_logits = [], []
        for _ in range(DECODE_STEPS):
            decode_ids.append(int(nxt))
            ids = torch.cat([ids, nxt[None]])
            row = model(ids[None], use_cache=False).logits[0, -1].float()
            decode_logits.append(row)
            nxt = row.argmax()
    tensors = {
        "prompt_ids": prompt.to(torch.int32).contiguous(),
        "decode_ids": torch.tensor(decode_ids, dtype=torch.int32),
        "prompt_logits": prompt_logits.contiguous(),
        "decode_logits": torch.stack(decode_logits).contiguous(),
    }
    meta = {"transformers": transformers.__version__, "torch": torch.__version__,
            "dtype": "float32", "attn_implementation": "eager"}
    out = os.path.join(out_dir, f"{name}.golden.safetensors")
    save_file(tensors, out, metadata=meta)
    print(f"{name}: wrote {out}; decode ids {decode_ids}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    for name in ("tiny-llama", "tiny-qwen3", "tiny-gemma3"):
        golden(name, out_dir)
    print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
