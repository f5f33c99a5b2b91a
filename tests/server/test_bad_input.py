"""The bad-input suite: malformed and hostile requests against one `infer serve` (the tiny
random Gemma GGUF with the real 262,144-token Gemma 3 tokenizer, context 2048) started with
--check-integrity (the engine checks its KV block accounting after every step and aborts the
process on a violation) and --max-body-mb 4.

Every case is one row of a table: how it is sent (well-formed HTTP through http.client, or raw
bytes on a socket where the HTTP framing itself is hostile), what is sent (method, path, headers,
body) and what must come back (the status; for the server's JSON errors OpenAI's shape
{"error": {"message", "type", "param", "code"}} with the expected param / code). Each case has a
short timeout, so a hang fails the case instead of stalling the suite. Some rows are clients
that leave in the middle of a valid long request (their KV blocks must come back), and one test
sends 64 bad requests at once. After every case the
process must still run and GET /health must answer 200; at the end a valid chat and a valid
streamed completion must succeed, /metrics must show no KV block in use and no request running,
and SIGTERM must end the process with status 0 (sanitizer builds report leaks as a non-zero exit).
"""
import http.client
import json
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Optional

import pytest

from conftest import Server

NAME = "bad-input"
MAX_BODY_MB = 4
MAX_BODY = MAX_BODY_MB << 20
VOCAB = 262144
CONTEXT = 2048
TIMEOUT = 8.0  # seconds per case: a hang is a failure, not a stuck suite
ANY = object()  # "not checked"
TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 405:
         "invalid_request_error", 413: "invalid_request_error", 415: "invalid_request_error", 429: "rate_limit_error"}

COMP = {"model": NAME, "prompt": "Hi", "max_tokens": 2}
CHAT = {"model": NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
DROP = object()


def merged(base, **kw):
    d = dict(base)
    for k, v in kw.items():
        if v is DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


def comp(**kw):
    return merged(COMP, **kw)


TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}


def chat(**kw):
    return merged(CHAT, **kw)


def msgs(*m, **kw):
    return chat(messages=list(m), **kw)


def dumps(o):
    return json.dumps(o, ensure_ascii=False).encode()


# ---- the three kinds of rows ----

class Http(NamedTuple):
    """Well-formed HTTP (http.client) with a possibly bad body."""
    method: str
    path: str
    body: Optional[bytes]
    status: int
    param: object = ANY  # the error's "param" (None for null), ANY: not checked
    code: object = ANY
    headers: Optional[dict] = None  # None: Content-Type: application/json (when there is a body)
    timeout: float = TIMEOUT


class Raw(NamedTuple):
    """Raw bytes on a socket. mode: "keep" (wait for the answer with the connection open), "shut"
    (half-close after sending, then wait), "close" (close at once: only the server's survival is
    checked). expect: the acceptable statuses of the first final response; None in it: the server
    may close the connection without answering (it cannot make sense of the request)."""
    data: bytes
    expect: frozenset
    mode: str = "keep"
    timeout: float = TIMEOUT
    then: tuple = ()  # the statuses of the responses that must follow (pipelined requests)


class Leave(NamedTuple):
    """A valid long request whose client leaves mid-way (stream: after the first chunk; else after
    `after` seconds): the request must be aborted and its KV blocks freed."""
    path: str
    body: dict
    after: float = 0.3


def H(method, path, body, status, param=ANY, *, code=ANY, headers=None, timeout=TIMEOUT):
    if isinstance(body, str):
        body = body.encode()
    return Http(method, path, body, status, param, code, headers, timeout)


def P(path, body, status=400, param=ANY, **kw):
    return H("POST", path, body, status, param, **kw)


def C(body, status=400, param=ANY, **kw):  # /v1/completions
    return P("/v1/completions", body, status, param, **kw)


def X(body, status=400, param=ANY, **kw):  # /v1/chat/completions
    return P("/v1/chat/completions", body, status, param, **kw)


def req(method, path, headers=(), body=b"", length=None):
    path = path.encode() if isinstance(path, str) else path
    head = [method.encode() + b" " + path + b" HTTP/1.1", b"Host: 127.0.0.1"]
    head += [h.encode() if isinstance(h, str) else h for h in headers]
    if length is not None:
        head.append(b"Content-Length: %d" % length if isinstance(length, int) else b"Content-Length: " + length)
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def chunked(body, size):
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size))
    return out + b"0\r\n\r\n"


TE = "Transfer-Encoding: chunked"
CT = "Content-Type: application/json"
OK_COMP = dumps(comp(max_tokens=1))
TEXT = "hello world "  # ~2 tokens per 12 bytes with the Gemma tokenizer


def with_bytes(key, raw_value, base=None):
    """A completion body whose string field `key` holds raw (possibly invalid UTF-8) bytes."""
    head = dumps(merged(base or COMP, **{key: DROP}))[:-1]
    return head + b', "' + key.encode() + b'": "' + raw_value + b'"}'


def with_literal(key, literal, base=None):
    """A body whose field `key` is the bare JSON text `literal` (NaN, Infinity, 1e400, ...)."""
    head = dumps(merged(base or COMP, **{key: DROP}))[:-1]
    return head + b', "' + key.encode() + b'": ' + literal + b"}"


def nested(depth, open_=b"[", close=b"]"):
    return open_ * depth + close * depth


