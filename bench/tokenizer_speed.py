#!/usr/bin/env python3
"""Encoder speed, side by side on one core: infer's C tokenizer
(bench/tokenizer_bench) against the Python `tokenizers` library with
RAYON_NUM_THREADS=1, on the parity corpus, for the three tokenizers.
Usage: .venv/bin/python bench/tokenizer_speed.py [SHARED_DIR] [REPEATS]"""
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))
from tokenizer_corpus import corpus  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(ROOT), "shared")
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    texts = corpus()
    nbytes = sum(len(t.encode()) for t in texts)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
        path = f.name
    print(f"corpus: {len(texts)} strings, {nbytes} bytes; best of {repeats} passes; one core each")
    print(f"{'tokenizer':10} {'infer MB/s':>11} {'tokenizers MB/s':>16} {'ratio':>6} {'infer load s':>13} {'tokenizers load s':>18}")
    for fam in ("llama3", "qwen3", "gemma3"):
        d = os.path.join(shared, "tokenizers", fam)
        out = subprocess.run([os.environ.get("TOKENIZER_BENCH", os.path.join(ROOT, "build", "tokenizer_bench")), d, path, str(repeats)],
                             check=True, capture_output=True, text=True).stdout
        ours = json.loads(out)
        t0 = time.perf_counter()
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        load = time.perf_counter() - t0
        tok.encode_batch(texts)  # warm up
        best = 1e30
        for _ in range(repeats):
            s = time.perf_counter()
            enc = tok.encode_batch(texts)
            best = min(best, time.perf_counter() - s)
        assert sum(len(e.ids) for e in enc) == ours["tokens"], "token counts differ"
        theirs = nbytes / best / 1e6
        print(f"{fam:10} {ours['mb_per_s']:11.2f} {theirs:16.2f} {ours['mb_per_s'] / theirs:6.2f} "
              f"{ours['load_s']:13.3f} {load:18.3f}")
    os.unlink(path)


if __name__ == "__main__":
    main()
