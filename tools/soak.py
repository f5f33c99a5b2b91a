#!/usr/bin/env python3
"""A memory soak of `infer serve`: clients send novel, mixed traffic for a while and the server's
resident memory (VmRSS) is sampled; after the warm-up it must stay within a bound.

    tools/soak.py --infer build/infer --model MODEL [--minutes 60] [--warmup 5] [--bound-mb 8]
                  [--clients 16] [--replay 5] [--json OUT]

The server runs with --check-integrity (the KV cache's accounting is checked after every step; a
violation aborts it, which fails the soak). Each client loops over request kinds: chat, chat
streamed, completions, completions streamed, n = 2, a JSON-schema constraint (a new schema each
time, so the compiled-grammar cache fills to its bound; --schemas N draws them from N), tool
calls, and hang-ups (a stream dropped after its first chunk). Prompts are new text (random words
and numbers), so the prefix cache, the tokenizer's word cache and the KV pool see new content all
the time, as a server does.

Reported: RSS after the warm-up and at the end (each the median of a minute's samples under
traffic: RSS moves with what the requests in flight hold), the largest, the growth between them and
its rate per minute, RSS once idle after the traffic, requests and failures by kind; with --replay
M, the first M minutes of the same traffic (the same seed) are sent again at the end and their
growth over the end's RSS reported apart, again under traffic (what repeats must cost nothing).
Exit status 1 when any request failed, the server died, or the growth after the warm-up passed
--bound-mb."""
import argparse
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

WORDS = ("the of and to in is was for on that with as by at from his her an which or be are this had not "
         "but they were have one all their there been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now "
         "such like our over man me even most made after also did many before must through back years where "
         "much your way well down should because each just those people how too little state good very make "
         "world still own see men work long get here between both life being under never day same another "
         "know while last might us great old year off come since against go came right used take three river "
         "mountain garden violet copper lantern harbor quartz meadow thunder pepper saddle").split()

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string", "maxLength": 12}}, "required": ["q"],
    "additionalProperties": False}}}


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def busy(host, port):
    """Requests running or waiting, from the server's metrics."""
    c = http.client.HTTPConnection(host, port, timeout=30)
    try:
        c.request("GET", "/metrics")
        page = c.getresponse().read().decode()
    finally:
        c.close()
    return sum(float(m) for m in re.findall(r"^infer_num_requests_(?:running|waiting)\{[^}]*\} (\S+)$", page, re.M))


def settled_rss_kb(p, host, port):
    """RSS once the server is idle: no request running or waiting, the connections' threads gone
    (a closed connection lingers 2 s), and what the allocator gives back given back (the
    sanitizers' allocator returns memory to the system every few seconds): the least of 10 s."""
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline and busy(host, port):
        time.sleep(0.5)
    time.sleep(3)
    least = None
    for _ in range(10):
        if p.poll() is not None:
            return 0
        kb = rss_kb(p.pid)
        least = kb if least is None else min(least, kb)
        time.sleep(1)
    return least


SAMPLE_SECONDS = 5


def sample_rss(p, threads, t0):
    """(seconds since t0, RSS) every SAMPLE_SECONDS while the traffic threads run, then joins them."""
    samples = []
    while any(t.is_alive() for t in threads) and p.poll() is None:
        time.sleep(SAMPLE_SECONDS)
        if p.poll() is None:
            samples.append((time.time() - t0, rss_kb(p.pid)))
    for t in threads:
        t.join()
    return samples


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0


def text(rng, n):
    return " ".join(rng.choice(WORDS) if rng.random() < 0.85 else str(rng.randrange(10 ** 6)) for _ in range(n))


class Client:
    """One client's loop: request kinds in a seeded random order."""

    KINDS = ("chat", "chat_stream", "completion", "completion_stream", "n2", "schema", "tools", "hangup")

    def __init__(self, host, port, model, seed, stop_at, stats, lock, kinds, schemas, max_tokens):
        self.host, self.port, self.model, self.kinds, self.schemas = host, port, model, kinds, schemas
        self.max_tokens = max_tokens
        self.rng = random.Random(seed)
        self.stop_at, self.stats, self.lock = stop_at, stats, lock
        self.conn = None

    def _conn(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        return self.conn

    def _body(self, kind):
        rng = self.rng
        mt = rng.randint(1, self.max_tokens)
        if kind.startswith("completion"):
            return "/v1/completions", {"model": self.model, "prompt": text(rng, rng.randint(3, 60)), "max_tokens": mt,
                                       "temperature": 1.0, "stream": kind.endswith("stream")}
        b = {"model": self.model, "messages": [{"role": "user", "content": text(rng, rng.randint(3, 80))}],
             "max_tokens": mt, "temperature": 1.0}
        if kind in ("chat_stream", "hangup"):
            b["stream"] = True
        if kind == "n2":
            b["n"] = 2
        if kind == "schema":  # one of --schemas, or a new one (0)
            srng = random.Random(rng.randrange(self.schemas)) if self.schemas else rng
            props = {f"k{srng.randrange(400)}": {"type": srng.choice(["integer", "boolean", "string"])}
                     for _ in range(srng.randint(1, 3))}
            b["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": {
                "type": "object", "properties": props, "required": list(props), "additionalProperties": False}}}
        if kind == "tools":
            b["tools"] = [TOOL]
        return "/v1/chat/completions", b

    def one(self):
        kind = self.rng.choice(self.kinds)
        path, body = self._body(kind)
        ok = False
        try:
            c = self._conn()
            c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            if kind == "hangup":
                r.read(1)
                c.close()  # mid-stream: the server must abort it and free its blocks
                self.conn = None
                ok = r.status == 200
            else:
                data = r.read()
                ok = r.status == 200 and (body.get("stream") and data.rstrip().endswith(b"[DONE]")
                                          or not body.get("stream") and b'"choices"' in data)
        except (OSError, http.client.HTTPException):
            self.conn = None
        with self.lock:
            k = self.stats.setdefault(kind, [0, 0])
            k[0] += 1
            k[1] += not ok

    def run(self):
        while time.time() < self.stop_at:
            self.one()
        if self.conn is not None:  # done, as a client is: an idle kept-alive connection holds a thread
            self.conn.close()


