"""A short memory soak (tools/soak.py): 16 clients of mixed traffic (chat, completions, streams,
n = 2, JSON schemas drawn from 16, tool calls, hang-ups) against `infer serve --check-integrity` on
the tiny Gemma GGUF with the real tokenizer. After a 75 s warm-up (the compiled-grammar cache, the
tokenizer's word cache and the KV pool fill) the server's RSS may grow by at most BOUND_MB over the
next 105 s, and replaying the first 45 s of the same traffic at most REPLAY_MB more (each RSS the
median of samples under traffic); no request may fail, and the integrity check must hold (a
violation aborts the server).

A leak of 2 KB a request shows: the run sends some 4,000 requests under the sanitizers (each asks
for 1 to 4 tokens). The hour-long form, on novel schemas (the grammar cache fills to its bound
first), is in docs/server.md ("Memory"). Under the sanitizer build the allocator's quarantine is
off (ASAN_OPTIONS), so freed memory is reused as in the release build."""
import json
import os
import subprocess
import sys

from conftest import INFER, ROOT

MINUTES, WARMUP, REPLAY = 3.0, 1.25, 0.75
BOUND_MB, REPLAY_MB = 6.0, 2.0


def test_rss_bounded_under_mixed_traffic(tiny_gguf, tmp_path):
    out = str(tmp_path / "soak.json")
    env = dict(os.environ, ASAN_OPTIONS="quarantine_size_mb=0:" + os.environ.get("ASAN_OPTIONS", ""),
               INFER_SOAK_LOG=str(tmp_path / "server.log"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "soak.py"), "--infer", INFER, "--model",
                        tiny_gguf, "--minutes", str(MINUTES), "--warmup", str(WARMUP), "--replay", str(REPLAY),
                        "--schemas", "16", "--max-tokens", "4", "--bound-mb", str(BOUND_MB), "--json", out],
                       capture_output=True, text=True, env=env, timeout=1200)
    assert os.path.exists(out), p.stdout + p.stderr + open(tmp_path / "server.log").read()[-3000:]
    r = json.load(open(out))
    summary = {k: v for k, v in r.items() if k != "samples"}
    print(json.dumps(summary, indent=1))
    assert not r["server_died"], open(tmp_path / "server.log").read()[-3000:]
    assert r["failures"] == 0, summary["by_kind"]
    assert r["requests"] > 2000, summary
    assert r["growth_mb"] <= BOUND_MB, summary
    assert r["replay_growth_mb"] is not None and r["replay_growth_mb"] <= REPLAY_MB, summary
