#!/usr/bin/env python3
"""The engine's batching test on a GPU: 64 greedy requests of mixed
prompt (1-300 tokens) and output lengths, all at once through `infer generate
--input` with chunked prefill and a KV pool small enough to force preemption,
must give every request exactly the tokens it gives alone (the same file run
with --max-num-seqs 1). Both runs use --batch-invariant: without it a row's
GEMM sums depend on the step's size (cuBLASLt's algorithm, the GEMV's
variant), and on random-weight models any rounding difference flips tokens.

A third of the requests share one 64-token prefix, so the radix prefix
cache hits.

The batched runs replay CUDA graphs (--graph: one batched run per mode of
a comma-separated list, default decode), the alone run is eager
(--alone-graph none), so the test also holds every graph mode to eager
exactly. --transitions swaps the workload for 8 requests whose
output lengths leave 8, then 5, then 3 sequences running (batch-size
buckets crossed on the way down). --mixed makes every third request greedy
with its log-probabilities, every third seeded-sampled, the rest greedy
with 2 top log-probabilities, and compares the log-probabilities too, bit
for bit: a split model's steps move the logits' columns only when some row
needs them, and a plain greedy row's log-probability must not depend on
which kind of step it ran in.

--batched-flags "FLAGS" (repeatable) adds a batched run per mode with those flags beside the
plain one, e.g. "--speculative ngram": speculative decoding must give the alone run's tokens too.

--tp N runs both sides split over N GPUs (--nodes 2: as two machines,
simulated on this host) (the batched run's pool kept
about as small: --util is divided by the factor each rank's KV blocks
shrink by).

Usage: python3 tools/engine_check.py INFER MODEL_DIR [--device cuda] [--util 0.004] [--sampled | --mixed]
                                     [--graph decode,piecewise,full] [--transitions] [--tp N]
                                     [--batched-flags "--speculative ngram" ...]
Prints one line per run and the verdict; exits non-zero on any mismatch or
when the 64-request workload saw no preemption."""
import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(infer, model, device, reqs_path, extra, nodes=1):
    cmd = [infer, "generate", "--model", model, "--device", device, "--input", reqs_path, "--json",
           "--batch-invariant"] + extra
    t0 = time.time()
    other = None
    env = None
    if nodes > 1:  # two machines on one host: a GPU each, NCCL over sockets only
        cmd += ["--nnodes", "2", "--dist-init-addr", f"127.0.0.1:{free_port()}"]
        env = dict(os.environ, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", CUDA_VISIBLE_DEVICES="0")
        other = subprocess.Popen(cmd + ["--node-rank", "1"], env=dict(env, CUDA_VISIBLE_DEVICES="1"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    err1 = other.communicate(timeout=120)[1] if other else ""
    if p.returncode != 0 or (other and other.returncode != 0):
        sys.exit(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr[-2000:]}" +
                 (f"\nnode 1 (exit {other.returncode}):\n{err1[-2000:]}" if other else ""))
    out = {}
    for line in p.stdout.splitlines():
        o = json.loads(line)
        out[o["request"]] = (o["ids"], o.get("logprobs"))
    summary = [l for l in p.stderr.splitlines() if "requests" in l or "cuda graphs:" in l or "speculative decoding:" in l]
    return out, "\n    ".join(summary), time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer")
    ap.add_argument("model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--util", default="0.004", help="--gpu-memory-utilization of the batched run")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--graph", default="decode",
                    help="--cuda-graph-mode of the batched runs, comma-separated (cuda only)")
    ap.add_argument("--transitions", action="store_true", help="8 requests finishing to leave 8, 5, 3 running")
    ap.add_argument("--alone-graph", default="none", help="--cuda-graph-mode of the alone run (cuda only)")
    ap.add_argument("--sampled", action="store_true",
                    help="seeded sampling (temperature 0.8, top_p 0.9, top_k 50, penalties) instead of greedy")
    ap.add_argument("--mixed", action="store_true",
                    help="greedy with log-probabilities, seeded sampled, greedy with top log-probabilities")
    ap.add_argument("--tp", type=int, default=1, help="--tensor-parallel-size of both runs")
    ap.add_argument("--nodes", type=int, default=1, choices=(1, 2),
                    help="2: the ranks as two machines on this host (--nnodes 2, a GPU each, NCCL over sockets)")
    ap.add_argument("--batched-flags", action="append", default=[],
                    help="flags of one more batched run per mode (repeatable), e.g. '--speculative suffix'")
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.model, "config.json")))
    vocab = cfg["vocab_size"]
    tp = ["--tensor-parallel-size", str(a.tp)] if a.tp > 1 else []
    kv_heads = cfg.get("num_key_value_heads", cfg.get("num_attention_heads", 1))
    util = float(a.util) / min(a.tp, kv_heads)
    rng = random.Random(5)
    seeds = random.Random(6)  # --mixed: its seeds apart, so its prompts and lengths are the greedy run's
    shared = [rng.randrange(vocab) for _ in range(64)]
    if a.transitions:
        a.requests = 8
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "reqs.jsonl")
        with open(path, "w") as f:
            for i in range(a.requests):
                if a.transitions:
                    prompt = [rng.randrange(vocab) for _ in range(rng.randint(8, 40))]
                    out = [12, 12, 12, 24, 24, 48, 48, 48][i]
                else:
                    prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 300))]
                    if i % 3 == 0:
                        prompt = shared + prompt[:200]
                    out = rng.randint(1, 48)
                r = {"prompt_ids": prompt, "max_tokens": out, "ignore_eos": True}
                if a.mixed and i % 3 == 0:
                    r.update(logprobs=True)
                elif a.mixed and i % 3 == 2:
                    r.update(logprobs=True, top_logprobs=2)
                if a.sampled or (a.mixed and i % 3 == 1):
                    r.update(logprobs=a.mixed, temperature=0.8, top_p=0.9, top_k=50, presence_penalty=0.5,
                             repetition_penalty=1.1, seed=(seeds if a.mixed else rng).randrange(1 << 32))
                f.write(json.dumps(r) + "\n")
        g2 = ["--cuda-graph-mode", a.alone_graph] if a.device == "cuda" else []
        alone, s2, t2 = run(a.infer, a.model, a.device, path,
                            ["--max-num-seqs", "1", "--max-model-len", "512"] + g2 + tp, a.nodes)
        print(f"alone   ({t2:.1f} s): {s2}")
        ok = True
        runs = [(mode, flags) for mode in a.graph.split(",") for flags in [""] + a.batched_flags]
        for mode, flags in runs:
            g1 = ["--cuda-graph-mode", mode] if a.device == "cuda" else []
            batched, s1, t1 = run(a.infer, a.model, a.device, path,
                                  ["--max-num-batched-tokens", "256", "--max-num-seqs", "64", "--max-model-len",
                                   "512", "--gpu-memory-utilization", "0.5" if a.transitions else f"{util:g}"] + g1 + tp
                                  + flags.split(), a.nodes)
            print(f"batched {mode} {flags} ({t1:.1f} s): {s1}")
            bad = [i for i in range(a.requests) if batched.get(i) != alone.get(i)]
            m = re.search(r"(\d+) preemptions?", s1)
            preempted = int(m.group(1)) if m else -1
            kind = ("seeded sampled" if a.sampled else "mixed, log-probabilities too" if a.mixed else "greedy") + (" transition" if a.transitions else "")
            good = not bad and (preempted > 0 or a.transitions)
            ok = ok and good
            where = f"{mode}, tp {a.tp}" if a.tp > 1 else mode
            where += ", 2 nodes" if a.nodes > 1 else ""
            where += f", {flags}" if flags else ""
            print(f"{os.path.basename(a.model.rstrip('/'))} [{where}]: {a.requests - len(bad)}/{a.requests} {kind} "
                  f"requests equal alone, preemptions {preempted} -> {'OK' if good else 'FAIL'}")
            if bad:
                i = bad[0]
                b, al = batched.get(i), alone.get(i)
                print(f"first mismatch: request {i}: batched {b and b[0][:12]} alone {al and al[0][:12]}"
                      + (f"; log-probabilities {b[1][:3]} against {al[1][:3]}" if b and al and b[1] != al[1] else ""))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
