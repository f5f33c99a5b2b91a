#!/usr/bin/env python3
"""Is `infer bench-serve` itself a bottleneck? It runs pinned to one core against a stub server
(pinned to another) that answers every streaming completion at once with canned chunks, one
token each, so the figure is the load generator's own ceiling: chunks parsed and timed per second,
and streams held open at once.

Usage: python3 bench/loadgen_capacity.py [INFER] [--streams 512] [--chunks 400] [--requests 2048]
Prints the bench-serve summary per run and a line of figures."""
import argparse
import json
import os
import socket
import subprocess
import threading

CACHE = {}
LOCK = threading.Lock()
OPEN = [0]  # requests received


def response(n_prompt, k):
    """The whole streamed answer for a prompt of n_prompt ids and k output tokens (cached)."""
    key = (n_prompt, k)
    if key not in CACHE:
        ev = [b'data: {"choices":[{"index":0,"text":"x","finish_reason":null}]}\n\n'] * k
        ev.append(b'data: {"choices":[{"index":0,"text":"","finish_reason":"length"}]}\n\n')
        ev.append(('data: {"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}\n\n'
                   % (n_prompt, k, n_prompt + k)).encode())
        ev.append(b"data: [DONE]\n\n")
        body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in ev) + b"0\r\n\r\n"
        CACHE[key] = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + body)
    return CACHE[key]


def answer(c, hold, streams):
    with c:
        data = b""
        while b"\r\n\r\n" not in data:
            got = c.recv(65536)
            if not got:
                return
            data += got
        head, rest = data.split(b"\r\n\r\n", 1)
        if not head.startswith(b"POST"):  # GET /metrics: none here
            c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        while len(rest) < length:
            rest += c.recv(65536)
        body = json.loads(rest)
        with LOCK:
            OPEN[0] += 1
            if OPEN[0] >= streams:  # the first wave is all here: let every stream answer
                hold.set()
        hold.wait()  # no stream answers before `streams` of them are open at once
        c.sendall(response(len(body["prompt"]), body["max_tokens"]))


def serve(sock, streams):
    hold = threading.Event()
    while True:
        try:
            c, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=answer, args=(c, hold, streams), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("infer", nargs="?", default="build/infer")
    ap.add_argument("--streams", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=400, help="output tokens (chunks) a request")
    ap.add_argument("--requests", type=int, default=2048)
    a = ap.parse_args()
    os.sched_setaffinity(0, {1 % os.cpu_count()})  # the stub on the second core
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    threading.Thread(target=serve, args=(sock, a.streams), daemon=True).start()
    url = "http://127.0.0.1:%d" % sock.getsockname()[1]
    cmd = ["taskset", "-c", "0", a.infer, "bench-serve", "--url", url, "--model", "stub", "--workload",
           "continuous_batching", "--num-prompts", str(a.requests), "--max-concurrency", str(a.streams),
           "--max-context", str(a.chunks + 8), "--warmup", "0", "--time-limit", "300"]
    # continuous_batching draws outputs of 32..512; --max-context caps prompt + output: most requests
    # get close to a.chunks output tokens
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(p.stdout.strip())
    s = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"loadgen capacity: {s['completed']}/{s['requests']} streams, up to {a.streams} at once, "
          f"{s['chunks']} chunks in {s['duration_s']:.2f} s = {s['chunks_per_s']:.0f} chunks/s on one core; "
          f"failed {s['failed']}; clock resolution {s['clock_resolution_ns']} ns")
    sock.close()


if __name__ == "__main__":
    main()
