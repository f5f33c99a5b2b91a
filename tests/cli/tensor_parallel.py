#!/usr/bin/env python3
"""Tensor parallelism on the CPU, ranks as separate processes (the CPU
communicator, --dist-backend cpu-test), through the CLI:
- `infer logits` over 2 and 4 ranks equals one rank within 1e-5 (fp32) on the
  three tiny fixtures: a 12-token prompt (chunks of 8) and 8 decode steps;
  and over 8 ranks on 8-head variants of the Llama and Qwen3 fixtures
  (random weights from `infer mkmodel`);
- 64 requests batched over 2 ranks (chunked prefill, a small KV pool that
  preempts, a shared prefix for the prefix cache) give exactly what each
  gives alone over 2 ranks, greedy and seeded;
- a rank killed while `infer serve --tp 2` runs ends the group: the server
  exits non-zero within 30 s, naming the rank;
- 2 ranks as two machines (--nnodes 2, node 1 started apart): both end with
  exit 0, several times over (rank 0 leaves last), and the logits equal one
  rank's; 4 ranks as two machines of 2 likewise (rank 0's messages through
  the mailbox to rank 1, over TCP to ranks 2 and 3);
- a bad INFER_RELAY_SPIN_MS is refused by name, before any rank starts, by
  every command that splits a model;
- rank 0's step messages reach its machine's ranks through the shared-memory
  mailbox, through it with every step's bytes too big for it, and through
  the connections alone (INFER_RELAY=tcp): the same logits each way; bad
  INFER_RELAY and INFER_RELAY_MAILBOX_BYTES refused by name, like
  INFER_RELAY_SPIN_MS, by every command that splits a model.

Usage: INFER=path/to/infer python3 tests/cli/tensor_parallel.py
Prints one line per check; exits non-zero on any failure."""
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

INFER = os.environ.get("INFER", "build/infer")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
TP = ["--device", "cpu-reference", "--dist-backend", "cpu-test", "--threads", "1"]
failures = []


def check(ok, what):
    print(f"[{'PASS' if ok else 'FAIL'}] tensor parallel: {what}", flush=True)
    if not ok:
        failures.append(what)


def read_logits(path):
    """The f32 [rows, vocab] "logits" tensor of a safetensors file, as rows of floats."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    rows, vocab = header["logits"]["shape"]
    start, end = header["logits"]["data_offsets"]
    flat = struct.unpack(f"<{rows * vocab}f", data[start:end])
    return [flat[r * vocab:(r + 1) * vocab] for r in range(rows)]


def rel_err(a, b):
    return max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b)


def logits(tmp, fixture, ids, prefill, extra, env=None):
    """fixture: a folder of tests/fixtures, or a model's path. (logits or None, stderr)."""
    out = os.path.join(tmp, f"{os.path.basename(fixture)}-{len(extra)}.safetensors")
    p = subprocess.run([INFER, "logits", "--model", os.path.join(FIX, fixture), "--ids", ",".join(map(str, ids)),
                        "--prefill", str(prefill), "--max-num-batched-tokens", "8", "--out", out] + extra,
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {})))
    if p.returncode:
        return None, p.stderr[-500:]
    return read_logits(out), p.stderr


def check_logits(tmp):
    rng = random.Random(1)
    for fixture in ("tiny-llama", "tiny-qwen3", "tiny-gemma3"):
        ids = [rng.randrange(1024) for _ in range(20)]
        one, err = logits(tmp, fixture, ids, 12, ["--device", "cpu-reference", "--threads", "1"])
        check(one is not None, f"{fixture} one rank ran {err}")
        for size in (2, 4):
            split, err = logits(tmp, fixture, ids, 12, ["--tp", str(size)] + TP)
            if split is None or one is None:
                check(False, f"{fixture} over {size} ranks ran: {err}")
                continue
            worst = max(rel_err(a, b) for a, b in zip(split, one))
            check(len(split) == 20 and worst <= 1e-5,
                  f"{fixture} over {size} ranks: 12 prompt + 8 decode rows equal one rank's (max rel err {worst:.2e})")