CASES = [
    # ---- truncated and malformed JSON ----
    pytest.param(C(OK_COMP[:-1]), id="truncated-json-closing-brace"),
    pytest.param(C(OK_COMP[:len(OK_COMP) // 2]), id="truncated-json-mid"),
    pytest.param(C(b'{"model": "bad-input", "prompt": "Hi'), id="truncated-json-in-string"),
    pytest.param(X(dumps(CHAT)[:-3]), id="chat-truncated-json"),
    pytest.param(C(b""), id="empty-body"),
    pytest.param(C(b"   \r\n "), id="whitespace-body"),
    pytest.param(C(b"[]", param=None), id="body-array"),
    pytest.param(C(b'"a string"', param=None), id="body-string"),
    pytest.param(C(b"42", param=None), id="body-number"),
    pytest.param(C(b"null", param=None), id="body-null"),
    pytest.param(C(OK_COMP + b" x"), id="trailing-garbage"),
    pytest.param(C(OK_COMP + b"{}"), id="two-objects"),
    pytest.param(C(b'{"model": "bad-input", "model": "bad-input", "prompt": "Hi"}'), id="duplicate-key"),
    pytest.param(C(b"\xef\xbb\xbf" + OK_COMP), id="utf8-bom"),
    pytest.param(C(b"{'model': 'bad-input', 'prompt': 'Hi'}"), id="single-quotes"),
    pytest.param(C(b'{"model": "bad-input", /* c */ "prompt": "Hi"}'), id="json-comment"),
    pytest.param(C(b'{"model": "bad-input", "prompt": "Hi",}'), id="trailing-comma"),
    pytest.param(C(b'{"model": "bad-input", "prompt": "\\x41"}'), id="bad-escape"),
    pytest.param(C(with_literal("max_tokens", b"0x10")), id="hex-number"),
    # ---- oversized bodies and huge prompts ----
    pytest.param(C(dumps(comp(prompt="a" * (5 << 20))), 413), id="body-5MiB-over-4MiB-limit"),
    pytest.param(C(dumps(comp(prompt="a" * 10_000_000)), 413), id="prompt-10MB"),
    pytest.param(X(dumps(msgs({"role": "user", "content": "a" * 10_000_000})), 413), id="chat-content-10MB"),
    pytest.param(P("/tokenize", dumps({"prompt": "a" * (5 << 20)}), 413), id="tokenize-5MiB"),
    pytest.param(C(b"{" + b" " * (MAX_BODY + 1) + b"}", 413), id="body-limit-plus-1-byte"),
    pytest.param(C(dumps(comp(prompt=TEXT * 250_000)), 400, "prompt", code="context_length_exceeded", timeout=10),
                 id="prompt-3MB-under-limit-context-length"),
    pytest.param(X(dumps(msgs({"role": "user", "content": TEXT * 250_000})), 400, "messages",
                   code="context_length_exceeded", timeout=10), id="chat-3MB-under-limit-context-length"),
    pytest.param(C(dumps(comp(prompt=TEXT * 250_000, max_tokens=DROP)), 400, "prompt",
                   code="context_length_exceeded", timeout=10), id="prompt-3MB-no-max-tokens"),
    # ---- invalid UTF-8 and bad Unicode escapes ----
    pytest.param(C(with_bytes("prompt", b"\xff\xfe")), id="utf8-invalid-bytes"),
    pytest.param(C(with_bytes("prompt", b"\xc0\xaf")), id="utf8-overlong-2"),
    pytest.param(C(with_bytes("prompt", b"\xe0\x80\xaf")), id="utf8-overlong-3"),
    pytest.param(C(with_bytes("prompt", b"\xf0\x80\x80\xaf")), id="utf8-overlong-4"),
    pytest.param(C(with_bytes("prompt", b"\xed\xa0\x80")), id="utf8-encoded-surrogate"),
    pytest.param(C(with_bytes("prompt", b"\xf4\x90\x80\x80")), id="utf8-above-10ffff"),
    pytest.param(C(with_bytes("prompt", b"ab\xe2\x82")), id="utf8-truncated-sequence"),
    pytest.param(C(with_bytes("prompt", b"\x80")), id="utf8-lone-continuation"),
    pytest.param(C(dumps(comp())[:-1] + b', "\xff": 1}'), id="utf8-invalid-in-key"),
    pytest.param(C(with_bytes("model", b"bad-\xff")), id="utf8-invalid-in-model"),
    pytest.param(X(dumps(CHAT).replace(b'"Hi"', b'"H\xffi"')), id="chat-utf8-invalid-content"),
    pytest.param(C(dumps(comp(stop=DROP))[:-1] + b', "stop": ["\xc3"]}'), id="utf8-invalid-in-stop"),
    pytest.param(C(with_bytes("prompt", b"\\ud800")), id="lone-high-surrogate"),
    pytest.param(C(with_bytes("prompt", b"\\udc00")), id="lone-low-surrogate"),
    pytest.param(C(with_bytes("prompt", b"\\ud800\\ud800")), id="two-high-surrogates"),
    pytest.param(C(with_bytes("prompt", b"\\ud800x")), id="high-surrogate-then-ascii"),
    pytest.param(P("/tokenize", b'{"prompt": "\\udfff"}'), id="tokenize-lone-surrogate"),
    pytest.param(C(with_bytes("prompt", b"\\ud83d\\ude00"), 200), id="valid-surrogate-pair-ok"),
    # ---- deep nesting ----
    pytest.param(C(nested(100_000)), id="nesting-100000-arrays"),
    pytest.param(X(nested(100_000)), id="chat-nesting-100000-arrays"),
    pytest.param(C(b'{"a":' * 100_000 + b"1" + b"}" * 100_000), id="nesting-100000-objects"),
    pytest.param(C(b"[" * 100_000), id="nesting-100000-unclosed"),
    pytest.param(C(dumps(comp())[:-1] + b', "x": ' + nested(64) + b"}"), id="nesting-65-in-unknown-field"),
    pytest.param(X(dumps(CHAT)[:-1] + b', "x": ' + nested(63) + b"}", 200), id="nesting-64-ok"),
    pytest.param(X(dumps(chat(messages=DROP))[:-1] + b', "messages": [{"role": "user", "content": ' +
                   nested(3000) + b"}]}"), id="chat-content-nested-3000"),
    pytest.param(P("/tokenize", nested(100_000)), id="tokenize-nesting-100000"),
    pytest.param(P("/detokenize", nested(100_000)), id="detokenize-nesting-100000"),
    pytest.param(P("/tokenize", b'{"prompt": "x", "z": ' + nested(5000) + b"}"), id="tokenize-nesting-5000-in-field"),
    # ---- content types ----
    pytest.param(C(OK_COMP, 415, headers={"Content-Type": "text/plain"}), id="ctype-text-plain"),
    pytest.param(C(OK_COMP, 415, headers={"Content-Type": "multipart/form-data; boundary=xyz"}),
                 id="ctype-multipart"),
    pytest.param(C(OK_COMP, 415, headers={"Content-Type": "application/x-www-form-urlencoded"}),
                 id="ctype-form-urlencoded"),
    pytest.param(C(OK_COMP, 415, headers={"Content-Type": "application/xml"}), id="ctype-xml"),
    pytest.param(C(OK_COMP, 415, headers={"Content-Type": "application/jsonx"}), id="ctype-jsonx"),
    pytest.param(X(dumps(CHAT), 415, headers={"Content-Type": "text/html; charset=utf-8"}), id="chat-ctype-html"),
    pytest.param(P("/tokenize", dumps({"prompt": "x"}), 415, headers={"Content-Type": "text/plain"}),
                 id="tokenize-ctype-text-plain"),
    pytest.param(C(OK_COMP, 200, headers={}), id="ctype-missing-ok"),
    pytest.param(C(OK_COMP, 200, headers={"Content-Type": "application/json; charset=utf-8"}), id="ctype-charset-ok"),
    pytest.param(C(OK_COMP, 200, headers={"Content-Type": "Application/JSON"}), id="ctype-case-ok"),
    # ---- NaN, Infinity, huge literals ----
    pytest.param(C(with_literal("temperature", b"NaN")), id="temperature-NaN"),
    pytest.param(C(with_literal("top_p", b"Infinity")), id="top_p-Infinity"),
    pytest.param(C(with_literal("max_tokens", b"-Infinity")), id="max_tokens-neg-Infinity"),
    pytest.param(C(with_literal("temperature", b"nan")), id="temperature-nan-lowercase"),
    pytest.param(C(with_literal("temperature", b"1e400")), id="temperature-1e400-overflow"),
    pytest.param(C(with_literal("max_tokens", b"18446744073709551616")), id="max_tokens-2pow64"),
    pytest.param(C(with_literal("seed", b"-9223372036854775809")), id="seed-below-int64"),
    pytest.param(C(with_literal("logit_bias", b'{"5": NaN}')), id="logit_bias-NaN"),
    # ---- max_tokens / max_completion_tokens ----
    pytest.param(C(dumps(comp(max_tokens=0)), 400, "max_tokens"), id="max_tokens-0"),
    pytest.param(C(dumps(comp(max_tokens=-1)), 400, "max_tokens"), id="max_tokens-negative"),
    pytest.param(C(dumps(comp(max_tokens=1.5)), 400, "max_tokens"), id="max_tokens-fractional"),
    pytest.param(C(dumps(comp(max_tokens="10")), 400, "max_tokens"), id="max_tokens-string"),
    pytest.param(C(dumps(comp(max_tokens=True)), 400, "max_tokens"), id="max_tokens-bool"),
    pytest.param(C(dumps(comp(max_tokens=2 ** 31)), 400, "max_tokens"), id="max_tokens-2pow31"),
    pytest.param(C(dumps(comp(max_tokens=1e10)), 400, "max_tokens"), id="max_tokens-1e10"),
    pytest.param(C(dumps(comp(max_tokens=2 ** 63 - 1)), 400, "max_tokens"), id="max_tokens-int64-max"),
    pytest.param(C(dumps(comp(max_tokens=CONTEXT)), 400, "prompt", code="context_length_exceeded"),
                 id="max_tokens-over-context"),
    pytest.param(C(dumps(comp(max_tokens=10 ** 7)), 400, "prompt", code="context_length_exceeded"),
                 id="max_tokens-1e7"),
    pytest.param(X(dumps(chat(max_tokens=DROP, max_completion_tokens=0)), 400, "max_completion_tokens"),
                 id="max_completion_tokens-0"),
    pytest.param(X(dumps(chat(max_tokens=CONTEXT)), 400, "messages", code="context_length_exceeded"),
                 id="chat-max_tokens-over-context"),
    # ---- n ----
    pytest.param(C(dumps(comp(n=0)), 400, "n"), id="n-0"),
    pytest.param(C(dumps(comp(n=-1)), 400, "n"), id="n-negative"),
    pytest.param(C(dumps(comp(n=17)), 400, "n"), id="n-17-over-max"),
    pytest.param(C(dumps(comp(n=10 ** 9)), 400, "n"), id="n-huge"),
    pytest.param(X(dumps(chat(n=1.5)), 400, "n"), id="n-fractional"),
    pytest.param(X(dumps(chat(n="2")), 400, "n"), id="n-string"),
    # ---- sampling parameters ----
    pytest.param(C(dumps(comp(temperature=-0.5)), 400, "temperature"), id="temperature-negative"),
    pytest.param(C(dumps(comp(temperature=2.5)), 400, "temperature"), id="temperature-over-2"),
    pytest.param(C(dumps(comp(temperature=1e308)), 400, "temperature"), id="temperature-1e308"),
    pytest.param(X(dumps(chat(temperature="hot")), 400, "temperature"), id="temperature-string"),
    pytest.param(C(dumps(comp(top_p=0)), 400, "top_p"), id="top_p-0"),
    pytest.param(C(dumps(comp(top_p=1.5)), 400, "top_p"), id="top_p-over-1"),
    pytest.param(C(dumps(comp(top_p=-1)), 400, "top_p"), id="top_p-negative"),
    pytest.param(C(dumps(comp(top_p=1e-50)), 400, "top_p"), id="top_p-1e-50-rounds-to-0-in-float"),
    pytest.param(C(dumps(comp(top_k=-2)), 400, "top_k"), id="top_k-negative"),
    pytest.param(C(dumps(comp(top_k=2 ** 31)), 400, "top_k"), id="top_k-2pow31"),
    pytest.param(C(dumps(comp(top_k=1.5)), 400, "top_k"), id="top_k-fractional"),
    pytest.param(C(dumps(comp(min_p=-0.1)), 400, "min_p"), id="min_p-negative"),
    pytest.param(C(dumps(comp(min_p=1.5)), 400, "min_p"), id="min_p-over-1"),
    pytest.param(C(dumps(comp(presence_penalty=2.5)), 400, "presence_penalty"), id="presence_penalty-over-2"),
    pytest.param(C(dumps(comp(presence_penalty=-1e9)), 400, "presence_penalty"), id="presence_penalty-huge-neg"),
    pytest.param(C(dumps(comp(frequency_penalty=-3)), 400, "frequency_penalty"), id="frequency_penalty-under-2"),
    pytest.param(X(dumps(chat(frequency_penalty=[1])), 400, "frequency_penalty"), id="frequency_penalty-array"),
    pytest.param(C(dumps(comp(repetition_penalty=0)), 400, "repetition_penalty"), id="repetition_penalty-0"),
    pytest.param(C(dumps(comp(repetition_penalty=-1)), 400, "repetition_penalty"), id="repetition_penalty-negative"),
    pytest.param(C(dumps(comp(repetition_penalty=1e300)), 400, "repetition_penalty"),
                 id="repetition_penalty-1e300-inf-in-float"),
    pytest.param(C(dumps(comp(repetition_penalty=1e-50)), 400, "repetition_penalty"),
                 id="repetition_penalty-1e-50-0-in-float"),
    pytest.param(C(dumps(comp(seed=1.5)), 400, "seed"), id="seed-fractional"),
    pytest.param(C(dumps(comp(seed="1")), 400, "seed"), id="seed-string"),
    pytest.param(C(dumps(comp(seed=1e19)), 400, "seed"), id="seed-1e19"),
    # ---- logprobs ----
    pytest.param(X(dumps(chat(logprobs=1)), 400, "logprobs"), id="chat-logprobs-int"),
    pytest.param(X(dumps(chat(logprobs=True, top_logprobs=21)), 400, "top_logprobs"), id="chat-top_logprobs-21"),
    pytest.param(X(dumps(chat(logprobs=True, top_logprobs=-1)), 400, "top_logprobs"), id="chat-top_logprobs-neg"),
    pytest.param(X(dumps(chat(logprobs=True, top_logprobs=2.5)), 400, "top_logprobs"), id="chat-top_logprobs-frac"),
    pytest.param(X(dumps(chat(top_logprobs=2)), 400, "top_logprobs"), id="chat-top_logprobs-without-logprobs"),
    pytest.param(C(dumps(comp(logprobs=6)), 400, "logprobs"), id="logprobs-6"),
    pytest.param(C(dumps(comp(logprobs=-1)), 400, "logprobs"), id="logprobs-negative"),
    pytest.param(C(dumps(comp(logprobs=True)), 400, "logprobs"), id="logprobs-bool-on-completions"),
    pytest.param(C(dumps(comp(logprobs=10 ** 12)), 400, "logprobs"), id="logprobs-huge"),
    pytest.param(C(dumps(comp(logprobs=1, echo=True)), 400, "echo"), id="echo-with-logprobs"),
    # ---- logit_bias ----
    pytest.param(C(dumps(comp(logit_bias=[1, 2])), 400, "logit_bias"), id="logit_bias-array"),
    pytest.param(C(dumps(comp(logit_bias={"abc": 1})), 400, "logit_bias"), id="logit_bias-key-not-number"),
    pytest.param(C(dumps(comp(logit_bias={"-1": 1})), 400, "logit_bias"), id="logit_bias-key-negative"),
    pytest.param(C(dumps(comp(logit_bias={str(VOCAB): 1})), 400, "logit_bias"), id="logit_bias-key-vocab"),
    pytest.param(C(dumps(comp(logit_bias={"99999999999999999999": 1})), 400, "logit_bias"),
                 id="logit_bias-key-huge"),
    pytest.param(C(dumps(comp(logit_bias={"": 1})), 400, "logit_bias"), id="logit_bias-key-empty"),
    pytest.param(C(dumps(comp(logit_bias={"5": 101})), 400, "logit_bias"), id="logit_bias-value-101"),
    pytest.param(C(dumps(comp(logit_bias={"5": -1e30})), 400, "logit_bias"), id="logit_bias-value-huge-neg"),
    pytest.param(C(dumps(comp(logit_bias={"5": "x"})), 400, "logit_bias"), id="logit_bias-value-string"),
    pytest.param(C(dumps(comp(logit_bias={"5": None})), 400, "logit_bias"), id="logit_bias-value-null"),
    # ---- stop ----
    pytest.param(C(dumps(comp(stop=[f"s{i}" for i in range(17)])), 400, "stop"), id="stop-17-strings"),
    pytest.param(C(dumps(comp(stop=["x" * 1000 for _ in range(1000)])), 400, "stop"), id="stop-1000-long-strings"),
    pytest.param(C(dumps(comp(stop="x" * 257)), 400, "stop"), id="stop-257-bytes"),
    pytest.param(C(dumps(comp(stop=["\U0001F600" * 64 + "a"])), 400, "stop[0]"), id="stop-257-utf8-bytes"),
    pytest.param(C(dumps(comp(stop="")), 400, "stop"), id="stop-empty-string"),
    pytest.param(C(dumps(comp(stop=["a", ""])), 400, "stop[1]"), id="stop-empty-in-list"),
    pytest.param(C(dumps(comp(stop=[1])), 400, "stop[0]"), id="stop-number-in-list"),
    pytest.param(C(dumps(comp(stop=5)), 400, "stop"), id="stop-number"),
    pytest.param(X(dumps(chat(stop={"a": 1})), 400, "stop"), id="chat-stop-object"),
    # ---- model ----
    pytest.param(C(dumps(comp(model="no-such-model")), 404, "model", code="model_not_found"), id="model-unknown"),
    pytest.param(X(dumps(chat(model="gpt-4o")), 404, "model", code="model_not_found"), id="chat-model-unknown"),
    pytest.param(C(dumps(comp(model="")), 404, "model"), id="model-empty-string"),
    pytest.param(C(dumps(comp(model="x" * 100_000)), 404, "model"), id="model-100k-chars"),
    pytest.param(C(dumps(comp(model=DROP)), 400, "model"), id="model-missing"),
    pytest.param(X(dumps(chat(model=DROP)), 400, "model"), id="chat-model-missing"),
    pytest.param(C(dumps(comp(model=5)), 400, "model"), id="model-number"),
    pytest.param(C(dumps(comp(model=[NAME])), 400, "model"), id="model-array"),
    # ---- messages ----
    pytest.param(X(dumps(chat(messages=DROP)), 400, "messages"), id="messages-missing"),
    pytest.param(X(dumps(chat(messages=[])), 400, "messages"), id="messages-empty"),
    pytest.param(X(dumps(chat(messages="Hi")), 400, "messages"), id="messages-string"),
    pytest.param(X(dumps(chat(messages={"role": "user", "content": "Hi"})), 400, "messages"), id="messages-object"),
    pytest.param(X(dumps(chat(messages=[1])), 400, "messages[0]"), id="messages-number-item"),
    pytest.param(X(dumps(chat(messages=[None])), 400, "messages[0]"), id="messages-null-item"),
    pytest.param(X(dumps(msgs({"content": "Hi"})), 400, "messages[0].role"), id="role-missing"),
    pytest.param(X(dumps(msgs({"role": "wizard", "content": "Hi"})), 400, "messages[0].role"), id="role-unknown"),
    pytest.param(X(dumps(msgs({"role": 5, "content": "Hi"})), 400, "messages[0].role"), id="role-number"),
    pytest.param(X(dumps(msgs({"role": "USER", "content": "Hi"})), 400, "messages[0].role"), id="role-uppercase"),
    pytest.param(X(dumps(msgs({"role": "user", "content": "Hi"}, {"role": "robot", "content": "x"})), 400,
                   "messages[1].role"), id="role-unknown-second"),
    pytest.param(X(dumps(msgs({"role": "user", "content": 5})), 400, "messages[0].content"), id="content-number"),
    pytest.param(X(dumps(msgs({"role": "user", "content": {"text": "Hi"}})), 400, "messages[0].content"),
                 id="content-object"),
    pytest.param(X(dumps(msgs({"role": "user"})), 400, "messages[0].content"), id="content-missing"),
    pytest.param(X(dumps(msgs({"role": "user", "content": None})), 400, "messages[0].content"), id="content-null"),
    pytest.param(X(dumps(msgs({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]})), 400,
                   "messages[0].content[0]"), id="content-image-part"),
    pytest.param(X(dumps(msgs({"role": "user", "content": [{"type": "text"}]})), 400, "messages[0].content[0]"),
                 id="content-text-part-no-text"),
    pytest.param(X(dumps(msgs({"role": "user", "content": [{"type": "text", "text": 5}]})), 400,
                   "messages[0].content[0]"), id="content-text-part-number"),
    pytest.param(X(dumps(msgs({"role": "user", "content": ["Hi"]})), 400, "messages[0].content[0]"),
                 id="content-part-string"),
    pytest.param(X(dumps(msgs({"role": "assistant", "content": "x"})), 400, "messages"),
                 id="roles-not-alternating-template-error"),
    pytest.param(X(dumps(chat(tools="x")), 400, "tools"), id="tools-string"),
    pytest.param(X(dumps(chat(tools=[1])), 400, "tools[0]"), id="tools-number-item"),
    pytest.param(X(dumps(chat(chat_template_kwargs=5)), 400, "chat_template_kwargs"), id="chat_template_kwargs-number"),
    pytest.param(X(dumps(chat(response_format={"type": "xml"})), 400, "response_format.type"),
                 id="response_format-unknown-type"),
    pytest.param(X(dumps(chat(response_format={"type": "json_schema", "json_schema": {"name": "x"}})), 400,
                   "response_format.json_schema.schema"), id="response_format-no-schema"),
    pytest.param(X(dumps(chat(response_format={"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "patternProperties": {"a": {}}}}})), 400,
        "response_format.json_schema.schema"), id="response_format-unsupported-keyword"),
    pytest.param(X(dumps(chat(user=5)), 400, "user"), id="user-number"),
    pytest.param(X(dumps(chat(modalities=["text", "audio"])), 400, "modalities"), id="modalities-audio"),
    pytest.param(X(dumps(chat(modalities="text")), 400, "modalities"), id="modalities-string"),
    pytest.param(X(dumps(chat(functions=[{"name": "f", "parameters": {}}])), 400, "functions"),
                 id="legacy-functions"),
    pytest.param(X(dumps(chat(function_call="auto")), 400, "function_call"), id="legacy-function_call"),
    pytest.param(X(dumps(chat(tool_choice="auto")), 400, "tool_choice"), id="tool_choice-without-tools"),
    pytest.param(X(dumps(chat(tool_choice=5, tools=[TOOL])), 400, "tool_choice"), id="tool_choice-number"),
    pytest.param(X(dumps(chat(tool_choice={"type": "function"}, tools=[TOOL])), 400, "tool_choice"),
                 id="tool_choice-no-function"),
    pytest.param(X(dumps(chat(tool_choice={"type": "function", "function": {"name": "nope"}}, tools=[TOOL])), 400,
                   "tool_choice.function.name"), id="tool_choice-unknown-function"),
    pytest.param(X(dumps(chat(tools=[{"type": "function", "function": {"name": "a b"}}])), 400,
                   "tools[0].function.name"), id="tool-name-with-space"),
    pytest.param(X(dumps(chat(tools=[TOOL, TOOL])), 400, "tools[1].function.name"), id="tool-names-repeat"),
    pytest.param(X(dumps(chat(tools=[{"type": "function", "function": {"name": "f", "parameters": 5}}])), 400,
                   "tools[0].function.parameters"), id="tool-parameters-number"),
    pytest.param(X(dumps(chat(tools=[TOOL], parallel_tool_calls="no")), 400, "parallel_tool_calls"),
                 id="parallel_tool_calls-string"),
    pytest.param(X(dumps(chat(tools=[TOOL], response_format={"type": "json_object"})), 400, "response_format"),
                 id="tools-and-response_format"),
    pytest.param(X(dumps(msgs({"role": "user", "content": "Hi"},
                              {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
                              {"role": "tool", "content": "21C"})), 400, "messages[2].tool_call_id"),
                 id="tool-message-without-tool_call_id"),
    pytest.param(X(dumps(chat(guided_regex="a", guided_choice=["b"])), 400, "guided_choice"),
                 id="two-constraints"),
    pytest.param(X(dumps(chat(guided_regex="(a")), 400, "guided_regex"), id="guided_regex-invalid"),
    pytest.param(X(dumps(chat(grammar="root ::= valu")), 400, "grammar"), id="gbnf-undefined-rule"),
    pytest.param(X(dumps(chat(stream="yes")), 400, "stream"), id="stream-string"),
    pytest.param(X(dumps(chat(stream_options={"include_usage": True})), 400, "stream_options"),
                 id="stream_options-without-stream"),
    pytest.param(X(dumps(chat(stream=True, stream_options={"include_usage": "yes"})), 400,
                   "stream_options.include_usage"), id="stream_options-include_usage-string"),
    pytest.param(X(dumps(chat(ignore_eos=1)), 400, "ignore_eos"), id="ignore_eos-int"),
    # ---- prompt ----
    pytest.param(C(dumps(comp(prompt=DROP)), 400, "prompt"), id="prompt-missing"),
    pytest.param(C(dumps(comp(prompt=5)), 400, "prompt"), id="prompt-number"),
    pytest.param(C(dumps(comp(prompt={"text": "Hi"})), 400, "prompt"), id="prompt-object"),
    pytest.param(C(dumps(comp(prompt=[])), 400, "prompt"), id="prompt-empty-array"),
    pytest.param(C(dumps(comp(prompt=[VOCAB])), 400, "prompt[0]"), id="prompt-token-id-vocab"),
    pytest.param(C(dumps(comp(prompt=[1, 2, -1])), 400, "prompt[2]"), id="prompt-token-id-negative"),
    pytest.param(C(dumps(comp(prompt=[2 ** 40])), 400, "prompt[0]"), id="prompt-token-id-2pow40"),
    pytest.param(C(dumps(comp(prompt=[1.5])), 400, "prompt[0]"), id="prompt-token-id-fractional"),
    pytest.param(C(dumps(comp(prompt=[1, "a"])), 400, "prompt[1]"), id="prompt-token-id-string"),
    pytest.param(C(dumps(comp(prompt=[[1, VOCAB]])), 400, "prompt[0][1]"), id="prompt-nested-token-id-vocab"),
    pytest.param(C(dumps(comp(prompt=["a", "b"])), 400, "prompt"), id="prompt-batched"),
    pytest.param(C(dumps(comp(prompt=[None])), 400, "prompt[0]"), id="prompt-null-item"),
    pytest.param(C(dumps(comp(prompt=[5] * CONTEXT, max_tokens=1)), 400, "prompt", code="context_length_exceeded"),
                 id="prompt-ids-fill-context"),
    pytest.param(C(dumps(comp(prompt=[5] * CONTEXT, max_tokens=DROP)), 400, "prompt",
                   code="context_length_exceeded"), id="prompt-ids-fill-context-no-max"),
    pytest.param(C(dumps(comp(suffix="x")), 400, "suffix"), id="suffix"),
    pytest.param(C(dumps(comp(best_of=2)), 400, "best_of"), id="best_of-over-n"),
    pytest.param(C(dumps(comp(tools=[{"type": "function"}])), 400, "tools"), id="tools-on-completions"),
    # ---- /tokenize and /detokenize ----
    pytest.param(P("/tokenize", b'{"prompt": "x"'), id="tokenize-truncated-json"),
    pytest.param(P("/tokenize", b""), id="tokenize-empty-body"),
    pytest.param(P("/tokenize", b"[1]", param=None), id="tokenize-not-object"),
    pytest.param(P("/tokenize", dumps({})), id="tokenize-neither-prompt-nor-messages"),
    pytest.param(P("/tokenize", dumps({"prompt": "x", "messages": [{"role": "user", "content": "x"}]})),
                 id="tokenize-both"),
    pytest.param(P("/tokenize", dumps({"prompt": 5}), 400, "prompt"), id="tokenize-prompt-number"),
    pytest.param(P("/tokenize", dumps({"prompt": [1, 2]}), 400, "prompt"), id="tokenize-prompt-ids"),
    pytest.param(P("/tokenize", dumps({"prompt": "x", "add_special_tokens": "yes"}), 400, "add_special_tokens"),
                 id="tokenize-add_special_tokens-string"),
    pytest.param(P("/tokenize", dumps({"messages": "x"}), 400, "messages"), id="tokenize-messages-string"),
    pytest.param(P("/tokenize", dumps({"messages": []}), 400, "messages"), id="tokenize-messages-empty"),
    pytest.param(P("/tokenize", dumps({"messages": [1]}), 400, "messages"), id="tokenize-messages-number-item"),
    pytest.param(P("/tokenize", b'{"prompt": "\xff"}'), id="tokenize-invalid-utf8"),
    pytest.param(P("/detokenize", b'{"tokens": [1,'), id="detokenize-truncated-json"),
    pytest.param(P("/detokenize", dumps([1, 2]), 400, None), id="detokenize-not-object"),
    pytest.param(P("/detokenize", dumps({}), 400, "tokens"), id="detokenize-tokens-missing"),
    pytest.param(P("/detokenize", dumps({"tokens": "5"}), 400, "tokens"), id="detokenize-tokens-string"),
    pytest.param(P("/detokenize", dumps({"tokens": [-1]}), 400, "tokens"), id="detokenize-negative-id"),
    pytest.param(P("/detokenize", dumps({"tokens": [VOCAB]}), 400, "tokens"), id="detokenize-id-vocab"),
    pytest.param(P("/detokenize", dumps({"tokens": [2 ** 63 - 1]}), 400, "tokens"), id="detokenize-id-int64-max"),
    pytest.param(P("/detokenize", dumps({"tokens": [1.5]}), 400, "tokens"), id="detokenize-id-fractional"),
    pytest.param(P("/detokenize", dumps({"tokens": [True]}), 400, "tokens"), id="detokenize-id-bool"),
    pytest.param(P("/detokenize", dumps({"tokens": [[1]]}), 400, "tokens"), id="detokenize-id-array"),
    pytest.param(P("/detokenize", dumps({"tokens": [238 + 0xFF, 238 + 0xC3]}), 200),
                 id="detokenize-byte-tokens-not-utf8-ok"),
    # ---- routes, methods, authorization ----
    pytest.param(H("GET", "/nope", None, 404, None), id="route-unknown-get"),
    pytest.param(P("/v1/embeddings", dumps({"model": NAME, "input": "x"}), 404, None), id="route-embeddings"),
    pytest.param(H("GET", "/", None, 404), id="route-root"),
    pytest.param(H("POST", "/v1/completions/", OK_COMP, 404), id="route-trailing-slash"),
    pytest.param(H("POST", "/V1/COMPLETIONS", OK_COMP, 404), id="route-uppercase"),
    pytest.param(H("GET", "/v1/models/../models", None, 404, "model", code="model_not_found"), id="route-dot-dot"),
    pytest.param(H("GET", "/v1/models/nope", None, 404, "model", code="model_not_found"), id="model-unknown"),
    pytest.param(H("GET", "/v1/models/", None, 404), id="model-empty-id"),
    pytest.param(H("POST", f"/v1/models/{NAME}", dumps({}), 405), id="post-on-a-model"),
    pytest.param(H("GET", f"/v1/models/{NAME}", None, 200), id="model-retrieve"),
    pytest.param(H("GET", "/v1/chat/completions", None, 405), id="get-on-chat"),
    pytest.param(H("GET", "/v1/completions", None, 405), id="get-on-completions"),
    pytest.param(H("GET", "/tokenize", None, 405), id="get-on-tokenize"),
    pytest.param(H("PUT", "/v1/completions", OK_COMP, 405), id="put-on-completions"),
    pytest.param(H("DELETE", "/v1/models", None, 405), id="delete-on-models"),
    pytest.param(H("POST", "/health", dumps({}), 405), id="post-on-health"),
    pytest.param(H("POST", "/metrics", dumps({}), 405), id="post-on-metrics"),
    pytest.param(H("POST", "/v1/models", dumps({}), 405), id="post-on-models"),
    pytest.param(H("GET", "/v1/models", None, 200, headers={"Authorization": "Bearer whatever"}),
                 id="auth-bearer-without-key-configured-ok"),
    pytest.param(C(OK_COMP, 200, headers={"Content-Type": "application/json", "Authorization": "Basic Zm9vOmJhcg=="}),
                 id="auth-basic-without-key-configured-ok"),
    pytest.param(X(dumps(chat(max_tokens=1)), 200, headers={"Content-Type": "application/json",
                                                             "Authorization": "Bearer " + "k" * 4000}),
                 id="auth-long-bearer-without-key-configured-ok"),
    # ---- hostile HTTP framing (raw sockets) ----
    pytest.param(Raw(req("POST", "/v1/completions", [CT], OK_COMP[:20], length=len(OK_COMP)), frozenset({None, 400}),
                     "shut"), id="raw-truncated-body-half-close"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], OK_COMP[:20], length=len(OK_COMP)), frozenset({None}),
                     "close"), id="raw-truncated-body-close"),
    pytest.param(Raw(req("POST", "/v1/chat/completions", [CT], b"", length=1000), frozenset({None}), "close"),
                 id="raw-headers-only-close"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b'{"model":', length=10 ** 12), frozenset({413})),
                 id="raw-content-length-1e12"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b'{"model":', length=10 ** 12), frozenset({413, None}),
                     "shut"), id="raw-content-length-1e12-half-close"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, "Expect: 100-continue"], b"", length=5 << 20),
                     frozenset({413})), id="raw-expect-100-continue-5MiB"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b"", length=b"99999999999999999999999999"),
                     frozenset({400, 413})), id="raw-content-length-overflow"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b"{}", length=b"-1"), frozenset({400})),
                 id="raw-content-length-negative"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b"{}", length=b"abc"), frozenset({400})),
                 id="raw-content-length-not-a-number"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, "Content-Length: 2"], b"{}", length=3), frozenset({400})),
                 id="raw-content-length-twice-differing"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE, "Connection: close"], chunked(OK_COMP, 7)),
                     frozenset({200})), id="raw-chunked-valid-ok"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE, "Connection: close"], chunked(OK_COMP[:-5], 7)),
                     frozenset({400})), id="raw-chunked-truncated-json"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE], b"ZZ\r\nabc\r\n0\r\n\r\n"), frozenset({400})),
                 id="raw-chunked-bad-size"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE], b"FFFFFFFFFFFFFFFFFF\r\nabc"), frozenset({400, 413})),
                 id="raw-chunked-size-overflow"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE], b"10\r\n{\"model\""), frozenset({None, 400}), "shut"),
                 id="raw-chunked-truncated-half-close"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE, "Connection: close"],
                         chunked(dumps(comp(prompt="a" * (5 << 20))), 65536)), frozenset({413}), timeout=20),
                 id="raw-chunked-5MiB-over-limit"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT, TE, "Connection: close"], chunked(b"{}", 2), length=3),
                     frozenset({400})), id="raw-chunked-and-content-length"),
    pytest.param(Raw(b"GARBAGE\r\n\r\n", frozenset({None, 400}), "shut"), id="raw-garbage-request-line"),
    pytest.param(Raw(b"\x00\x01\x02\xff\xfe\r\n\r\n", frozenset({None, 400}), "shut"), id="raw-binary-request-line"),
    pytest.param(Raw(b"GET\r\n\r\n", frozenset({None, 400}), "shut"), id="raw-request-line-method-only"),
    pytest.param(Raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5", frozenset({None, 400}),
                     "shut"), id="raw-header-with-no-end"),
    pytest.param(Raw(req("GET", "/health", ["X-Big: " + "a" * 100_000]), frozenset({431})),
                 id="raw-header-100KB"),
    pytest.param(Raw(req("GET", "/health", [f"X-H{i}: v" for i in range(5000)]), frozenset({431})),
                 id="raw-5000-headers"),
    pytest.param(Raw(req("GET", "/" + "a" * 100_000), frozenset({414})), id="raw-url-100KB"),
    pytest.param(Raw(req("GET", b"/v1/\xff\xfe", ["Connection: close"]),
                     frozenset({404})), id="raw-invalid-utf8-path"),
    pytest.param(Raw(b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", frozenset({505})), id="raw-http-version-9.9"),
    pytest.param(Raw(req("FOO", "/v1/completions", ["Connection: close"]), frozenset({405, 501})),
                 id="raw-unknown-method"),
    pytest.param(Raw(req("POST", "/v1/completions", ["Transfer-Encoding: gzip", "Connection: close"], b"{}"),
                     frozenset({None, 400, 501}), "shut"), id="raw-transfer-encoding-gzip"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], b'{"model":', length=9) +
                     req("GET", "/health", ["Connection: close"]), frozenset({400}), then=(200,)),
                 id="raw-pipelined-bad-then-health"),
    pytest.param(Raw(req("POST", "/v1/completions", [CT], OK_COMP[:-1], length=len(OK_COMP)) +
                     req("GET", "/health", ["Connection: close"]), frozenset({400}), then=(405,)),
                 id="raw-body-swallows-next-request"),
    # ---- clients that leave mid-request (their KV blocks must come back) ----
    pytest.param(Leave("/v1/completions", comp(prompt=TEXT * 100, max_tokens=1500, n=4, stream=True)),
                 id="leave-streaming-n4"),
    pytest.param(Leave("/v1/chat/completions", chat(max_tokens=1500, n=8)), id="leave-whole-n8"),
    pytest.param(Leave("/v1/completions", comp(prompt=[5] * 1500, max_tokens=500), after=0.05),
                 id="leave-during-prefill"),
]


