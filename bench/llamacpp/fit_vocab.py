#!/usr/bin/env python3
"""Makes a checkpoint's tokenizer files fit its embedding rows, as llama.cpp's
converter asserts (every token id < config vocab_size): drops added tokens
whose id is past the rows (Gemma 3's tokenizer.json adds <image_soft_token>
at 262144 for a 262144-row model; text never uses it). Refuses a tokenizer
whose base vocabulary itself is past the rows.

Usage: python3 bench/llamacpp/fit_vocab.py CHECKPOINT_DIR"""
import json
import os
import sys


def main():
    ck = sys.argv[1]
    cfg = json.load(open(os.path.join(ck, "config.json")))
    rows = cfg.get("vocab_size") or cfg.get("text_config", {}).get("vocab_size")
    if not rows:
        sys.exit(f"fit_vocab: {ck}/config.json has no vocab_size")
    path = os.path.join(ck, "tokenizer.json")
    tok = json.load(open(path, encoding="utf-8"))
    base = tok["model"]["vocab"]
    top = max(base.values()) if isinstance(base, dict) else len(base) - 1
    if top >= rows:
        sys.exit(f"fit_vocab: {path}: the base vocabulary reaches id {top}, past the model's {rows} rows")
    dropped = [t for t in tok.get("added_tokens", []) if t["id"] >= rows]
    if not dropped:
        print(f"fit_vocab: {ck}: every token id is below {rows}")
        return
    tok["added_tokens"] = [t for t in tok["added_tokens"] if t["id"] < rows]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    cpath = os.path.join(ck, "tokenizer_config.json")
    if os.path.exists(cpath):
        tc = json.load(open(cpath, encoding="utf-8"))
        dec = tc.get("added_tokens_decoder", {})
        tc["added_tokens_decoder"] = {k: v for k, v in dec.items() if int(k) < rows}
        # named tokens (image_token, extra_special_tokens) would be added back past the rows
        gone = {t["content"] for t in dropped}
        tc = {k: v for k, v in tc.items() if not (isinstance(v, str) and v in gone)}
        if isinstance(tc.get("extra_special_tokens"), dict):
            tc["extra_special_tokens"] = {k: v for k, v in tc["extra_special_tokens"].items() if v not in gone}
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump(tc, f, ensure_ascii=False, indent=1)
    print(f"fit_vocab: {ck}: dropped {', '.join(repr(t['content']) + ' ' + str(t['id']) for t in dropped)} "
          f"(past the {rows} rows)")


if __name__ == "__main__":
    main()