def check_relay_paths(tmp):
    """Rank 0's step messages reach the ranks of its machine through the shared-memory mailbox
    (its log line says so), through it with every message too big for it (its bytes on the
    connections), or through the connections alone (INFER_RELAY=tcp): the same logits each way;
    bad settings refused by name before any rank starts."""
    rng = random.Random(3)
    ids = [rng.randrange(1024) for _ in range(20)]
    one, _ = logits(tmp, "tiny-llama", ids, 12, ["--device", "cpu-reference", "--threads", "1"])
    for what, env, mailbox in (("the mailbox", {}, True),
                               ("a 64-byte mailbox (every step's bytes on the connections)",
                                {"INFER_RELAY_MAILBOX_BYTES": "64"}, True),
                               ("the connections alone", {"INFER_RELAY": "tcp"}, False)):
        split, err = logits(tmp, "tiny-llama", ids, 12, ["--tp", "4"] + TP, dict(env, INFER_LOG="info"))
        ok = split is not None and one is not None and max(rel_err(a, b) for a, b in zip(split, one)) <= 1e-5
        check(ok and ("shared-memory mailbox" in err) == mailbox,
              f"relay through {what}: 4 ranks' logits equal one rank's" + ("" if ok else f" ({err[-300:]})"))

def eight_heads(tmp, fixture):
    """The fixture's config with 8 attention heads, random weights (infer mkmodel): its path, or None."""
    with open(os.path.join(FIX, fixture, "config.json")) as f:
        text = f.read()
    cfg = os.path.join(tmp, f"{fixture}-8-heads.json")
    with open(cfg, "w") as f:
        f.write(text.replace('"num_attention_heads": 4,', '"num_attention_heads": 8,'))
    out = os.path.join(tmp, f"{fixture}-8-heads")
    p = subprocess.run([INFER, "mkmodel", "--config", cfg, "--out", out, "--seed", "1"], capture_output=True,
                       text=True, timeout=120)
    return out if p.returncode == 0 else None


def check_logits_8(tmp):
    """8 ranks as processes: each one query head, each of the 2 KV heads on 4 ranks."""
    rng = random.Random(8)
    for fixture in ("tiny-llama", "tiny-qwen3"):
        model = eight_heads(tmp, fixture)
        check(model is not None, f"{fixture} with 8 heads made by infer mkmodel")
        if model is None:
            continue
        ids = [rng.randrange(1024) for _ in range(20)]
        one, err = logits(tmp, model, ids, 12, ["--device", "cpu-reference", "--threads", "1"])
        split, err8 = logits(tmp, model, ids, 12, ["--tp", "8"] + TP)
        if one is None or split is None:
            check(False, f"{fixture} with 8 heads over 1 and 8 ranks ran: {err or err8}")
            continue
        worst = max(rel_err(a, b) for a, b in zip(split, one))
        check(len(split) == 20 and worst <= 1e-5,
              f"{fixture} with 8 heads over 8 ranks: 12 prompt + 8 decode rows equal one rank's "
              f"(max rel err {worst:.2e})")


def generate(path, extra):
    p = subprocess.run([INFER, "generate", "--model", os.path.join(FIX, "tiny-llama"), "--input", path, "--json",
                        "--max-model-len", "512", "--tp", "2"] + TP + extra,
                       capture_output=True, text=True, timeout=600)
    if p.returncode:
        return None, p.stderr[-800:]
    return {(o["request"], o["index"]): o["ids"] for o in map(json.loads, p.stdout.splitlines())}, p.stderr