# ---- sending ----

def health(s):
    c = http.client.HTTPConnection("127.0.0.1", port(s), timeout=TIMEOUT)
    try:
        c.request("GET", "/health")
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def port(s):
    return int(s.url.rsplit(":", 1)[1])


def send_http(s, case):
    headers = case.headers
    if headers is None:
        headers = {"Content-Type": "application/json"} if case.body is not None else {}
    c = http.client.HTTPConnection("127.0.0.1", port(s), timeout=case.timeout)
    try:
        c.request(case.method, case.path, body=case.body, headers=headers)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read()
    finally:
        c.close()


def parse_responses(buf):
    """The complete responses at the start of buf: [(status, headers, body)], skipping 1xx."""
    out = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return out, buf
        head = buf[:end].decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", head[0])
        if not m:
            raise AssertionError(f"not an HTTP response: {buf[:200]!r}")
        status = int(m.group(1))
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
        if 100 <= status < 200:
            buf = buf[end + 4:]
            continue
        n = int(headers.get("content-length", "0"))
        if len(buf) < end + 4 + n:
            return out, buf
        out.append((status, headers, buf[end + 4:end + 4 + n]))
        buf = buf[end + 4 + n:]


def send_raw(s, case):
    """[(status, headers, body)] of the first 1 + len(case.then) final responses, or [] when the
    server closed the connection without answering; raises TimeoutError on a hang."""
    sock = socket.create_connection(("127.0.0.1", port(s)), timeout=case.timeout)
    try:
        try:
            sock.sendall(case.data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and closed: read what it said
        if case.mode == "close":
            return []
        if case.mode == "shut":
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        buf, got, want = b"", [], 1 + len(case.then)
        deadline = time.monotonic() + case.timeout
        while len(got) < want:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise TimeoutError(f"{len(got)} of {want} responses in {case.timeout} s; received {buf[:300]!r}")
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                got, rest = parse_responses(buf)
                assert not rest.strip(), f"connection closed in the middle of a response: {buf[:300]!r}"
                return got
            buf += chunk
            got, _ = parse_responses(buf)
        return got
    finally:
        sock.close()


def check_error_shape(status, body, param=ANY, code=ANY):
    e = json.loads(body)
    assert list(e) == ["error"], e
    err = e["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"], err
    assert err["type"] == TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error"), err
    assert err["param"] is None or isinstance(err["param"], str), err
    assert err["code"] is None or isinstance(err["code"], str), err
    if param is not ANY:
        assert err["param"] == param, f"param: expected {param!r}, got {err['param']!r} ({err['message']})"
    if code is not ANY:
        assert err["code"] == code, f"code: expected {code!r}, got {err['code']!r} ({err['message']})"


def check_ok(path, ctype, body):
    if path.startswith("/v1/") and not path.startswith("/v1/models"):
        o = json.loads(body)
        assert o["choices"] and o["usage"]["completion_tokens"] >= 1, o
    elif ctype.startswith("application/json"):
        json.loads(body)


# ---- the suite ----

@pytest.fixture(scope="module")
def srv(tiny_gguf):
    s = Server(tiny_gguf, name=NAME, extra=["--check-integrity", "--max-body-mb", str(MAX_BODY_MB)])
    yield s
    if s.proc.poll() is None:
        s.stop()


def describe(case):
    if isinstance(case, Http):
        body = case.body if case.body is None or len(case.body) <= 200 else \
            case.body[:120] + b"...(%d bytes)..." % len(case.body) + case.body[-40:]
        return f"{case.method} {case.path} headers={case.headers} body={body!r}"
    if isinstance(case, Raw):
        d = case.data if len(case.data) <= 300 else case.data[:200] + b"...(%d bytes)" % len(case.data)
        return f"raw[{case.mode}] {d!r}"
    return f"leave {case.path} {json.dumps(case.body)[:200]}"


def leave(s, case):
    body = dumps(case.body)
    sock = socket.create_connection(("127.0.0.1", port(s)), timeout=TIMEOUT)
    try:
        sock.sendall(req("POST", case.path, [CT], body, length=len(body)))
        if case.body.get("stream"):
            first = sock.recv(4096)
            assert first.startswith(b"HTTP/1.1 200"), first[:300]
        else:
            time.sleep(case.after)
    finally:
        sock.close()


@pytest.mark.parametrize("case", CASES)
def test_bad_input(srv, case):
    assert srv.proc.poll() is None, "the server is not running (an earlier case killed it)"
    t0 = time.monotonic()
    what = describe(case)
    try:
        if isinstance(case, Http):
            status, ctype, body = send_http(srv, case)
            assert status == case.status, f"{what}\n  expected {case.status}, got {status}: {body[:500]!r}"
            if status >= 400:
                assert ctype.startswith("application/json"), f"{what}\n  {status} with Content-Type {ctype!r}"
                check_error_shape(status, body, case.param, case.code)
            else:
                check_ok(case.path, ctype, body)
            assert time.monotonic() - t0 < case.timeout
        elif isinstance(case, Raw):
            got = send_raw(srv, case)
            status, _, body = got[0] if got else (None, {}, b"")
            assert status in case.expect, \
                f"{what}\n  expected one of {sorted(case.expect, key=str)}, got {status}: {body[:500]!r}"
            if case.then:
                assert [g[0] for g in got[1:]] == list(case.then), f"{what}\n  then: {got[1:]}"
            for st, headers, body in got:
                if st >= 400 and headers.get("content-type", "").startswith("application/json"):
                    check_error_shape(st, body)
        else:
            leave(srv, case)
    except (TimeoutError, socket.timeout) as e:
        pytest.fail(f"{what}\n  no answer within {case.timeout if not isinstance(case, Leave) else TIMEOUT} s: {e}")
    finally:
        # whatever the case did, the server must still be up and answering
        assert srv.proc.poll() is None, f"the server died after: {what}\n{open(srv.log.name).read()[-3000:]}"
        assert health(srv) == 200


def test_concurrent_bad_requests(srv):
    """64 malformed requests at once, with valid ones among them: each gets its own answer."""
    rows = [C(OK_COMP[:-1]), C(dumps(comp(temperature=-1)), 400, "temperature"),
            C(dumps(comp(model="nope")), 404, "model"), C(OK_COMP, 415, headers={"Content-Type": "text/plain"}),
            C(nested(100_000)), C(with_bytes("prompt", b"\xff")), C(dumps(comp(prompt=[VOCAB])), 400, "prompt[0]"),
            X(dumps(chat(max_tokens=3)), 200)]
    jobs = [rows[i % len(rows)] for i in range(64)]
    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda c: send_http(srv, c), jobs))
    for case, (status, ctype, body) in zip(jobs, results):
        assert status == case.status, f"{describe(case)}: expected {case.status}, got {status}: {body[:300]!r}"
        if status >= 400:
            check_error_shape(status, body, case.param)
    assert srv.proc.poll() is None and health(srv) == 200


