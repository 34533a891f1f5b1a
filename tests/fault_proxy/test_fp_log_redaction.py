"""``--log-level trace`` prints what both servers do, never what a client sent as a value.

Run against real processes with a sentinel in every place a secret travels (a query value, a header
value, a refused head, a head cut short): the sentinel must not reach stderr, while stderr does
hold trace and debug lines (so the test would see a leak if there were one).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fp_harness import start_proxy, start_upstream, stop_proxy

from fault_proxy.log_setup import REDACTED, RedactingFilter, redact

pytestmark = pytest.mark.timeout(180)

SENTINEL = "Zq7-sentinel-value"


def _raw(url: str, data: bytes) -> None:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        sock.settimeout(2)
        with contextlib.suppress(TimeoutError):
            sock.recv(65536)


def test_the_http_proxy_redacts_query_and_header_values_at_trace(tmp_path: Path) -> None:
    stderr_path = tmp_path / "stderr.log"
    upstream = start_upstream()
    proxy = start_proxy(upstream, stderr_path=stderr_path, extra_args=("--log-level", "trace"))
    try:
        secret = SENTINEL.encode()
        httpx.get(f"{proxy.control_url}/log", params={"since": 0, "api_key": SENTINEL}, timeout=5)
        httpx.get(f"{proxy.proxy_url}/data", params={"api_key": SENTINEL},
                  headers={"Authorization": f"Bearer {SENTINEL}"}, timeout=5)
        _raw(proxy.proxy_url, b"GET /x?token=" + secret + b" HTTP/1.1\r\nHost: x\r\nBad\xff: " + secret + b"\r\n\r\n")
        _raw(proxy.proxy_url, b"NOT-HTTP " + secret + b"\r\n\r\n")
        _raw(proxy.proxy_url, b"GET /cut?k=" + secret + b" HTTP/1.1\r\nCookie: " + secret)  # closed mid-head
        _raw(proxy.control_url, b"GET /log?k=" + secret + b" HTTP/1.1\r\nHost: evil\r\nX-Key: " + secret + b"\r\n\r\n")
    finally:
        stop_proxy(proxy)
        upstream.server.shutdown()
        upstream.server.server_close()
    log = stderr_path.read_text(errors="replace")
    assert " TRACE uvicorn" in log and " DEBUG mitmproxy" in log, log[-2000:]
    assert "query_string" in log  # uvicorn printed the scope...
    assert SENTINEL not in log, log[log.find(SENTINEL) - 300:][:600]  # ...without the value
    assert "Traceback" not in log


def test_the_tcp_api_redacts_query_values_at_trace() -> None:
    process = subprocess.Popen([sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", "127.0.0.1:0",
                                "--log-level", "trace"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().rsplit(" ", 1)[1]
        httpx.get(f"{url}/proxies", params={"api_key": SENTINEL}, timeout=5)
        httpx.post(f"{url}/proxies?token={SENTINEL}", json={"name": "p", "upstream": "127.0.0.1:9"}, timeout=5)
    finally:
        process.terminate()
        _, log = process.communicate(timeout=20)
    assert process.returncode == 0
    assert " TRACE uvicorn" in log and "query_string" in log
    assert SENTINEL not in log and "Traceback" not in log


def test_a_bogus_log_level_is_an_invalid_argument() -> None:
    for command in ([sys.executable, "-m", "fault_proxy", "serve", "--listen", "127.0.0.1:0", "--upstream",
                     "http://127.0.0.1:1", "--control", "127.0.0.1:0", "--log-level", "loud"],
                    [sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", "127.0.0.1:0", "--log-level", "loud"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 2, result.stderr
        assert "--log-level" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("GET /log?since=0&api_key=abc HTTP/1.1", f"GET /log?since={REDACTED}&api_key={REDACTED} HTTP/1.1"),
        ("/x?a=1;b=2#frag", f"/x?a={REDACTED};b={REDACTED}#frag"),
        ("/x?flag&k=v", f"/x?flag&k={REDACTED}"),
        ("scope={'query_string': b'k=secret', 'path': '/log'}",
         "scope={'query_string': <redacted bytes>, 'path': '/log'}"),
        ('head: b"GET /?k=\\"s\\" HTTP/1.1\\r\\n"', "head: <redacted bytes>"),
        ("no query here: a=b", "no query here: a=b"),
    ],
)
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_the_filter_formats_once_and_redacts_arguments_and_tracebacks() -> None:
    try:
        raise ValueError(f"bad b'{SENTINEL}'")
    except ValueError:
        record = logging.LogRecord("uvicorn", logging.ERROR, __file__, 1, "scope=%s", ({"q": b"k=" + b"v"},),
                                   sys.exc_info())
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == "scope={'q': <redacted bytes>}"
    assert record.exc_text is not None and SENTINEL not in record.exc_text and record.exc_info is None