def check_batch_equals_alone(tmp):
    rng = random.Random(5)
    shared = [rng.randrange(1024) for _ in range(40)]
    for sampled in (False, True):
        path = os.path.join(tmp, f"reqs{int(sampled)}.jsonl")
        with open(path, "w") as f:
            for i in range(64):
                prompt = [rng.randrange(1024) for _ in range(rng.randint(1, 120))]
                if i % 3 == 0:
                    prompt = shared + prompt[:60]
                r = {"prompt_ids": prompt, "max_tokens": rng.randint(1, 24), "ignore_eos": True}
                if sampled:
                    r.update(temperature=0.8, top_p=0.9, top_k=50, presence_penalty=0.5, seed=rng.randrange(1 << 30))
                f.write(json.dumps(r) + "\n")
        alone, err_a = generate(path, ["--max-num-seqs", "1"])
        batched, err_b = generate(path, ["--max-num-batched-tokens", "64", "--max-num-seqs", "16"])
        kind = "seeded" if sampled else "greedy"
        if alone is None or batched is None:
            check(False, f"64 {kind} requests over 2 ranks ran: {err_a or err_b}")
            continue
        same = sum(alone[k] == batched.get(k) for k in alone)
        check(same == 64 and len(alone) == 64, f"64 {kind} requests batched over 2 ranks equal alone: {same}/64")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def check_killed_rank():
    p = subprocess.Popen([INFER, "serve", "--model", os.path.join(FIX, "tiny-llama"), "--port", "0", "--tp", "2"] + TP,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    line = ""
    while time.time() < deadline and "serving" not in line:
        line = p.stderr.readline()
        if not line and p.poll() is not None:
            break
    workers = children(p.pid)
    if "serving" not in line or not workers:
        p.kill()
        check(False, f"serve --tp 2 started (got {line.strip()!r}, workers {workers})")
        return
    t0 = time.time()
    os.kill(workers[0], signal.SIGKILL)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, "a killed rank ends serve --tp 2 within 30 s")
        return
    took = time.time() - t0
    rest = p.stderr.read()
    check(rc != 0 and "rank 1 is gone" in rest,
          f"a killed rank ends serve --tp 2: exit {rc} after {took:.2f} s, naming the rank")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_two_nodes(tmp):
    """2 ranks as 2 machines, 6 times; and 4 as 2 machines of 2, twice (rank 1 takes rank 0's
    messages from the mailbox, ranks 2 and 3 over TCP)."""
    rng = random.Random(2)
    ids = [rng.randrange(1024) for _ in range(12)]
    one, err = logits(tmp, "tiny-llama", ids, 8, ["--device", "cpu-reference", "--threads", "1"])
    for size, runs in ((2, 6), (4, 2)):
        bad = []
        for i in range(runs):
            nodes = ["--tp", str(size), "--nnodes", "2", "--dist-init-addr", f"127.0.0.1:{free_port()}"] + TP
            other = subprocess.Popen([INFER, "logits", "--model", os.path.join(FIX, "tiny-llama"), "--ids",
                                      ",".join(map(str, ids)), "--prefill", "8", "--out", os.path.join(tmp, "node1"),
                                      "--node-rank", "1"] + nodes, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
            split, err0 = logits(tmp, "tiny-llama", ids, 8, nodes + ["--node-rank", "0"], {"INFER_LOG": "info"})
            try:
                err1 = other.communicate(timeout=60)[1]
            except subprocess.TimeoutExpired:
                other.kill()
                err1 = "node 1 still running 60 s on"
            if split is None or other.returncode != 0:
                bad.append(f"run {i}: node 0 {err0.strip()[-300:]!r}, node 1 exit {other.returncode}: "
                           f"{err1.strip()[-300:]!r}")
            elif one is not None and max(rel_err(a, b) for a, b in zip(split, one)) > 1e-5:
                bad.append(f"run {i}: logits differ from one rank's")
            elif ("shared-memory mailbox" in err0) != (size > 2):
                bad.append(f"run {i}: node 0 {'did not use' if size > 2 else 'used'} the mailbox")
        what = "2 ranks as 2 machines" if size == 2 else "4 ranks as 2 machines of 2 (mailbox and TCP)"
        check(one is not None and not bad,
              f"{what}: {runs - len(bad)}/{runs} runs end cleanly on both, logits equal one rank's"
              + (f"; {bad[0]}" if bad else ""))


def check_bad_relay_settings(tmp):
    """Each relay setting's bad values, refused by name before any rank starts, by every command that
    splits a model."""
    model = ["--model", os.path.join(FIX, "tiny-llama"), "--tp", "2"] + TP
    commands = {"generate": ["generate", "--prompt-ids", "1,2,3"] + model,
                "logits": ["logits", "--ids", "1,2,3", "--out", os.path.join(tmp, "spin.safetensors")] + model,
                "bench": ["bench", "--batch", "1", "--prompt-len", "0"] + model,
                "serve": ["serve", "--port", str(free_port())] + model}
    bad = [("INFER_RELAY_SPIN_MS", v) for v in ("abc", "-1", "20000", "5ms")] + \
          [("INFER_RELAY", "udp"), ("INFER_RELAY_MAILBOX_BYTES", "12"), ("INFER_RELAY_MAILBOX_BYTES", "1e3x")]
    for var, value in bad:
        for name, args in commands.items():
            env = dict(os.environ, **{var: value})
            p = subprocess.run([INFER] + args, capture_output=True, text=True, timeout=60, env=env)
            check(p.returncode != 0 and var in p.stderr, f"{name}: {var}={value} refused by name (exit {p.returncode})")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_bad_relay_settings(tmp)
        check_logits(tmp)
        check_logits_8(tmp)
        check_relay_paths(tmp)
        check_batch_equals_alone(tmp)
        check_killed_rank()
        check_two_nodes(tmp)
    print(f"tensor parallel: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