def metric(text, name):
    m = re.search(r"^" + name + r"\{[^}]*\} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def test_server_survives_and_the_block_pool_is_whole(srv):
    """After every case: still up, still serving, no KV block or request left behind, clean exit."""
    assert len(CASES) >= 60
    assert srv.proc.poll() is None
    assert health(srv) == 200
    status, _, body = send_http(srv, X(dumps(chat(max_tokens=4, temperature=0)), 200))
    assert status == 200, body
    r = json.loads(body)
    assert r["choices"][0]["message"]["role"] == "assistant" and r["usage"]["completion_tokens"] >= 1
    status, ctype, body = send_http(srv, C(dumps(comp(max_tokens=4, stream=True)), 200))
    assert status == 200 and ctype.startswith("text/event-stream"), (status, ctype, body[:300])
    events = [e[len("data: "):] for e in body.decode().split("\n\n") if e]
    assert events[-1] == "[DONE]", events
    chunks = [json.loads(e) for e in events[:-1]]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] in ("length", "stop")
    deadline = time.monotonic() + 10
    while True:
        c = http.client.HTTPConnection("127.0.0.1", port(srv), timeout=TIMEOUT)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        used, running = metric(text, "infer_kv_cache_blocks_used"), metric(text, "infer_num_requests_running")
        waiting = metric(text, "infer_num_requests_waiting")
        if used == 0 and running == 0 and waiting == 0:
            break
        assert time.monotonic() < deadline, f"blocks used {used}, running {running}, waiting {waiting} after 10 s"
        time.sleep(0.1)
    assert srv.proc.poll() is None
    assert srv.stop() == 0, open(srv.log.name).read()[-3000:]
