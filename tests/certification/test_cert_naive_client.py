"""The naive baselines' HTTP client (h11 over one kept-alive socket).

What the judge relies on: a baseline retries after any broken exchange (a lost answer, an answer cut
inside its headers or its body), so it is caught re-sending where a row says it must be; it never
writes a request into a connection the server closed while idle (a false attempt); and it sends the
bundle's exact method, target, headers and body.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from certification.naive_http import ExchangeFailed, NaiveClient
from certification.naive_sinks import deliver

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}"


class _Server:
    """Loopback HTTP/1.1, scripted per accepted connection: one answer per request read on it; None
    closes the connection without answering. After its script a connection is closed."""

    def __init__(self, scripts: list[list[bytes | None]]) -> None:
        self.scripts = scripts
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _read(self, conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            body += conn.recv(65536)
        return head + b"\r\n\r\n" + body

    def _serve(self) -> None:
        for script in self.scripts:
            conn, _ = self.sock.accept()
            self.connections += 1
            with conn:
                for answer in script:
                    request = self._read(conn)
                    if request is None:
                        break
                    self.requests.append(request)
                    if answer is None:
                        break
                    conn.sendall(answer)


@contextmanager
def _server(scripts: list[list[bytes | None]]) -> Iterator[_Server]:
    server = _Server(scripts)
    try:
        yield server
    finally:
        server.sock.close()


def _bodies(server: _Server) -> list[bytes]:
    return [request.partition(b"\r\n\r\n")[2] for request in server.requests]


def test_sends_the_exact_method_target_headers_and_body() -> None:
    with _server([[OK]]) as server:
        client = NaiveClient(f"http://127.0.0.1:{server.port}/base/")
        assert client.request("POST", "/mock/v1/x?a=1", {"Content-Type": "application/json", "X-Sentinel": "yes"},
                              b'{"k":1}') == 200
        client.close()
    head = server.requests[0].partition(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /base/mock/v1/x?a=1 HTTP/1.1"
    assert {b"x-sentinel: yes", b"content-type: application/json", b"content-length: 7"} <= {
        line.lower() for line in head[1:]}
    assert _bodies(server) == [b'{"k":1}']


@pytest.mark.parametrize("answer", [
    None,  # no answer at all: the classic lost response
    OK[:40],  # cut inside the headers: http.client would read this as 200 OK
    OK[:-1],  # cut inside the body
    b"garbage\r\n\r\n",  # not HTTP
], ids=["lost", "cut-in-headers", "cut-in-body", "not-http"])
def test_a_broken_answer_fails_and_the_next_attempt_opens_a_new_connection(answer: bytes | None) -> None:
    with _server([[answer], [OK]]) as server:  # the broken answer's connection is closed after it
        client = NaiveClient(f"http://127.0.0.1:{server.port}")
        with pytest.raises(ExchangeFailed):
            client.request("POST", "/p", {}, b"1")
        assert client.request("POST", "/p", {}, b"1") == 200
        client.close()
    assert server.connections == 2


def test_a_connection_kept_alive_serves_the_next_request() -> None:
    with _server([[OK, OK]]) as server:
        client = NaiveClient(f"http://127.0.0.1:{server.port}")
        assert [client.request("POST", "/p", {}, body) for body in (b"1", b"2")] == [200, 200]
        client.close()
    assert server.connections == 1 and _bodies(server) == [b"1", b"2"]


def test_a_connection_the_server_closed_while_idle_is_not_written_into() -> None:
    with _server([[OK], [OK]]) as server:
        client = NaiveClient(f"http://127.0.0.1:{server.port}")
        assert client.request("POST", "/p", {}, b"1") == 200
        time.sleep(0.2)  # the server closes the first connection meanwhile
        assert client.request("POST", "/p", {}, b"2") == 200
        client.close()
    assert _bodies(server) == [b"1", b"2"] and server.connections == 2


def test_refuses_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http"):
        NaiveClient("ftp://127.0.0.1:1")


def _bundle(tmp_path: Path) -> Path:
    bodies = tmp_path / "bodies"
    bodies.mkdir()
    (bodies / "c1.json").write_bytes(b"[]")
    child = {"method": "POST", "path_and_query": "/mock/v1/r?range_start=a", "headers": [["Idempotency-Key", "k1"]],
             "content_type": "application/json", "receiver_mutation_key": "k1", "body_file": "c1.json",
             "scope_from": "2026-03-01", "scope_to": "2026-03-02"}
    (tmp_path / "bundle.json").write_text(json.dumps({"children": [child]}))
    return tmp_path


def test_retry_mode_resends_after_a_lost_response_without_a_key(tmp_path: Path) -> None:
    with _server([[None], [OK]]) as server:
        units, ok = deliver(_bundle(tmp_path), f"http://127.0.0.1:{server.port}", "retry")
    assert ok and units == [{"scope_from": "2026-03-01", "scope_to": "2026-03-02", "status": "completed"}]
    assert len(server.requests) == 2  # the resend the judge must catch
    assert all(b"idempotency-key" not in request.lower() for request in server.requests)


def test_keyed_mode_reuses_its_own_key_within_the_process(tmp_path: Path) -> None:
    with _server([[None], [OK]]) as server:
        _, ok = deliver(_bundle(tmp_path), f"http://127.0.0.1:{server.port}", "idempotency-key")
    keys = {line.lower() for request in server.requests for line in request.split(b"\r\n")
            if line.lower().startswith(b"idempotency-key:")}
    assert ok and len(server.requests) == 2 and len(keys) == 1
    assert keys != {b"idempotency-key: k1"}  # the baseline's own key, not the bundle's fence


def test_gives_up_after_its_attempts(tmp_path: Path) -> None:
    with _server([[None]] * 4) as server:
        units, ok = deliver(_bundle(tmp_path), f"http://127.0.0.1:{server.port}", "retry")
    assert not ok and units[0]["status"] == "failed" and len(server.requests) == 4
