"""DNS rebinding against both control surfaces, on real processes: only allowlisted Host values pass.

A page under a foreign name that resolves to 127.0.0.1 reaches the API with its own name in
``Host``. Every route, reads included, must answer such a request with 403 before doing anything,
and the log, the rules and the proxies must be as they were. The allowlist is the loopback literals
and the name the API was started on, each with the listener's own port.
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

_STDERR = Path(tempfile.mkdtemp(prefix="fp-rebinding-")) / "stderr.log"


@pytest.fixture(scope="module")
def proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    # Started on 127.0.0.2 (loopback too, on Linux): that name is allowed besides the literals.
    running = start_proxy(upstream, stderr_path=_STDERR, control="127.0.0.2:0")
    try:
        yield running
    finally:
        stop_proxy(running)
        upstream.server.shutdown()
        upstream.server.server_close()
        assert "Traceback" not in _STDERR.read_text(errors="replace")


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def foreign_hosts(port: int) -> list[str]:
    return [
        f"127.0.0.1.rebind.evil.example:{port}", "127.0.0.1.rebind.evil.example", f"evil.example:{port}",
        f"127.0.0.1:{port + 1}", "127.0.0.1", "localhost", f"127.1:{port}", f"127.0.0.3:{port}",
        f"2130706433:{port}", f"0x7f000001:{port}", f"localhost.:{port}", f"[::ffff:127.0.0.1]:{port}",
        f"LOCALHOST.evil.example:{port}", f"127.0.0.1:{port}.evil.example", f"127.0.0.1:{port}@evil.example",
    ]


ROUTES = [("GET", "/health"), ("GET", "/rules"), ("GET", "/rules/keep"), ("GET", "/log"), ("GET", "/log?since=0"),
          ("GET", "/held"), ("GET", "/openapi.json"), ("GET", "/no-such-route"), ("POST", "/reset"),
          ("POST", "/rules"), ("DELETE", "/rules"), ("DELETE", "/log"), ("POST", "/held/h1/release")]


def test_foreign_host_values_are_refused_on_every_route_and_change_nothing(proxy: RunningProxy) -> None:
    proxy.control.reset()
    proxy.control.add_rule({"id": "keep", "fault": {"action": "status", "status": 418}, "match": {"path": "/t"}})
    httpx.get(f"{proxy.proxy_url}/t", timeout=5)
    rules, log = proxy.control.rules(), proxy.control.log()
    port = _port(proxy.control_url)
    with httpx.Client(base_url=proxy.control_url, timeout=5) as client:
        for host in foreign_hosts(port):
            for method, path in ROUTES:
                body = b"{}" if method == "POST" else None
                headers = {**ADMIN_HEADERS, "Host": host, "Content-Type": "application/json"}
                response = client.request(method, path, content=body, headers=headers)
                assert response.status_code == 403, (host, method, path, response.text)
                assert response.headers["content-type"].startswith("application/problem+json")
                assert response.json()["type"] == "urn:fault-proxy:problem:forbidden"
                assert host not in response.text  # the refusal does not echo the name
    assert proxy.control.rules() == rules and proxy.control.log() == log


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LocalHost", "[::1]", "127.0.0.2"])
def test_loopback_literals_and_the_started_name_with_the_own_port_pass(proxy: RunningProxy, name: str) -> None:
    port = _port(proxy.control_url)
    response = httpx.get(f"{proxy.control_url}/health", headers={"Host": f"{name}:{port}"}, timeout=5)
    assert response.status_code == 200, response.text
    own_origin = f"http://{name}:{port}"
    reset = httpx.post(f"{proxy.control_url}/reset", json={},
                       headers={**ADMIN_HEADERS, "Host": f"{name}:{port}", "Origin": own_origin}, timeout=5)
    assert reset.status_code == 200, reset.text


def _raw(address: str, request: bytes) -> bytes:
    host, port = address.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(65536)


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET /log HTTP/1.1\r\nHost: 127.0.0.1:%(port)d\r\nHost: evil.example\r\n\r\n", b"400"),  # h11's refusal
        (b"GET /log HTTP/1.1\r\nHost: 127.0.0.1:%(port)d\r\nHost: 127.0.0.1:%(port)d\r\n\r\n", b"400"),
        (b"GET /log HTTP/1.1\r\n\r\n", b"400"),  # HTTP/1.1 needs a Host
        (b"GET /log HTTP/1.0\r\n\r\n", b"403"),  # HTTP/1.0 may omit it; then it names nothing allowed
        (b"GET /log HTTP/1.0\r\nHost: evil.example\r\n\r\n", b"403"),
    ],
)
def test_duplicate_and_missing_host_headers_are_refused_with_a_problem_document(
    proxy: RunningProxy, request_head: bytes, status: bytes
) -> None:
    answer = _raw(proxy.control_url, request_head % {b"port": _port(proxy.control_url)})
    assert answer.split(b" ", 2)[1] == status, answer[:200]
    assert b"application/problem+json" in answer.split(b"\r\n\r\n", 1)[0].lower()


def test_the_proxied_port_is_not_a_control_surface(proxy: RunningProxy) -> None:
    # The data plane forwards whatever Host the client names: that is the receiver's business.
    response = httpx.get(f"{proxy.proxy_url}/any", headers={"Host": "evil.example"}, timeout=5)
    assert response.status_code == 200
