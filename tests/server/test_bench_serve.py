"""`infer bench-serve`, the load generator (src/loadgen/), in CI:
- against `infer serve` on the tiny Gemma (real tokenizer), each workload briefly: every request
  completes, and the output tokens it counts from the streams' usage equal the server's own
  /metrics counters (infer_generation_tokens_total, infer_prompt_tokens_total);
- against a deliberately broken stub server, a server that answers 500, drops the stream, sends a
  malformed chunk, sends usage that disagrees, or closes before answering is counted as a
  failure of that kind (and the exit code says some failed), never as a fast request."""
import json
import os
import shutil
import socket
import subprocess
import threading

import pytest
from conftest import INFER, Server
from test_concurrency import metric

WORKLOADS = ["baseline", "continuous_batching", "paged_attention", "chunked_prefill", "prefix_caching", "sharegpt",
             "grounded"]


def bench_runs(url, model, *extra, timeout=300):
    """Exit status, every run's summary (one a rate), stderr."""
    p = subprocess.run([INFER, "bench-serve", "--url", url, "--model", model, "--vocab", "1000", "--warmup", "0",
                        *extra], capture_output=True, text=True, timeout=timeout)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")], p.stderr


def bench(url, model, *extra, timeout=300):
    """Exit status, the last run's summary (None if none), stderr."""
    rc, runs, err = bench_runs(url, model, *extra, timeout=timeout)
    return rc, (runs[-1] if runs else None), err


@pytest.fixture(scope="module")
def server(tiny_gguf):
    s = Server(tiny_gguf, name="tiny", extra=("--max-model-len", "256"))
    yield s
    s.stop()


@pytest.mark.parametrize("workload", WORKLOADS)
def test_workload_counts_equal_the_servers(server, workload, tmp_path):
    gen0 = metric(server.url, "infer_generation_tokens_total")
    prompt0 = metric(server.url, "infer_prompt_tokens_total")
    rc, s, err = bench(server.url, "tiny", "--workload", workload, "--num-prompts", "6", "--max-context", "96",
                       "--request-rate", "50", "--report", str(tmp_path))
    assert rc == 0 and s, err
    assert s["completed"] == 6 and s["failed"] == 0, s
    assert s["output_tokens"] == metric(server.url, "infer_generation_tokens_total") - gen0
    assert s["prompt_tokens"] == metric(server.url, "infer_prompt_tokens_total") - prompt0
    assert s["ttft_ms"]["n"] == 6 and s["ttft_ms"]["p50"] > 0 and s["itl_ms"]["n"] > 0, s
    # its own reading of /metrics says the same
    assert s["metrics_agree"] is True and s["server_metrics"]["infer_generation_tokens_total"] == s["output_tokens"]
    assert s["server_metrics"]["infer_preemptions_total"] >= 0  # scraped, as the seed plan's figures ask
    report = [json.loads(l) for l in open(tmp_path / "results.jsonl")]
    assert report[-1]["workload"] == workload and report[-1]["output_tokens"] == s["output_tokens"]


