"""Size and time bounds on every listener of the proxy, on real processes.

The proxied port: a head of at most 64 KiB within 10 s of its first byte, a body of at most
``--max-body-bytes`` within ``--body-timeout`` of the head (here 1 MiB and 2 s), at most one head's
worth of bytes ahead of an answer. The control API and the Toxiproxy-compatible API: a head within
10 s (h11 bounds its size), a body of at most 1 MiB within 10 s. Each refusal is a 4xx and a closed
connection, the proxy's log says what happened, nothing reaches the upstream, and the process keeps
answering. Time bounds are checked from both sides: not answered before the bound, and answered
within it plus a margin for a loaded machine.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fp_harness import RunningProxy, start_proxy, start_upstream, stop_proxy

from fault_proxy.asgi_server import HEAD_TIMEOUT_S
from fault_proxy.asgi_server import MAX_HEAD_BYTES as MAX_API_HEAD_BYTES
from fault_proxy.config import ReadLimits

pytestmark = pytest.mark.timeout(240)

_STDERR = Path(tempfile.mkdtemp(prefix="fp-bounds-")) / "stderr.log"
MAX_BODY = 1 << 20
BODY_TIMEOUT = 2.0
HEAD = ReadLimits()
MARGIN = 6.0  # a loaded two-core machine may answer late; never early


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    running = start_proxy(upstream, stderr_path=_STDERR,
                          extra_args=("--max-body-bytes", str(MAX_BODY), "--body-timeout", str(BODY_TIMEOUT)))
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
    proxy.upstream.seen.clear()
    return proxy


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _read_answer(sock: socket.socket, limit: float) -> bytes:
    sock.settimeout(limit)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return answer


def _after(url: str, first: bytes, then: Callable[[socket.socket], None] | None = None,
           limit: float = 30.0) -> tuple[bytes, float]:
    """Send ``first`` (then let ``then`` go on writing), read until the peer closes: answer, seconds."""
    with socket.create_connection(_address(url), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(first)
        if then is not None:
            with contextlib.suppress(OSError):  # the proxy closed the connection on us: the bound acting
                then(sock)
        return _read_answer(sock, limit), time.monotonic() - started


def _status(answer: bytes) -> bytes:
    return answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.1 ") else answer[:40]


def _only_entry(proxy: RunningProxy) -> dict[str, Any]:
    entries = proxy.control.wait_for_log(lambda e: len(e) == 1 and bool(e[0]["error"]), timeout=10)
    return entries[0]


def _in_parallel(*calls: Callable[[], Any]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        results[index] = call()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


# -- the proxied port ----------------------------------------------------------------------------

def _trickle(every: float, count: int) -> Callable[[socket.socket], None]:
    def send(sock: socket.socket) -> None:
        for i in range(count):
            time.sleep(every)
            sock.sendall(b"X-Slow-%d: 1\r\n" % i)
    return send


def test_a_head_that_never_ends_is_answered_408_at_the_bound(fresh: RunningProxy) -> None:
    half, trickled = _in_parallel(
        lambda: _after(fresh.proxy_url, b"GET /half HTTP/1.1\r\nHost: x\r\n"),
        lambda: _after(fresh.proxy_url, b"GET /slowloris HTTP/1.1\r\n", _trickle(1.0, 40)),
    )
    for answer, seconds in (half, trickled):
        assert _status(answer) == b"408", answer[:200]
        assert b"application/problem+json" in answer
        assert HEAD.head_timeout - 0.5 <= seconds <= HEAD.head_timeout + MARGIN
    entries = fresh.control.log()
    assert [e["status_sent"] for e in entries] == [408, 408]
    assert all(e["method"] is None and "head not complete" in e["error"] for e in entries)
    assert not fresh.upstream.seen


@pytest.mark.parametrize(
    "first",
    [b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (HEAD.max_head_bytes + 10),  # one send
     b"\r\n" * (HEAD.max_head_bytes // 2 + 10),  # blank lines before a request line
     b"GET /" + b"p" * (HEAD.max_head_bytes + 10)],
)
def test_a_head_over_64_kib_is_answered_431(fresh: RunningProxy, first: bytes) -> None:
    answer, _ = _after(fresh.proxy_url, first)
    assert _status(answer) == b"431", answer[:200]
    assert "head larger than" in _only_entry(fresh)["error"]


def test_a_head_over_64_kib_sent_in_pieces_is_answered_431(fresh: RunningProxy) -> None:
    def pieces(sock: socket.socket) -> None:
        for _ in range(40):
            sock.sendall(b"X-Piece: " + b"b" * 4000 + b"\r\n")
    answer, _ = _after(fresh.proxy_url, b"GET / HTTP/1.1\r\nHost: x\r\n", pieces)
    assert _status(answer) == b"431", answer[:200]


def _endless_chunks(sock: socket.socket) -> None:
    chunk = b"%x\r\n%s\r\n" % (65536, b"z" * 65536)
    for _ in range(300 * 16):  # 300 MB, if the proxy would take it
        sock.sendall(chunk)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("path", ["/buffered", "/streamed"])
def test_a_never_ending_chunked_body_is_refused_at_the_size_bound(fresh: RunningProxy, path: str) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        if path == "/streamed":  # a kill at "forwarded" makes the proxy stream the body upstream
            fresh.control.add_rule({"match": {"path": "/streamed"},
                                    "fault": {"action": "kill", "phase": "forwarded", "pid": sleeper.pid}})
        before = _rss_kib(fresh.process.pid)
        head = b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" % path.encode()
        answer, _ = _after(fresh.proxy_url, head, _endless_chunks)
        assert _status(answer) == b"413", answer[:200]
        entry = _only_entry(fresh)
        assert entry["status_sent"] == 413 and "larger than" in entry["error"]
        assert entry["forwarded"] == ("attempted" if path == "/streamed" else "no")
        assert sleeper.poll() is None  # the request never completed: the kill never fired
        assert _rss_kib(fresh.process.pid) - before < 64 * 1024  # 1 MiB kept, not 300 MB
        assert fresh.upstream.saw(None) == []  # nothing complete reached the upstream
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_memory_of_refused_bodies_is_given_back() -> None:
    # mitmproxy's objects form reference cycles; without a collection after a large body each
    # refused 32 MiB body stayed in the process (three of them: about +100 MiB for good).
    upstream = start_upstream()
    proxy = start_proxy(upstream, extra_args=("--max-body-bytes", str(32 << 20)))
    try:
        before = _rss_kib(proxy.process.pid)
        head = b"POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        for _ in range(3):
            assert _status(_after(proxy.proxy_url, head, _endless_chunks)[0]) == b"413"
        proxy.control.wait_for_log(lambda e: len(e) == 3 and all(x["status_sent"] == 413 for x in e))
        deadline = time.monotonic() + 15  # given back once the connections are closed, not at once
        while _rss_kib(proxy.process.pid) - before >= 40 * 1024 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _rss_kib(proxy.process.pid) - before < 40 * 1024
    finally:
        stop_proxy(proxy)
        upstream.server.shutdown()
        upstream.server.server_close()


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"POST /cl HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), b"413"),
        (b"POST /cl HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", b"413"),
        (b"POST /ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nabc", b"413"),
        (b"POST /ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n", b"413"),
        (b"POST /ext HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"e" * (HEAD.max_head_bytes + 10),
         b"400"),
    ],
)
def test_announced_sizes_over_the_bound_are_refused_at_once(fresh: RunningProxy, head: bytes, status: bytes) -> None:
    answer, seconds = _after(fresh.proxy_url, head)
    assert _status(answer) == status, answer[:200]
    assert seconds < BODY_TIMEOUT  # refused when announced, not when the time bound ran out
    assert fresh.upstream.saw(None) == []


@pytest.mark.parametrize("expect", [b"", b"Expect: 100-continue\r\n"])
def test_a_body_that_stalls_is_answered_408_at_the_body_bound(fresh: RunningProxy, expect: bytes) -> None:
    head = b"POST /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n" + expect + b"\r\n"
    answer, seconds = _after(fresh.proxy_url, head + b"abc")
    if expect:  # the interim answer came first; the final one follows it on the same connection
        interim, _, answer = answer.partition(b"\r\n\r\n")
        assert interim.startswith(b"HTTP/1.1 100 ")
    assert _status(answer) == b"408", answer[:200]
    assert BODY_TIMEOUT - 0.5 <= seconds <= BODY_TIMEOUT + MARGIN
    entry = _only_entry(fresh)
    assert entry["path"] == "/stall" and entry["status_sent"] == 408 and entry["forwarded"] == "no"
    assert "body not complete" in entry["error"]
    assert fresh.upstream.saw(None) == []


def test_bytes_sent_far_ahead_of_an_answer_close_the_connection(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "hold", "phase": "request", "timeout_seconds": 30}})
    request = b"GET /ahead HTTP/1.1\r\nHost: x\r\n\r\n"

    def flood(sock: socket.socket) -> None:
        fresh.control.wait_for_held(1)
        for _ in range(64):
            sock.sendall(b"y" * 4096)
    answer, _ = _after(fresh.proxy_url, request, flood, limit=15)
    assert answer == b""
    entry = fresh.control.wait_for_log(lambda e: bool(e and e[0]["error"]))[0]
    assert "ahead of the answer" in entry["error"]
    for held in fresh.control.held():
        fresh.control.cut(held["hold_id"])


def test_ordinary_requests_still_pass(fresh: RunningProxy) -> None:
    body = b"k" * (MAX_BODY - 1)
    head = b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    answer, _ = _after(fresh.proxy_url, head + body)
    assert _status(answer) == b"200"
    assert fresh.upstream.saw(None)[0].body_bytes == len(body)


# -- the control API and the Toxiproxy-compatible API ------------------------------------------

def _api_bounds(url: str, problem_marker: bytes) -> None:
    host, port = _address(url)
    own = b"Host: %s:%d\r\n" % (host.encode(), port)
    silent, half, stalled = _in_parallel(
        lambda: _after(url, b""),
        lambda: _after(url, b"GET /version HTTP/1.1\r\n" + own),
        lambda: _after(url, b"POST /reset HTTP/1.1\r\n" + own + b"X-Restproof-Admin: 1\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{}"),
    )
    assert silent[0] == b"" and HEAD_TIMEOUT_S - 0.5 <= silent[1] <= HEAD_TIMEOUT_S + MARGIN
    for answer, seconds in (half, stalled):
        assert _status(answer) == b"408", answer[:200]
        assert problem_marker in answer
        assert 9.5 <= seconds <= 10 + MARGIN
    oversized, _ = _after(url, b"GET /version HTTP/1.1\r\n" + own + b"X-Big: " + b"h" * MAX_API_HEAD_BYTES)
    assert _status(oversized) == b"400", oversized[:200]  # h11's size bound, in the API's own error shape
    assert b"invalid-input" in oversized or b'"status":400' in oversized


def test_the_control_api_bounds_heads_and_bodies_in_time(fresh: RunningProxy) -> None:
    _api_bounds(fresh.control_url, b"urn:fault-proxy:problem:timeout")
    assert fresh.control.health()["status"] == "ok"


def test_the_toxiproxy_api_bounds_heads_and_bodies_in_time() -> None:
    process = subprocess.Popen([sys.executable, "-m", "fault_proxy.tcp", "serve", "--api", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().rsplit(" ", 1)[1]
        _api_bounds(url, b'"status":408')
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in stderr
