"""Leniencies closed on both control surfaces, on real processes: strict JSON, strict numbers, one
strict admin-header rule, and a status fault that HTTP can carry.

Each refusal is a 4xx that changes nothing: the rules, the seed and the proxies stay as they were.
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fp_harness import RunningProxy, start_proxy, start_upstream, stop_proxy

from fault_proxy.control_client import ADMIN_HEADERS

pytestmark = pytest.mark.timeout(180)

_STDERR = Path(tempfile.mkdtemp(prefix="fp-strict-")) / "stderr.log"
JSON = {**ADMIN_HEADERS, "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    running = start_proxy(upstream, seed=7, stderr_path=_STDERR)
    try:
        yield running
    finally:
        stop_proxy(running)
        upstream.server.shutdown()
        upstream.server.server_close()
        assert "Traceback" not in _STDERR.read_text(errors="replace")


@pytest.fixture
def fresh(proxy: RunningProxy) -> RunningProxy:
    proxy.control.reset(seed=7)
    proxy.control.add_rule({"id": "keep", "match": {"path": "/keep"}, "fault": {"action": "status", "status": 418}})
    return proxy


def _unchanged(proxy: RunningProxy) -> None:
    assert [rule["id"] for rule in proxy.control.rules()] == ["keep"]
    assert proxy.control.health()["seed"] == 7


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/rules", b'{"id": "a", "id": "b", "fault": {"action": "close", "phase": "request"}}', 400),
        ("/rules", b'{"fault": {"action": "close", "phase": "request", "phase": "response"}}', 400),
        ("/rules", b'{"match": {"path": "/a", "path": "/b"}, "fault": {"action": "close", "phase": "request"}}',
         400),
        ("/rules", b'{"fault": {"action": "delay", "phase": "request", "seconds": 1e400}}', 400),
        ("/rules", b'{"fault": {"action": "delay", "phase": "request", "seconds": -1e999}}', 400),
        ("/rules", b'{"fault": {"action": "delay", "phase": "request", "seconds": Infinity}}', 400),
        ("/rules", b'{"fault": {"action": "delay", "phase": "request", "seconds": "1"}}', 422),
        ("/rules", b'{"nth": "3", "fault": {"action": "close", "phase": "request"}}', 422),
        ("/rules", b'{"nth": true, "fault": {"action": "close", "phase": "request"}}', 422),
        ("/rules", b'{"fault": {"action": "status", "status": "503"}}', 422),
        ("/rules", b'{"fault": {"action": "status", "status": 204, "body": "x"}}', 422),
        ("/rules", b'{"fault": {"action": "status", "status": 304, "body": "x"}}', 422),
        ("/rules", b'{"fault": {"action": "status", "status": 200, "headers": {"Content-Length": "9"}}}', 422),
        ("/reset", b'{"seed": "5"}', 422),
        ("/reset", b'{"seed": true}', 422),
        ("/reset", b'{"seed": 5.0}', 422),
        ("/reset", b'{"seed": 1e400}', 400),
        ("/reset", b'{"seed": 5, "seed": 6}', 400),
    ],
)
def test_lenient_json_is_refused_and_changes_nothing(fresh: RunningProxy, path: str, body: bytes,
                                                     status: int) -> None:
    response = httpx.post(f"{fresh.control_url}{path}", content=body, headers=JSON, timeout=5)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    _unchanged(fresh)


def _raw_delete_log(proxy: RunningProxy, admin_lines: bytes) -> bytes:
    host, port = proxy.control_url.removeprefix("http://").rsplit(":", 1)
    request = (b"DELETE /log HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % int(port) + admin_lines
               + b"Content-Length: 0\r\nConnection: close\r\n\r\n")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(65536)


@pytest.mark.parametrize(
    ("admin_lines", "status"),
    [
        (b"X-Restproof-Admin: 1\r\n", b"204"),
        (b"X-Restproof-Admin:1\r\n", b"204"),
        (b"X-Restproof-Admin:  1 \t\r\n", b"204"),  # SP/HTAB around a value are not part of it
        (b"x-restproof-admin: 1\r\n", b"204"),  # field names are case-insensitive
        (b"", b"403"),
        (b"X-Restproof-Admin: 1\r\nX-Restproof-Admin: 1\r\n", b"403"),  # exactly once
        (b"X-Restproof-Admin: 1\r\nX-Restproof-Admin: 0\r\n", b"403"),
        (b"X-Restproof-Admin: 1, 1\r\n", b"403"),
        (b"X-Restproof-Admin: \xa01\r\n", b"403"),  # a no-break space is not HTTP whitespace
        (b"X-Restproof-Admin: 1\x85\r\n", b"403"),
        (b"X-Restproof-Admin: 01\r\n", b"403"),
        (b"X-Restproof-Admin: \"1\"\r\n", b"403"),
        (b"X-Restproof-Admin: true\r\n", b"403"),
    ],
)
def test_the_admin_header_is_one_strict_rule(fresh: RunningProxy, admin_lines: bytes, status: bytes) -> None:
    httpx.get(f"{fresh.proxy_url}/before", timeout=5)
    answer = _raw_delete_log(fresh, admin_lines)
    assert answer.split(b" ", 2)[1] == status, answer[:200]
    assert (fresh.control.log() == []) is (status == b"204")


@pytest.mark.parametrize("status", [204, 304])
def test_a_bodyless_status_fault_sends_no_body_and_the_connection_stays_usable(fresh: RunningProxy,
                                                                             status: int) -> None:
    fresh.control.add_rule({"match": {"path": "/empty"}, "fault": {"action": "status", "status": status,
                                                                    "headers": {"X-Why": "fault"}}})
    host, port = fresh.proxy_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /empty HTTP/1.1\r\nHost: x\r\n\r\nGET /keep HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while answer.count(b"HTTP/1.1 ") < 2 or not answer.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
    first, second = answer.split(b"HTTP/1.1 ")[1:3]
    head, _, rest = first.partition(b"\r\n\r\n")
    assert head.startswith(b"%d " % status) and b"x-why: fault" in head.lower()
    assert b"content-length" not in head.lower() and b"content-type" not in head.lower()
    assert rest == b""  # not one body byte before the next answer
    assert second.startswith(b"418 ")  # the next answer on the same connection is read as such


def test_the_toxiproxy_api_refuses_duplicate_members_and_non_finite_numbers() -> None:
    from fault_proxy.tcp.server import BuiltinServerThread

    server = BuiltinServerThread()
    url = server.start()
    try:
        with httpx.Client(base_url=url, timeout=5, headers={"Content-Type": "application/json"}) as client:
            for body in (b'{"name": "a", "name": "b", "upstream": "127.0.0.1:9"}',
                         b'[{"name": "a", "upstream": "127.0.0.1:9", "upstream": "127.0.0.1:10"}]'):
                path = "/populate" if body.startswith(b"[") else "/proxies"
                response = client.post(path, content=body)
                assert response.status_code == 400 and "duplicate" in response.json()["error"]
            assert client.post("/proxies", json={"name": "p", "upstream": "127.0.0.1:9"}).status_code == 201
            for toxic in (b'{"type": "latency", "toxicity": 1e400}', b'{"type": "latency", "toxicity": -Infinity}',
                          b'{"type": "latency", "attributes": {"latency": 1, "latency": 2}}'):
                assert client.post("/proxies/p/toxics", content=toxic).status_code == 400
            assert client.get("/proxies").json()["p"]["toxics"] == []
    finally:
        server.stop()
