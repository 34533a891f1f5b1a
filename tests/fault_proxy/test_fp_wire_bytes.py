"""Any bytes on the proxied port end up in the log escaped and bounded, and never blind the control API.

One request with a non-UTF-8 path, header name, query name or method used to make ``GET /log`` and
``GET /held`` answer 500 until reset. Here each variant is sent on a raw socket through a real proxy
process; the log and the held list must keep answering, record the bytes as ``\\xNN`` escapes, and a
held request with such bytes stays listable and decidable.
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fp_harness import RunningProxy, start_proxy, start_upstream, stop_proxy

from fault_proxy.wire_text import CUT_MARK, MAX_NAMES, MAX_PATH_CHARS, readable, readable_names

pytestmark = pytest.mark.timeout(180)

_STDERR = Path(tempfile.mkdtemp(prefix="fp-wire-bytes-")) / "stderr.log"
SECRET = b"s3cr3t-query-value"


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    running = start_proxy(upstream, stderr_path=_STDERR)
    try:
        yield running
    finally:
        stop_proxy(running)
        upstream.server.shutdown()
        upstream.server.server_close()
        assert "Traceback" not in _STDERR.read_text(errors="replace")


@pytest.fixture
def fresh(proxy: RunningProxy) -> RunningProxy:
    proxy.control.reset()
    return proxy


def _complete(answer: bytes) -> bool:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    return bool(lengths) and len(body) >= int(lengths[0])


def _send(proxy: RunningProxy, head: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``head`` on a new connection; the answer, read until complete or the connection closes."""
    host, port = proxy.proxy_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head)
        answer = b""
        try:
            while not _complete(answer) and (chunk := sock.recv(65536)):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer


def _control_answers(proxy: RunningProxy) -> list[dict[str, Any]]:
    for path in ("/log", "/held", "/health", "/rules"):
        response = httpx.get(f"{proxy.control_url}{path}", timeout=5)
        assert response.status_code == 200, (path, response.text[:300])
        json.loads(response.content.decode("utf-8"))  # strict UTF-8 JSON, no lone surrogates
    return proxy.control.log()


