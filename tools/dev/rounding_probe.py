#!/usr/bin/env python3
"""Which rounding differences move bf16 logits of a random-weight model?

Runs transformers in bf16 on one 560-token prompt (tools/parity_full.py's) in several variants
that differ only in where values are rounded, and compares each pair (and
`infer logits --device cuda` on the same ids) with the per-row metric of
tools/parity_full.py (max|a-b| / max|b|, top-1 agreement):
  sdpa       transformers as shipped (bf16 cos/sin, q*cos + rot(q)*sin rounded
             after each op, SDPA attention)
  rope32     the same, but RoPE computed in float32 with one rounding (what
             infer's qk_rope_kv kernel does)
  eager      transformers' eager attention instead of SDPA
  fp32       the whole model in float32

Usage: python3 tools/dev/rounding_probe.py INFER WORK_DIR CONFIG.json [...]"""
import contextlib
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

from parity_full import checkpoint, hf_prompt_logits, random_prompt, rel_err

MODULES = {"llama": "llama", "qwen3": "qwen3", "gemma3_text": "gemma3", "gemma3": "gemma3"}


@contextlib.contextmanager
def rope_in_fp32(model_type):
    mod = importlib.import_module(f"transformers.models.{MODULES[model_type]}.modeling_{MODULES[model_type]}")
    rot_classes = [getattr(mod, n) for n in dir(mod) if n.endswith("RotaryEmbedding")]
    saved = [(c, c.forward) for c in rot_classes]
    orig_apply = mod.apply_rotary_pos_emb

    def make_fwd(fwd):
        def fwd32(self, x, *args, **kw):
            return fwd(self, x.float(), *args, **kw)
        return fwd32

    def apply32(q, k, cos, sin, *args, **kw):
        qe, ke = orig_apply(q.float(), k.float(), cos.float(), sin.float(), *args, **kw)
        return qe.to(q.dtype), ke.to(k.dtype)

    for c, f in saved:
        c.forward = make_fwd(f)
    mod.apply_rotary_pos_emb = apply32
    try:
        yield
    finally:
        for c, f in saved:
            c.forward = f
        mod.apply_rotary_pos_emb = orig_apply


def compare(a, b):
    err = rel_err(a, b)
    top1 = (a.argmax(axis=1) == b.argmax(axis=1)).mean()
    return f"max {err.max():.2e} median {np.median(err):.2e} top-1 {100 * top1:.1f}%"


def scaled_copy(src, dst, n_layers):
    """The checkpoint with o_proj and down_proj scaled by 1/sqrt(2 * layers),
    the residual-branch init of GPT-2 / Megatron."""
    import shutil
    from safetensors.torch import load_file as load_t, save_file
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if not f.endswith(".safetensors"):
            shutil.copy(os.path.join(src, f), dst)
    t = load_t(os.path.join(src, "model.safetensors"))
    s = (2 * n_layers) ** -0.5
    for k in t:
        if k.endswith("o_proj.weight") or k.endswith("down_proj.weight"):
            t[k] = (t[k].float() * s).to(t[k].dtype)
    save_file(t, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})


def probe(infer, work, config):
    name, path = checkpoint(infer, work, config)
    cfg = json.load(open(config))
    if os.environ.get("PROBE_SCALED"):
        scaled = path + "-scaled"
        if not os.path.exists(os.path.join(scaled, "model.safetensors")):
            scaled_copy(path, scaled, cfg["num_hidden_layers"])
        path, name = scaled, name + "-scaled"
    ids = random_prompt(cfg["vocab_size"])
    ids_file, out_file = os.path.join(work, name + ".probe.json"), os.path.join(work, name + ".probe.safetensors")
    json.dump(ids, open(ids_file, "w"))
    subprocess.run([infer, "logits", "--model", path, "--device", "cuda", "--ids-file", ids_file, "--out", out_file],
                   check=True, stderr=subprocess.DEVNULL)
    res = {"infer": load_file(out_file)["logits"]}
    res["sdpa"] = hf_prompt_logits(path, ids, torch.bfloat16)
    with rope_in_fp32(cfg["model_type"]):
        res["rope32"] = hf_prompt_logits(path, ids, torch.bfloat16)
    res["eager"] = hf_prompt_logits(path, ids, torch.bfloat16, "eager")
    res["fp32"] = hf_prompt_logits(path, ids, torch.float32)
    for a, b in [("infer", "sdpa"), ("infer", "rope32"), ("infer", "eager"), ("infer", "fp32"), ("rope32", "sdpa"),
                 ("eager", "sdpa"), ("sdpa", "fp32")]:
        print(f"{name}: {a:6} vs {b:6}: {compare(res[a], res[b])}", flush=True)


def main():
    infer, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for c in sys.argv[3:]:
        probe(infer, work, c)


if __name__ == "__main__":
    main()
