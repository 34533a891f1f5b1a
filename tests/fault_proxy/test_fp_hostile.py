"""Hostile input against the HTTP-phase control API and the proxy port, on a real proxy process.

Fails on any 5xx, on a non-problem+json error, on any traceback in the process's stderr, and on a
server that stops answering. Also: cross-site requests are refused (admin header, JSON content
type, foreign Origin) and a catastrophic-backtracking path_regex no longer stalls the event loop.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from fp_harness import RunningProxy, start_proxy, start_upstream, stop_proxy
from hypothesis import HealthCheck, settings

from fault_proxy.control_api import create_app
from fault_proxy.control_client import ADMIN_HEADERS
from fault_proxy.state import ProxyState

pytestmark = pytest.mark.timeout(180)

# The schema comes from the app itself (no server needed at import); cases go to the real process.
schema = schemathesis.openapi.from_dict(create_app(ProxyState(upstream="http://127.0.0.1:1", seed=0)).openapi())
_STDERR = Path(tempfile.mkdtemp(prefix="fp-hostile-")) / "stderr.log"


@pytest.fixture(scope="module")
def hostile() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    running = start_proxy(upstream, stderr_path=_STDERR)
    try:
        yield running
    finally:
        stop_proxy(running)
        upstream.server.shutdown()
        upstream.server.server_close()
        log = _STDERR.read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]


def _still_answers(p: RunningProxy) -> None:
    health = httpx.get(f"{p.control_url}/health", timeout=3)
    assert health.status_code == 200


def _assert_problem(response: httpx.Response, status: int | None = None) -> None:
    assert response.status_code < 500, response.text[:500]
    if status is not None:
        assert response.status_code == status, response.text[:500]
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json"), response.text[:300]
        assert response.json()["status"] == response.status_code


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
def test_generated_requests_never_cause_server_errors(case: schemathesis.Case, hostile: RunningProxy) -> None:
    response = case.call(base_url=hostile.control_url, headers=ADMIN_HEADERS, timeout=5)
    assert response.status_code < 500, response.text[:500]
    if response.status_code >= 400:
        assert response.headers["content-type"][0].startswith("application/problem+json"), response.text[:300]


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


HOSTILE_BODIES: list[tuple[str, str, bytes, int]] = [
    ("POST", "/rules", _deep(100_000), 400),
    ("POST", "/rules", b'{"fault": {"action": "status", "status": 503, "headers": ' + _deep(3_000) + b"}}", 400),
    ("POST", "/rules", b'{"fault": {"action": "status", "status": ' + b"9" * 5000 + b"}}", 400),
    ("POST", "/rules", b'{"fault": {"action": "status", "status": 503, "body": "\\ud800"}}', 422),
    ("POST", "/rules", b'{"id": "a/b", "fault": {"action": "close", "phase": "request"}}', 422),
    ("POST", "/rules", b'{"match": {"path": "' + b"*" * 2000 + b'"}, "fault": {"action": "close", "phase": "request"}}',
     422),
    ("POST", "/rules", b'{"match": {"path_regex": "(a)\\\\1"}, "fault": {"action": "close", "phase": "request"}}', 422),
    ("POST", "/rules", b'{"match": {"path_regex": "\\ud800"}, "fault": {"action": "close", "phase": "request"}}', 422),
    ("POST", "/rules", b"{not json", 400),
    ("POST", "/rules", b"\xff\xfe", 400),
    ("POST", "/reset", b'{"seed": ' + b"9" * 30 + b"}", 422),
    ("POST", "/reset", b'{"seed": NaN}', 400),  # not JSON (RFC 8259 has no NaN)
]


@pytest.mark.parametrize(("method", "path", "body", "status"), HOSTILE_BODIES)
def test_hostile_bodies_get_a_stable_4xx(hostile: RunningProxy, method: str, path: str, body: bytes,
                                         status: int) -> None:
    headers = {**ADMIN_HEADERS, "Content-Type": "application/json"}
    response = httpx.request(method, f"{hostile.control_url}{path}", content=body, headers=headers, timeout=10)
    _assert_problem(response, status)
    _still_answers(hostile)
    httpx.post(f"{hostile.control_url}/reset", headers=ADMIN_HEADERS, timeout=5)


@pytest.mark.parametrize(
    "target",
    ["/log?since=9223372036854775808", "/log?since=" + "9" * 5000, "/log?since=-1", "/log?since=x",
     "/rules/%ED%A0%80", "/rules/" + "x" * 5000, "/held/%00/release"],
)
def test_hostile_queries_and_paths_get_a_stable_4xx_or_an_answer(hostile: RunningProxy, target: str) -> None:
    method = "POST" if target.endswith("/release") else "GET"
    _assert_problem(httpx.request(method, f"{hostile.control_url}{target}", headers=ADMIN_HEADERS, timeout=10))
    _still_answers(hostile)


def test_a_50_mb_body_is_refused_before_it_is_read(hostile: RunningProxy) -> None:
    host, port = hostile.control_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /rules HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Restproof-Admin: 1\r\n" % int(port)
                     + b"Content-Type: application/json\r\nContent-Length: 52428800\r\n\r\n{\"id\": \"")
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"application/problem+json" in answer


def test_a_chunked_body_over_the_limit_is_refused(hostile: RunningProxy) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"id": "'
        for _ in range(40):
            yield b"x" * 65536

    response = httpx.post(f"{hostile.control_url}/rules", content=chunks(),
                          headers={**ADMIN_HEADERS, "Content-Type": "application/json"}, timeout=10)
    _assert_problem(response, 413)


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({}, b"{}", 403),  # no admin header: a form post or a simple fetch from a web page
        ({"X-Restproof-Admin": "0", "Content-Type": "application/json"}, b"{}", 403),
        ({**ADMIN_HEADERS, "Content-Type": "text/plain"}, b"{}", 415),
        ({**ADMIN_HEADERS, "Content-Type": "application/x-www-form-urlencoded"}, b"seed=1", 415),
        ({**ADMIN_HEADERS, "Content-Type": "application/json", "Origin": "http://evil.example"}, b"{}", 403),
        ({**ADMIN_HEADERS, "Content-Type": "application/json", "Origin": "null"}, b"{}", 403),
        ({**ADMIN_HEADERS, "Content-Type": "application/json", "Host": "evil.example"}, b"{}", 403),
    ],
)
def test_cross_site_reset_is_refused_and_the_log_survives(
    hostile: RunningProxy, headers: dict[str, str], body: bytes, status: int
) -> None:
    httpx.get(f"{hostile.proxy_url}/keep", timeout=5)
    before = hostile.control.log()
    assert before  # there is a log to wipe
    response = httpx.post(f"{hostile.control_url}/reset", content=body, headers=headers, timeout=5)
    _assert_problem(response, status)
    assert hostile.control.log() == before  # nothing was reset


def test_every_state_changing_route_needs_the_admin_header(hostile: RunningProxy) -> None:
    hostile.control.add_rule({"id": "keep", "fault": {"action": "close", "phase": "request"}})
    for method, path in [("POST", "/rules"), ("DELETE", "/rules"), ("DELETE", "/rules/keep"), ("POST", "/reset"),
                         ("DELETE", "/log"), ("POST", "/held/h1/release"), ("POST", "/held/h1/cut")]:
        response = httpx.request(method, f"{hostile.control_url}{path}", timeout=5)
        _assert_problem(response, 403)
    assert [r["id"] for r in hostile.control.rules()] == ["keep"]
    hostile.control.reset()


def test_own_origin_and_reads_are_allowed(hostile: RunningProxy) -> None:
    own = hostile.control_url
    response = httpx.post(f"{own}/reset", json={}, headers={**ADMIN_HEADERS, "Origin": own}, timeout=5)
    assert response.status_code == 200
    assert httpx.get(f"{own}/rules", timeout=5).status_code == 200  # reads need no header


def test_catastrophic_regex_does_not_stall_the_proxy(hostile: RunningProxy) -> None:
    # Python's re needs ~2**n steps for /(a+)+b against "/" + "a" * n; at n = 40 it would never end.
    hostile.control.add_rule({"match": {"path_regex": "/(a+)+b"}, "fault": {"action": "status", "status": 418}})
    started = time.monotonic()
    answer = httpx.get(f"{hostile.proxy_url}/{'a' * 40}", timeout=10)
    assert answer.status_code == 200  # not matched (no "b"), served by the upstream
    assert httpx.get(f"{hostile.proxy_url}/{'a' * 40}b", timeout=10).status_code == 418
    assert time.monotonic() - started < 5
    _still_answers(hostile)
    hostile.control.reset()


def test_too_many_rules_are_refused(hostile: RunningProxy) -> None:
    from fault_proxy.rules import MAX_RULES

    with httpx.Client(base_url=hostile.control_url, headers=ADMIN_HEADERS, timeout=10) as client:
        for i in range(MAX_RULES):
            assert client.post("/rules", json={"match": {"path": f"/n/{i}"},
                                               "fault": {"action": "close", "phase": "request"}}).status_code == 201
        over = client.post("/rules", json={"fault": {"action": "close", "phase": "request"}})
    _assert_problem(over, 409)
    assert over.json()["type"] == "urn:fault-proxy:problem:rule-limit"
    hostile.control.reset()

