"""The HTTP layer's own errors, on raw sockets, against one `infer serve` (the tiny random Gemma
GGUF with the real tokenizer, written from the default model as conftest.py does; skipped, as the
other server tests are, when that model cannot be fetched; nothing from ../shared).

Each row sends bytes and reads until the server closes the connection. What comes back must be
exactly one well-formed response with the row's status (a response whose head or body is cut, or
anything after it, fails); every error closes the connection, and its body is the server's error
in OpenAI's shape ({"error": {"message", "type", "param", "code"}}, Content-Type
application/json), whether the HTTP layer (src/server/http_parse.c, http.c) or a route refused
it. After every row the server must still answer GET /health. And a bad address (a port in use,
a host that does not resolve) fails `infer serve` before it reads its model.
"""
import json
import os
import re
import socket
import subprocess
import time
from typing import NamedTuple, Optional

import pytest

from conftest import INFER, Server

TIMEOUT = 8.0
CT = "Content-Type: application/json"
TE = "Transfer-Encoding: chunked"
CLOSE = "Connection: close"
TYPES = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}


def req(method, target, headers=(), body=b"", version="HTTP/1.1"):
    head = [f"{method} {target} {version}".encode(), b"Host: 127.0.0.1"]
    head += [h.encode() if isinstance(h, str) else h for h in headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def chunked(body, size):
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size))
    return out + b"0\r\n\r\n"


HEALTH = req("GET", "/health")


def fields(n):
    return [f"X-{i:06d}: v" for i in range(n)]


class Row(NamedTuple):
    data: bytes
    status: int
    body: str  # "json" (the OpenAI error), "ok" (a 2xx: the route's answer)
    shut: bool = False  # half-close after sending (else the server must close by itself)


def R(data, status, body, **kw):
    return Row(data, status, body, **kw)