def traffic(a, host, port, seconds, stats, lock):
    stop_at = time.time() + seconds
    threads = [threading.Thread(target=Client(host, port, "soak", a.seed * 1000 + i, stop_at, stats, lock,
                                              a.kinds.split(","), a.schemas, a.max_tokens).run)
               for i in range(a.clients)]
    for t in threads:
        t.start()
    return threads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--infer", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5, help="minutes before the baseline")
    ap.add_argument("--replay", type=float, default=0, help="minutes of the same traffic sent again at the end")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--bound-mb", type=float, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(Client.KINDS), help="request kinds (default: all)")
    ap.add_argument("--schemas", type=int, default=0,
                    help="distinct JSON schemas the schema requests draw from (0: a new one each time)")
    ap.add_argument("--max-tokens", type=int, default=24, help="each request's max_tokens: 1 to this")
    ap.add_argument("--json")
    ap.add_argument("--serve-arg", action="append", default=[], help="an extra `infer serve` argument")
    a = ap.parse_args()
    kinds = a.kinds.split(",")
    if not kinds or any(k not in Client.KINDS for k in kinds):
        sys.exit(f"soak: --kinds: each of {', '.join(Client.KINDS)}")

    log = open(os.environ.get("INFER_SOAK_LOG", os.devnull), "w")
    p = subprocess.Popen([a.infer, "serve", "--model", a.model, "--port", "0", "--served-model-name", "soak",
                          "--check-integrity", "--max-num-seqs", str(a.clients), *a.serve_arg],
                         stdout=log, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        log.write(line)
        m = re.search(r"serving .* on http://([^:]+):(\d+)", line)
        if m:
            host, port = m.group(1), int(m.group(2))
            break
    else:
        sys.exit(f"soak: infer serve did not start (exit {p.wait()})")
    threading.Thread(target=lambda: [log.write(x) for x in p.stderr], daemon=True).start()

    stats, lock = {}, threading.Lock()
    t0 = time.time()
    samples = sample_rss(p, traffic(a, host, port, a.minutes * 60, stats, lock), t0)
    # under traffic, RSS moves with what the requests in flight hold: the growth compares the
    # median of the first minute after the warm-up with that of the last minute
    measured = [kb for t, kb in samples if t >= a.warmup * 60]
    per_minute = 60 // SAMPLE_SECONDS
    baseline, end = median(measured[:per_minute]), median(measured[-per_minute:])
    replay = idle = None
    if p.poll() is None:
        idle = settled_rss_kb(p, host, port)
    if a.replay > 0 and p.poll() is None:  # under traffic, as the end: the second half's median
        again = [kb for _, kb in sample_rss(p, traffic(a, host, port, a.replay * 60, stats, lock), t0)]
        replay = (median(again[len(again) // 2:]) - end) / 1024 if again else None
    died = p.poll() is not None
    if not died:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=120)
        died = rc != 0
    growth = (end - baseline) / 1024
    minutes = max(a.minutes - a.warmup, 1e-9)
    report = {
        "minutes": a.minutes, "warmup_minutes": a.warmup, "clients": a.clients,
        "rss_mb_after_warmup": baseline / 1024, "rss_mb_end": end / 1024,
        "rss_mb_idle": idle / 1024 if idle is not None else None,
        "rss_mb_max": max(measured or [0]) / 1024, "growth_mb": growth, "growth_mb_per_minute": growth / minutes,
        "replay_growth_mb": replay, "requests": sum(v[0] for v in stats.values()),
        "failures": sum(v[1] for v in stats.values()), "by_kind": stats, "server_died": died,
        "bound_mb": a.bound_mb, "samples": samples,
    }
    if a.json:
        json.dump(report, open(a.json, "w"), indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    bad = report["failures"] > 0 or died or growth > a.bound_mb
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
