"""The request log against the wire: raw sockets count what the client really got, and each
record's status_sent / response_head_sent / response_body_bytes_sent must say exactly that."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fp_harness import RunningProxy, entry_for, fresh, new_test_id, proxy, start_proxy, start_upstream, stop_proxy

__all__ = ["fresh", "proxy"]

pytestmark = pytest.mark.timeout(60)


def _raw_exchange(base_url: str, request: bytes) -> bytes:
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            received += data
    return received


def _post(path: str, body: bytes = b"{}") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _split(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _by_path(path: str) -> Any:
    return lambda e: e["path"] == path


@pytest.fixture(scope="module")
def dead_upstream_proxy() -> Iterator[RunningProxy]:
    upstream = start_upstream()
    upstream.server.shutdown()
    upstream.server.server_close()  # the port is closed now: every connect is refused
    running = start_proxy(upstream)
    try:
        yield running
    finally:
        stop_proxy(running)


def test_unreachable_upstream_gets_the_projects_problem_json_and_an_exact_record(
    dead_upstream_proxy: RunningProxy,
) -> None:
    tid = new_test_id()
    raw = _raw_exchange(dead_upstream_proxy.proxy_url, _post(f"/down/{tid}"))
    status, headers, body = _split(raw)
    assert status == 502
    assert headers["content-type"] == "application/problem+json"
    assert b"mitmproxy" not in raw.lower() and "server" not in headers
    problem = json.loads(body)
    assert problem["type"] == "urn:fault-proxy:problem:upstream-error" and problem["status"] == 502
    for internal in (b"refused", b"errno", b"connect", b"127.0.0.1"):
        assert internal not in body.lower()  # no internal error text reaches the client
    entry = entry_for(dead_upstream_proxy, _by_path(f"/down/{tid}"))
    assert entry["status_sent"] == 502 and entry["response_head_sent"] is True
    assert entry["response_body_bytes_sent"] == len(body) == int(headers["content-length"])
    assert entry["response_source"] == "proxy" and entry["forwarded"] == "no"
    assert entry["upstream_status"] is None


def test_unparseable_request_head_gets_problem_json_without_echo(dead_upstream_proxy: RunningProxy) -> None:
    raw = _raw_exchange(dead_upstream_proxy.proxy_url, b"GARBAGE \x00SENTINEL-9q\r\n\r\n")
    status, headers, _ = _split(raw)
    assert status == 400 and headers["content-type"] == "application/problem+json"
    assert b"SENTINEL-9q" not in raw and b"mitmproxy" not in raw.lower()


def test_passthrough_record_counts_the_body_bytes_on_the_wire(fresh: RunningProxy) -> None:
    tid = new_test_id()
    raw = _raw_exchange(fresh.proxy_url, _post(f"/pass/{tid}?size=777"))
    status, _, body = _split(raw)
    assert status == 200 and len(body) == 777
    entry = entry_for(fresh, _by_path(f"/pass/{tid}"))
    assert entry["status_sent"] == 200 and entry["response_head_sent"] is True
    assert entry["response_body_bytes_sent"] == 777 and entry["response_source"] == "upstream"
    assert entry["phase"] == "delivered"


def test_truncate_record_counts_exactly_the_bytes_sent(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "truncate", "body_bytes": 100}})
    tid = new_test_id()
    raw = _raw_exchange(fresh.proxy_url, _post(f"/trunc/{tid}?size=1000"))
    status, headers, body = _split(raw)
    assert status == 200 and headers["content-length"] == "1000" and len(body) == 100
    entry = entry_for(fresh, _by_path(f"/trunc/{tid}"))
    assert entry["status_sent"] == 200 and entry["response_body_bytes_sent"] == 100


def test_close_at_response_records_no_answer(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "close", "phase": "response"}})
    tid = new_test_id()
    assert _raw_exchange(fresh.proxy_url, _post(f"/cut/{tid}")) == b""
    entry = entry_for(fresh, _by_path(f"/cut/{tid}"))
    assert entry["upstream_status"] == 200  # the receiver answered
    assert entry["status_sent"] is None and entry["response_head_sent"] is False
    assert entry["response_body_bytes_sent"] == 0 and entry["response_source"] is None
    assert entry["phase"] == "response"


def test_status_fault_record_matches_the_synthetic_answer(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "status", "status": 503, "headers": {"Retry-After": "2"}}})
    tid = new_test_id()
    status, headers, body = _split(_raw_exchange(fresh.proxy_url, _post(f"/synth/{tid}")))
    assert status == 503 and headers["retry-after"] == "2"
    entry = entry_for(fresh, _by_path(f"/synth/{tid}"))
    assert entry["status_sent"] == 503 and entry["response_body_bytes_sent"] == len(body) > 0
    assert entry["response_source"] == "fault" and entry["synthetic"] is True
