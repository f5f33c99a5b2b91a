#!/usr/bin/env python3
"""Checks that `infer mkmodel` checkpoints load in Hugging Face transformers
and that `infer info` counts the same parameters.

Usage (where torch + transformers are installed):
  python3 tools/check_hf_load.py INFER_BINARY WORK_DIR CONFIG.json [CONFIG.json ...]
For each config: infer mkmodel -> WORK_DIR/<name>, infer info --json, then
AutoModelForCausalLM.from_pretrained (bf16) with loading info, which must
report no missing, unexpected or mismatched tensors. Prints one line per
model and exits non-zero on any disagreement.
"""
import json
import os
import subprocess
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def check(infer, work, config):
    name = os.path.basename(os.path.dirname(os.path.abspath(config)))
    out = os.path.join(work, name)
    t0 = time.time()
    subprocess.run([infer, "mkmodel", "--config", config, "--out", out, "--seed", "0"], check=True)
    t_mk = time.time() - t0
    info = json.loads(subprocess.run([infer, "info", "--model", out, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    t0 = time.time()
    model, load = AutoModelForCausalLM.from_pretrained(out, dtype=torch.bfloat16,
                                                       output_loading_info=True)
    t_load = time.time() - t0
    problems = {k: v for k, v in load.items() if v}
    hf_params = model.num_parameters()
    ok = not problems and hf_params == info["parameters"]
    print(f"{name}: {info['architecture']} infer_params={info['parameters']} hf_params={hf_params} "
          f"weight_bytes={info['weight_bytes']} mkmodel={t_mk:.1f}s hf_load={t_load:.1f}s "
          f"problems={problems or 'none'} -> {'OK' if ok else 'MISMATCH'}", flush=True)
    del model
    subprocess.run(["rm", "-rf", out], check=True)
    return ok


def main():
    infer, work, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    results = [check(infer, work, c) for c in configs]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