@pytest.mark.parametrize(
    ("head", "field", "expected"),
    [
        (b"GET /a\xff/b HTTP/1.1\r\nHost: x\r\n\r\n", "path", "/a\\xff/b"),
        (b"GET /\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\n\r\n", "path", "/\\xed\\xa0\\x80"),  # an encoded surrogate
        (b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", "path", "/caf\u00e9"),  # valid UTF-8 stays readable
        (b"GET /back\\slash HTTP/1.1\r\nHost: x\r\n\r\n", "path", "/back\\\\slash"),
        (b"GET /q?n\xfeame=1&api_key=" + SECRET + b" HTTP/1.1\r\nHost: x\r\n\r\n", "query_names",
         ["api_key", "n\\xfeame"]),
        (b"GET /q?%ff%00=1 HTTP/1.1\r\nHost: x\r\n\r\n", "query_names", ["\ufffd\\x00"]),
        (b"G\xffT /m HTTP/1.1\r\nHost: x\r\n\r\n", "method", "G\\xffT"),
        (b"GET /h HTTP/1.1\r\nHost: x\r\nX-B\xffd: 1\r\n\r\n", "request_header_names", ["host", "x-b\\xffd"]),
        (b"GET /h HTTP/1.1\r\nHost: x\r\nX\x7fY: 1\r\n\r\n", "request_header_names", ["host", "x\\x7fy"]),
    ],
)
def test_every_byte_is_logged_escaped_and_the_control_api_keeps_answering(
    fresh: RunningProxy, head: bytes, field: str, expected: object
) -> None:
    answer = _send(fresh, head)
    assert answer.startswith(b"HTTP/1.1 "), answer[:100]
    entries = _control_answers(fresh)
    assert len(entries) == 1, entries
    assert entries[0][field] == expected
    assert SECRET.decode() not in json.dumps(entries)


def test_long_paths_and_many_names_are_bounded(fresh: RunningProxy) -> None:
    names = b"".join(b"X-N%d: 1\r\n" % i for i in range(300))
    query = b"&".join(b"q%d=1" % i for i in range(300))
    head = b"GET /" + b"\xff" * 3000 + b"?" + query + b" HTTP/1.1\r\nHost: x\r\n" + names + b"\r\n"
    assert _send(fresh, head).startswith(b"HTTP/1.1 ")
    entry = _control_answers(fresh)[0]
    assert len(entry["path"]) <= MAX_PATH_CHARS + 1 and entry["path"].endswith(CUT_MARK)
    assert entry["path"].startswith("/\\xff\\xff")
    assert len(entry["request_header_names"]) == MAX_NAMES + 1 and entry["request_header_names"][-1] == CUT_MARK
    assert len(entry["query_names"]) == MAX_NAMES + 1


def test_a_held_request_with_foreign_bytes_stays_listable_and_decidable(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"id": "hold", "fault": {"action": "hold", "phase": "request", "timeout_seconds": 30}})
    answers: list[bytes] = []
    heads = [b"POST /held\xff?k\xfe=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok",
             b"P\xffST /cut\x01me HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"]
    threads = [threading.Thread(target=lambda h=head: answers.append(_send(fresh, h, wait=20))) for head in heads]
    for thread in threads:
        thread.start()
    held = fresh.control.wait_for_held(2)
    assert {(h["method"], h["path"]) for h in held} == {("POST", "/held\\xff"), ("P\\xffST", "/cut\\x01me")}
    _control_answers(fresh)
    by_path = {h["path"]: h["hold_id"] for h in held}
    fresh.control.release(by_path["/held\\xff"])
    fresh.control.cut(by_path["/cut\\x01me"])
    for thread in threads:
        thread.join(25)
    assert any(answer.startswith(b"HTTP/1.1 200") for answer in answers)  # released: the upstream answered
    assert b"" in answers  # cut: no byte of an answer
    assert fresh.upstream.saw(None)  # the released request (no test id) reached the upstream
    assert fresh.control.held() == []


def test_error_text_from_mitmproxy_never_carries_the_bytes_verbatim(fresh: RunningProxy) -> None:
    # mitmproxy refuses this head (invalid header name) and words its error with the bytes it saw.
    _send(fresh, b"GET /e HTTP/1.1\r\nHost: x\r\nBad\xff" + SECRET + b": 1\r\n\r\n")
    entry = _control_answers(fresh)[0]
    assert entry["status_sent"] == 400 and entry["response_source"] == "proxy"
    assert entry["error"] and SECRET.decode() not in entry["error"]


@pytest.mark.parametrize("head", [b"GARBAGE \x00" + SECRET + b"\r\n\r\n", b"GET /x?k=" + SECRET + b"\r\n\r\n"])
def test_an_unparseable_head_gets_a_log_entry_without_its_bytes(fresh: RunningProxy, head: bytes) -> None:
    answer = _send(fresh, head)
    assert answer.startswith(b"HTTP/1.1 400 ")
    entry = _control_answers(fresh)[0]
    assert entry["method"] is None and entry["path"] is None and entry["phase"] == "connect"
    assert entry["error"] == "the request head could not be parsed" and entry["status_sent"] == 400
    assert SECRET.decode() not in json.dumps(entry)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [(b"plain", "plain"), (b"\xff", "\\xff"), (b"a\\xff", "a\\\\xff"), (b"\x00\x1b\x7f", "\\x00\\x1b\\x7f"),
     ("\u0085", "\\x85"), ("\ud800", "\\ud800"), ("\udcff", "\\xff"), (b"\xe2\x80\xae", "\u202e"), (b"", "")],
)
def test_readable_escapes_unambiguously(raw: bytes | str, shown: str) -> None:
    assert readable(raw, 100) == shown


def test_readable_cuts_at_the_limit_without_splitting_an_escape() -> None:
    assert readable(b"ab\xff", 3) == "ab" + CUT_MARK
    assert readable(b"abc", 3) == "abc"
    assert readable_names([b"a", b"b", b"c"], limit=2) == ["a", "b", CUT_MARK]