def test_sweep_and_report(server, tmp_path):
    """A request-rate sweep over two workloads into one report folder: every run a line of
    results.jsonl, a row of report.md, its samples; the plots drawn where gnuplot is."""
    for workload in ("continuous_batching", "prefix_caching"):
        rc, s, err = bench(server.url, "tiny", "--workload", workload, "--num-prompts", "6", "--max-context", "64",
                           "--request-rate", "40,inf", "--label", "cpu 'tiny'", "--report", str(tmp_path))
        assert rc == 0, err
    runs = [json.loads(l) for l in open(tmp_path / "results.jsonl")]
    assert [(r["workload"], r["request_rate"]) for r in runs] == [
        ("continuous_batching", 40), ("continuous_batching", "inf"), ("prefix_caching", 40), ("prefix_caching", "inf")]
    assert all(r["label"] == "cpu 'tiny'" and r["completed"] == 6 for r in runs)
    for r in runs:
        for kind in ("ttft", "itl"):
            lines = open(tmp_path / f"{r['samples']}.{kind}.tsv").read().splitlines()
            assert len(lines) == (6 if kind == "ttft" else r["itl_ms"]["n"])
            assert float(lines[-1].split()[1]) == 1.0  # a cumulative distribution
    md = open(tmp_path / "report.md").read()
    assert md.count("| cpu 'tiny' |") == 4
    pngs = ["latency_throughput.png", "workloads.png"] + [
        f"{k}_cdf_{w}.png" for w in ("continuous_batching", "prefix_caching") for k in ("ttft", "itl")]
    if shutil.which("gnuplot"):
        for png in pngs:
            assert open(tmp_path / png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", png
            assert f"({png})" in md
    else:
        assert "Plots not drawn" in md
    os.remove(tmp_path / "report.md")  # --redraw: the report again from results.jsonl, no requests
    p = subprocess.run([INFER, "bench-serve", "--redraw", "--report", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0 and open(tmp_path / "report.md").read().count("| cpu 'tiny' |") == 4, p.stderr
    # without the samples (docs/bench keeps none) every plot is still drawn: a CDF says it has none
    shutil.rmtree(tmp_path / "samples")
    for png in pngs:
        os.remove(tmp_path / png)
    p = subprocess.run([INFER, "bench-serve", "--redraw", "--report", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    if shutil.which("gnuplot"):
        for png in pngs:
            assert open(tmp_path / png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", png
        assert "no samples" in open(tmp_path / "plots.gp").read()


def test_same_seed_same_requests(server):
    """The workload is fixed by --seed: two runs send the same prompts (the same token counts)."""
    a = bench(server.url, "tiny", "--workload", "sharegpt", "--num-prompts", "5", "--max-context", "96", "--seed", "7")
    b = bench(server.url, "tiny", "--workload", "sharegpt", "--num-prompts", "5", "--max-context", "96", "--seed", "7")
    c = bench(server.url, "tiny", "--workload", "sharegpt", "--num-prompts", "5", "--max-context", "96", "--seed", "8")
    assert a[0] == b[0] == c[0] == 0
    assert (a[1]["prompt_tokens"], a[1]["output_tokens"]) == (b[1]["prompt_tokens"], b[1]["output_tokens"])
    assert (a[1]["prompt_tokens"], a[1]["output_tokens"]) != (c[1]["prompt_tokens"], c[1]["output_tokens"])


def test_sweep_rates_send_the_lengths_not_the_prompts(server):
    """A sweep's rates send the plain run's lengths (the same prompt tokens) with token ids of their
    own: right after the plain run, none finds a prompt in the prefix cache, where the plain run sent
    again does (baseline: one request at a time, so no preemption adds hits of its own)."""
    args = ("--workload", "baseline", "--num-prompts", "3", "--max-context", "64", "--seed", "11")
    rc, plain, err = bench(server.url, "tiny", *args)
    assert rc == 0 and plain, err
    rc, sweep, err = bench_runs(server.url, "tiny", *args, "--request-rate", "40,inf")
    assert rc == 0 and len(sweep) == 2, err
    rc, again, err = bench(server.url, "tiny", *args)
    assert rc == 0 and again, err
    for s in sweep:
        assert s["prompt_tokens"] == plain["prompt_tokens"], (s["prompt_tokens"], plain["prompt_tokens"])
        assert s["server_metrics"]["infer_prefix_cache_hits_total"] == 0, s["server_metrics"]
    assert again["server_metrics"]["infer_prefix_cache_hits_total"] > 0, again["server_metrics"]


# --- a broken server ---

def chunk(obj):
    return ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()


def text_chunk(t):
    return chunk({"choices": [{"index": 0, "text": t, "finish_reason": None}]})


def stub_response(mode, body):
    """The bytes the stub answers with, by mode; body is the request's JSON."""
    n, k = len(body["prompt"]), body["max_tokens"]
    # "nul": every token's text is U+0000 (valid JSON as "\u0000"; random weights draw such tokens)
    events = [text_chunk("\u0000" if mode == "nul" else "x") for _ in range(k)]
    events.append(chunk({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}))
    usage = {"prompt_tokens": n, "completion_tokens": k, "total_tokens": n + k}
    if mode == "usage":
        usage["completion_tokens"] = k + 3
    events.append(chunk({"choices": [], "usage": usage}))
    events.append(chunk("[DONE]"))
    if mode == "cut":
        events = events[: k // 2]
    if mode == "malformed":
        events.insert(1, b"data: {not json\n\n")
    if mode == "500":
        msg = b'{"error": {"message": "boom"}}'
        return b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s" % (len(msg), msg)
    if mode == "close":
        return b""
    data = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    if mode != "cut":
        data += b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + data


class Stub:
    """A one-thread-per-connection HTTP server that answers every request per `mode`."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(c,), daemon=True).start()

    def answer(self, c):
        with c:
            data = b""
            while b"\r\n\r\n" not in data:
                data += c.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            if not head.startswith(b"POST"):  # no /metrics here
                c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            while len(rest) < length:
                rest += c.recv(65536)
            c.sendall(stub_response(self.mode, json.loads(rest)))

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("mode,kind", [("ok", None), ("nul", None), ("500", "status"), ("cut", "cut"), ("malformed", "chunk"),
                                       ("usage", "usage"), ("close", "connect")])
def test_broken_server_is_counted_as_failures(mode, kind):
    stub = Stub(mode)
    try:
        rc, s, err = bench(stub.url, "stub", "--workload", "continuous_batching", "--num-prompts", "8",
                           "--max-context", "48", timeout=60)
    finally:
        stub.close()
    assert s, err
    if kind is None:
        assert rc == 0 and s["completed"] == 8 and s["failed"] == 0, (s, err)
        assert s["server_metrics"] is None and s["metrics_agree"] is None  # the stub has no /metrics
        assert s["output_tokens"] == s["itl_ms"]["n"] + 8  # one chunk a token here
    else:
        assert rc == 3 and s["completed"] == 0 and s["failures"] == {kind: 8}, (s, err)
        assert s["output_tokens"] == 0 and s["output_tok_s"] == 0


def test_refusals_name_the_flag():
    for args, flag in [(["--url", "https://x:1"], "--url"), (["--workload", "nope"], "--workload"),
                       (["--url", "http://127.0.0.1:99999"], "--url"), (["--request-rate", "-1"], "--request-rate")]:
        p = subprocess.run([INFER, "bench-serve", "--model", "m", *args], capture_output=True, text=True)
        assert p.returncode == 2 and flag in p.stderr, (args, p.stderr)