ROWS = [
    # ---- sizes: 64 KiB of head, 1024 fields, 8 KiB of target ----
    pytest.param(R(req("GET", "/health", ["X-Big: " + "a" * 100_000]), 431, "json"), id="header-100KB"),
    pytest.param(R(req("GET", "/health", ["X-Big: " + "a" * 250_000]), 431, "json"), id="header-250KB"),
    pytest.param(R(req("GET", "/health", ["X-Big: " + "a" * 300_000]), 431, "json"), id="header-300KB"),
    pytest.param(R(req("GET", "/health", ["Cookie: a=" + "b" * 100_000]), 431, "json"), id="cookie-100KB"),
    pytest.param(R(req("GET", "/health", ["Cookie: a=" + "b" * 150_000]), 431, "json"), id="cookie-150KB"),
    pytest.param(R(req("GET", "/health", fields(3000)), 431, "json"), id="headers-3000"),
    pytest.param(R(req("GET", "/health", fields(10_000)), 431, "json"), id="headers-10000"),
    pytest.param(R(req("GET", "/health", fields(1024)), 431, "json"), id="headers-1025"),  # Host is one
    pytest.param(R(req("GET", "/health", fields(1022) + [CLOSE]), 200, "ok"), id="headers-1024-ok"),
    pytest.param(R(req("GET", "/" + "a" * 100_000), 414, "json"), id="path-100KB"),
    pytest.param(R(req("GET", "/" + "a" * 300_000), 414, "json"), id="path-300KB"),
    pytest.param(R(req("GET", "/" + "a" * 8192), 414, "json"), id="target-8193-bytes"),
    pytest.param(R(req("GET", "/health?q=" + "a" * 9000), 414, "json"), id="query-9KB"),
    pytest.param(R(req("GET", "/health", ["X-Big: " + "a" * 60_000, CLOSE]), 200, "ok"), id="header-60KB-ok"),
    pytest.param(R(req("GET", "/health", fields(1000) + [CLOSE]), 200, "ok"), id="headers-1000-ok"),
    pytest.param(R(req("GET", "/" + "a" * 8000, [CLOSE]), 404, "json"), id="path-8000-bytes-routed"),
    pytest.param(R(req("GET", "/" + "a" * 8191, [CLOSE]), 404, "json"), id="target-8192-bytes-routed"),
    # ---- framing (RFC 9112 sections 6.1, 6.3): refused from the headers, the body unread ----
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 2", "Content-Length: 30"], b"{}"), 400,
                   "json"), id="content-length-twice-differing"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 2", "Content-Length: 2"], b"{}"), 400,
                   "json"), id="content-length-twice-equal"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 2, 2"], b"{}"), 400, "json"),
                 id="content-length-list"),
    # what a proxy framing by the second length would forward as the body is a request here
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 0", f"Content-Length: {len(HEALTH)}"],
                       HEALTH), 400, "json"), id="content-length-0-then-n-smuggled-request"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 5", TE], b"0\r\n\r\n" + HEALTH),
                   400, "json"), id="content-length-and-chunked-smuggled-request"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE, "Content-Length: 2"], b"2\r\n{}\r\n0\r\n\r\n"), 400,
                   "json"), id="chunked-and-content-length"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE, TE], b"2\r\n{}\r\n0\r\n\r\n"), 400, "json"),
                 id="chunked-twice"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Transfer-Encoding: gzip"], b"{}"), 501, "json"),
                 id="transfer-encoding-gzip"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Transfer-Encoding: gzip, chunked"], b"2\r\n{}\r\n0\r\n\r\n"),
                   501, "json"), id="transfer-encoding-gzip-chunked"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"2\r\n{}\r\n0\r\n\r\n", version="HTTP/1.0"), 400,
                   "json"), id="chunked-in-http-1.0"),
    pytest.param(R(req("POST", "/tokenize", [CT, "Transfer-Encoding: Chunked", CLOSE],
                       chunked(b'{"prompt": "hello"}', 5)), 200, "ok"), id="chunked-valid-ok"),
    pytest.param(R(req("POST", "/tokenize", [CT, TE, CLOSE], b'13;name=value;x\r\n{"prompt": "hello"}\r\n'
                       b"0\r\nX-Trailer: t\r\n\r\n"), 200, "ok"), id="chunked-extension-and-trailer-ok"),
    # ---- the Content-Length itself ----
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: -1"], b"{}"), 400, "json"),
                 id="content-length-negative"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: abc"], b"{}"), 400, "json"),
                 id="content-length-not-a-number"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: +2"], b"{}"), 400, "json"),
                 id="content-length-plus-sign"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 0x2"], b"{}"), 400, "json"),
                 id="content-length-hex"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 99999999999999999999999"], b"{}"), 400,
                   "json"), id="content-length-over-64-bits"),
    pytest.param(R(req("POST", "/v1/completions", [CT, "Content-Length: 100000000"], b"{}"), 413, "json"),
                 id="content-length-over-8x-the-limit"),
    # ---- bad chunked framing, found while the body is read ----
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"ZZ\r\nabc\r\n0\r\n\r\n"), 400, "json"),
                 id="chunk-size-not-hex"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"2\r\n{}XX0\r\n\r\n"), 400, "json"),
                 id="chunk-without-crlf"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"2\n{}\r\n0\r\n\r\n"), 400, "json"),
                 id="chunk-size-bare-lf"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"FFFFFFFFFFFFFFFFFF\r\nabc"), 400, "json"),
                 id="chunk-size-over-64-bits"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"4000000\r\nabc"), 413, "json"),
                 id="chunk-size-over-8x-the-limit"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"2\r\n{}\r\n0\r\nbad\r\n\r\n"), 400, "json"),
                 id="trailer-without-colon"),
    pytest.param(R(req("POST", "/v1/completions", [CT, TE], b"2\r\n{}\r\n0\r\n"), 400, "json", shut=True),
                 id="chunked-body-cut-half-close"),
    # ---- the request line and header lines ----
    pytest.param(R(b"GARBAGE\r\n\r\n", 400, "json"), id="request-line-garbage"),
    pytest.param(R(b"\x00\x01\x02\xff\xfe\r\n\r\n", 400, "json"), id="request-line-binary"),
    pytest.param(R(b"GET\r\n\r\n", 400, "json"), id="request-line-method-only"),
    pytest.param(R(b"GET /health\r\n\r\n", 400, "json"), id="request-line-http-0.9-style"),
    pytest.param(R(b"GET  /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "json"), id="request-line-two-spaces"),
    pytest.param(R(b"GET /health HTTP/1.1 \r\nHost: x\r\n\r\n", 400, "json"), id="request-line-trailing-space"),
    pytest.param(R(b"GET /health FOO\r\nHost: x\r\n\r\n", 400, "json"), id="request-line-bad-version"),
    pytest.param(R(b"GET /health http/1.1\r\nHost: x\r\n\r\n", 400, "json"), id="request-line-lowercase-version"),
    pytest.param(R(b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", 505, "json"), id="http-9.9"),
    pytest.param(R(b"GET /health HTTP/0.9\r\nHost: x\r\n\r\n", 505, "json"), id="http-0.9"),
    pytest.param(R(b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505, "json"), id="http-2.0"),
    pytest.param(R(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "json"), id="http-2-preface"),
    pytest.param(R(b"A" * 40 + b" /health HTTP/1.1\r\nHost: x\r\n\r\n", 501, "json"), id="method-40-bytes"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "json"),
                 id="header-without-colon"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", 400, "json"),
                 id="header-space-before-colon"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400, "json"),
                 id="header-obs-fold"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n", 400, "json"), id="header-empty-name"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: b\x00c\r\n\r\n", 400, "json"),
                 id="header-value-nul"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: b\rc\r\n\r\n", 400, "json"),
                 id="header-value-bare-cr"),
    pytest.param(R(b"GET /health HTTP/1.1\r\n\r\n", 400, "json"), id="http-1.1-without-host"),
    pytest.param(R(b"GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "json"), id="host-twice"),
    pytest.param(R(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5", 400, "json", shut=True),
                 id="head-cut-half-close"),
    pytest.param(R(b"GET /health HTTP/1.0\r\n\r\n", 200, "ok"), id="http-1.0-closes-ok"),
    pytest.param(R(b"\r\nGET /health HTTP/1.1\nHost: x\nConnection: close\n\n", 200, "ok"),
                 id="leading-blank-line-and-bare-lf-ok"),
    # any method and target that parse reach the server
    pytest.param(R(req("GARBAGE", "/nowhere", [CLOSE]), 404, "json"), id="unknown-method-unknown-path"),
    pytest.param(R(req("FOO", "/v1/completions", [CLOSE]), 405, "json"), id="unknown-method"),
    # ---- Expect: 100-continue: invited only when the body will be read ----
    pytest.param(R(req("POST", "/v1/completions", [CT, "Expect: 100-continue", "Content-Length: 5000000"]), 413,
                   "json"), id="expect-continue-over-the-limit"),
    pytest.param(R(req("POST", "/nowhere", [CT, "Expect: 100-continue", "Content-Length: 2"]), 404, "json"),
                 id="expect-continue-unknown-route"),
]


# ---- the wire ----

def port(s):
    return int(s.url.rsplit(":", 1)[1])


def exchange(s, data, timeout=TIMEOUT, shut=False):
    """Everything the server sends on one connection after data, until it closes it."""
    sock = socket.create_connection(("127.0.0.1", port(s)), timeout=timeout)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered early and closed: read what it said
        if shut:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        buf = b""
        deadline = time.monotonic() + timeout
        while True:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise TimeoutError(f"the connection is still open after {timeout} s; received {buf[:300]!r}")
            except ConnectionResetError:
                break
            if not chunk:
                break
            buf += chunk
        return buf
    finally:
        sock.close()


def responses(buf):
    """[(status, headers, body)]: buf must be whole responses, each with a Content-Length, and nothing else."""
    out = []
    while buf:
        end = buf.find(b"\r\n\r\n")
        assert end >= 0, f"bytes that are not a response head: {buf[:300]!r}"
        lines = buf[:end].decode("latin-1").split("\r\n")
        m = re.fullmatch(r"HTTP/1\.[01] (\d{3}) [^\r\n]*", lines[0])
        assert m, f"not a status line: {lines[0]!r}"
        headers = {}
        for line in lines[1:]:
            k, sep, v = line.partition(":")
            assert sep and k and k == k.strip(), f"not a header line: {line!r}"
            assert k.lower() not in headers, f"{k} twice in one response: {buf[:end]!r}"
            headers[k.lower()] = v.strip()
        n = int(headers["content-length"])
        body = buf[end + 4:end + 4 + n]
        assert len(body) == n, f"body cut: {len(body)} of {n} bytes"
        out.append((int(m.group(1)), headers, body))
        buf = buf[end + 4 + n:]
    return out


def check_json_error(status, headers, body):
    assert headers.get("content-type", "").startswith("application/json"), headers
    e = json.loads(body)
    assert list(e) == ["error"], e
    err = e["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"], err
    assert err["type"] == TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error"), err
    assert err["param"] is None and err["code"] is None, err


def health(s):
    got = responses(exchange(s, req("GET", "/health", [CLOSE])))
    return got[0][0] if len(got) == 1 else None


# ---- the suite ----

@pytest.fixture(scope="module")
def srv(tiny_gguf):
    s = Server(tiny_gguf, name="protocol", extra=["--max-body-mb", "4"])
    yield s
    if s.proc.poll() is None:
        assert s.stop() == 0


@pytest.mark.parametrize("row", ROWS)
def test_protocol(srv, row):
    assert srv.proc.poll() is None, "the server is not running (an earlier row killed it)"
    try:
        got = responses(exchange(srv, row.data, shut=row.shut))
        assert len(got) == 1, f"{len(got)} responses: {[g[0] for g in got]}"
        st, headers, payload = got[0]
        assert st == row.status, f"expected {row.status}, got {st}: {payload[:300]!r}"
        if st >= 400:
            assert headers.get("connection", "").lower() == "close", headers
        if row.body == "json":
            check_json_error(st, headers, payload)
    except (TimeoutError, socket.timeout) as e:
        pytest.fail(f"{row.data[:200]!r}: {e}")
    finally:
        assert srv.proc.poll() is None, f"the server died:\n{open(srv.log.name).read()[-3000:]}"
        assert health(srv) == 200


def test_refusal_after_a_request_on_the_same_connection(srv):
    """A kept-alive connection: the first request is answered, the second's framing refused, then closed."""
    data = req("GET", "/health") + req("POST", "/v1/completions", [CT, "Content-Length: 2", "Content-Length: 3"], b"{}")
    got = responses(exchange(srv, data))
    assert [g[0] for g in got] == [200, 400], got
    check_json_error(*got[1])
    assert got[1][1].get("connection") == "close"


def test_a_valid_request_after_the_rows(srv):
    body = json.dumps({"model": "protocol", "prompt": "Hi", "max_tokens": 2}).encode()
    got = responses(exchange(srv, req("POST", "/v1/completions", [CT, f"Content-Length: {len(body)}", CLOSE], body)))
    assert len(got) == 1 and got[0][0] == 200, got
    assert json.loads(got[0][2])["usage"]["completion_tokens"] >= 1


def test_keep_alive_pipelined(srv):
    """Three requests written at once on one HTTP/1.1 connection: three answers in order, the connection kept
    until the last asks to close."""
    body = json.dumps({"prompt": "hello"}).encode()
    data = (req("GET", "/health") + req("POST", "/tokenize", [CT, f"Content-Length: {len(body)}"], body) +
            req("GET", "/v1/models", [CLOSE]))
    got = responses(exchange(srv, data))
    assert [g[0] for g in got] == [200, 200, 200], got
    assert "connection" not in got[0][1] and got[2][1].get("connection") == "close"
    assert json.loads(got[1][2])["count"] >= 1


def test_http_1_0_keep_alive(srv):
    data = req("GET", "/health", ["Connection: keep-alive"], version="HTTP/1.0") + req("GET", "/health",
                                                                                       version="HTTP/1.0")
    got = responses(exchange(srv, data))
    assert [g[0] for g in got] == [200, 200], got
    assert got[0][1].get("connection", "").lower() == "keep-alive" and got[1][1].get("connection") == "close"


def test_head_sends_the_headers_alone(srv):
    data = req("HEAD", "/v1/models") + req("GET", "/v1/models", [CLOSE])
    buf = exchange(srv, data)
    head, _, rest = buf.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    length = int(re.search(rb"\r\nContent-Length: (\d+)", head).group(1))
    got = responses(rest)  # the GET's response follows the HEAD's head at once: no body between
    assert len(got) == 1 and got[0][0] == 200 and len(got[0][2]) == length > 0, (head, rest[:300])


def test_expect_100_continue_invites_the_body(srv):
    body = json.dumps({"prompt": "hello"}).encode()
    sock = socket.create_connection(("127.0.0.1", port(srv)), timeout=TIMEOUT)
    try:
        sock.sendall(req("POST", "/tokenize", [CT, "Expect: 100-continue", f"Content-Length: {len(body)}", CLOSE]))
        interim = sock.recv(4096)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        sock.sendall(body)
        buf = b""
        while chunk := sock.recv(65536):
            buf += chunk
    finally:
        sock.close()
    got = responses(buf)
    assert len(got) == 1 and got[0][0] == 200, got


def test_streams_chunked_on_1_1_and_close_delimited_on_1_0(srv):
    body = json.dumps({"model": "protocol", "prompt": "Hi", "max_tokens": 3, "stream": True}).encode()
    for version in ("HTTP/1.1", "HTTP/1.0"):
        buf = exchange(srv, req("POST", "/v1/completions", [CT, f"Content-Length: {len(body)}", CLOSE], body,
                                version=version))
        head, _, rest = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Type: text/event-stream" in head, head
        if version == "HTTP/1.1":
            assert b"\r\nTransfer-Encoding: chunked" in head, head
            text = b""
            while True:  # every chunk whole, then the last one and nothing after it
                size, _, rest = rest.partition(b"\r\n")
                n = int(size, 16)
                text, rest = text + rest[:n], rest[n:]
                assert rest.startswith(b"\r\n"), rest[:50]
                rest = rest[2:]
                if n == 0:
                    break
            assert rest == b""
        else:
            assert b"Transfer-Encoding" not in head and b"Content-Length" not in head, head
            text = rest
        assert text.rstrip().endswith(b"data: [DONE]"), text[-200:]


def test_layer_errors_are_counted(srv):
    def count():
        page = responses(exchange(srv, req("GET", "/metrics", [CLOSE])))[0][2].decode()
        m = re.search(r'^infer_requests_total\{[^}]*route="other",status="505"\} (\S+)$', page, re.M)
        return float(m.group(1)) if m else 0.0
    before = count()
    exchange(srv, b"GET /health HTTP/3.0\r\nHost: x\r\n\r\n")
    assert count() == before + 1


def test_over_max_connections_is_503(tiny_gguf):
    """Two connections held open, the most this server takes: a third gets one JSON 503 and is closed; once one
    of the two closes, a new connection is served."""
    s = Server(tiny_gguf, name="protocol", extra=["--max-connections", "2"])
    held = []
    try:
        for _ in range(2):
            held.append(socket.create_connection(("127.0.0.1", port(s)), timeout=TIMEOUT))
            held[-1].sendall(req("GET", "/health"))  # answered, then the connection idles, kept
            assert held[-1].recv(4096).startswith(b"HTTP/1.1 200 ")
        got = responses(exchange(s, b""))
        assert len(got) == 1 and got[0][0] == 503, got
        check_json_error(*got[0])
        held.pop().close()
        deadline = time.monotonic() + TIMEOUT
        while health(s) != 200:
            assert time.monotonic() < deadline, "no connection served after one of the two closed"
            time.sleep(0.05)
    finally:
        for h in held:
            h.close()
        assert s.stop() == 0, open(s.log.name).read()[-3000:]


@pytest.mark.parametrize("where", ["port in use", "no such host"])
def test_a_bad_address_fails_before_the_model_loads(tmp_path, where):
    """serve binds before it loads the model: the model here is a FIFO named .gguf that no one
    writes, so reading it would hang; the address's error must come at once instead."""
    model = tmp_path / "model.gguf"
    os.mkfifo(model)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    host, expect = ("127.0.0.1", "cannot listen") if where == "port in use" else ("no.such.host.invalid",
                                                                                 "no such address")
    try:
        r = subprocess.run([INFER, "serve", "--model", str(model), "--host", host, "--port", str(port)],
                           capture_output=True, text=True, timeout=20)
    finally:
        taken.close()
    assert r.returncode == 1, r.stderr
    assert f"--host {host} --port {port}" in r.stderr and expect in r.stderr, r.stderr
    assert r.stdout == ""
