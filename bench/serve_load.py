#!/usr/bin/env python3
"""Load generator for `infer serve`: N streaming chat requests at a fixed
concurrency against /v1/chat/completions, standard library only (the GPU machine has no extra
packages). Per request it records the time to the first content chunk (TTFT), the gaps between
content chunks (inter-token latency: one token per chunk as the server streams them), the end-to-
end time and the output tokens (from the usage chunk). Prints one JSON line per concurrency:
requests/s, output tokens/s, TTFT and ITL p50/p99 (ms), e2e p50 (ms).

Usage: python3 bench/serve_load.py URL MODEL [--requests 500] [--concurrency 1,8,64]
                                   [--max-tokens 64] [--prompt-words 100] [--seed 0]"""
import argparse
import http.client
import json
import random
import threading
import time
from urllib.parse import urlparse

WORDS = ("the of and to in is was for on that with as by at from his her an which it be are this had not but "
         "what all were when we there can more if no out so said who up its about into than them only other new "
         "some could time these two may then do first any my now such like our over man me even most made after "
         "also did many before must through back years where much your way well down should because each just "
         "those people how too little state good very make world still own see men work long get here between "
         "both life being under never day same another know while last might us great old year off come since "
         "against go came right used take three").split()


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one_request(url, body):
    u = urlparse(url)
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    stamps, usage = [], None
    for raw in resp:
        line = raw.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            break
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
        if any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
            stamps.append(time.perf_counter())
    conn.close()
    t1 = time.perf_counter()
    return {"ttft": stamps[0] - t0 if stamps else float("nan"),
            "itl": [b - a for a, b in zip(stamps, stamps[1:])], "e2e": t1 - t0,
            "out": usage["completion_tokens"] if usage else len(stamps)}


def run(url, model, n, concurrency, max_tokens, prompts):
    todo = list(range(n))
    lock = threading.Lock()
    results, errors = [], []

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            body = {"model": model, "messages": [{"role": "user", "content": prompts[i % len(prompts)]}],
                    "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
                    "stream_options": {"include_usage": True}}
            try:
                r = one_request(url, body)
                with lock:
                    results.append(r)
            except Exception as e:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(repr(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    itl = [x for r in results for x in r["itl"]]
    return {"concurrency": concurrency, "requests": len(results), "errors": len(errors),
            "first_error": errors[0] if errors else None, "wall_s": round(wall, 3),
            "req_per_s": round(len(results) / wall, 3),
            "output_tok_per_s": round(sum(r["out"] for r in results) / wall, 1),
            "ttft_ms_p50": round(1e3 * percentile([r["ttft"] for r in results], 50), 2),
            "ttft_ms_p99": round(1e3 * percentile([r["ttft"] for r in results], 99), 2),
            "itl_ms_p50": round(1e3 * percentile(itl, 50), 3), "itl_ms_p99": round(1e3 * percentile(itl, 99), 3),
            "e2e_ms_p50": round(1e3 * percentile([r["e2e"] for r in results], 50), 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("model")
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    prompts = [" ".join(rng.choice(WORDS) for _ in range(a.prompt_words)) for _ in range(64)]
    for c in (int(x) for x in a.concurrency.split(",")):
        print(json.dumps(run(a.url, a.model, a.requests, c, a.max_tokens, prompts)), flush=True)


if __name__ == "__main__":
    main()
