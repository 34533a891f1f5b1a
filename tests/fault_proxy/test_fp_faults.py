"""Each HTTP-phase fault: client-side error class and trace, upstream truth, and the proxy's log."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fp_harness import (
    RunningProxy,
    entry_for,
    fresh,
    new_test_id,
    proxy,
    traced_request,
)

__all__ = ["fresh", "proxy"]  # fixtures imported for pytest

pytestmark = pytest.mark.timeout(60)


def _path(test_id: str) -> str:
    return f"/batches/{test_id}"


def _by_path(path: str) -> Any:
    return lambda e: e["path"] == path


def _hostport(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def test_passthrough_is_logged_with_every_phase(fresh: RunningProxy) -> None:
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid) + "?size=100", tid, content=b"x" * 42)
    assert out.error is None and out.response is not None
    assert out.response.status_code == 200 and out.body_bytes == 100
    seen = fresh.upstream.saw(tid)
    assert len(seen) == 1 and seen[0].body_bytes == 42
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["phase"] == "delivered"
    assert entry["forwarded"] == "yes"
    assert entry["upstream_status"] == 200
    assert entry["request_body_bytes"] == 42 and entry["upstream_body_bytes"] == 100
    assert entry["response_body_bytes_sent"] == 100 and entry["faults"] == []
    for stamp in ("connect", "request_headers", "request", "forwarded", "response_headers", "response", "delivered"):
        assert stamp in entry["timestamps"]


def test_close_at_connect_reads_nothing(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fire": "once", "fault": {"action": "close", "phase": "connect"}})
    # A raw socket that sends nothing: the proxy must close on its own, before any byte is read.
    with socket.create_connection(_hostport(fresh.proxy_url), timeout=5) as sock:
        assert sock.recv(1024) == b""
    entries = fresh.control.wait_for_log(lambda es: len(es) == 1)
    assert entries[0]["phase"] == "connect" and entries[0]["method"] is None
    assert entries[0]["faults"][0]["phase"] == "connect"
    # The once-rule is spent: the next connection is served normally.
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "GET", _path(tid), tid)
    assert out.response is not None and out.response.status_code == 200


def test_close_at_connect_seen_by_httpx(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fire": "once", "fault": {"action": "close", "phase": "connect"}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}")
    # TCP connect succeeded, so this is never ConnectError; FIN or RST decides which of the two.
    assert isinstance(out.error, httpx.RemoteProtocolError | httpx.ReadError), out.error
    assert out.saw("connection.connect_tcp.complete")
    assert not out.response_bytes_seen
    assert fresh.upstream.saw(tid) == []


def test_close_after_request_headers_before_body(fresh: RunningProxy) -> None:
    fresh.control.add_rule(
        {"match": {"method": "POST", "path": "/batches/*"}, "fault": {"action": "close", "phase": "request_headers"}}
    )
    tid = new_test_id()

    def slow_body() -> Iterator[bytes]:
        time.sleep(0.5)  # the proxy has decided on the headers alone by now
        yield b"a" * 1000
        time.sleep(0.2)
        yield b"b" * 1000

    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=slow_body())
    assert isinstance(out.error, httpx.RemoteProtocolError | httpx.WriteError | httpx.ReadError), out.error
    assert out.saw("http11.send_request_headers.complete")
    assert not out.response_bytes_seen
    assert fresh.upstream.saw(tid) == []
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["phase"] == "request_headers"
    assert entry["request_body_bytes"] is None and entry["forwarded"] == "no"
    assert [f["action"] for f in entry["faults"]] == ["close"]


def test_close_after_full_request_not_forwarded(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"match": {"path_regex": r"/batches/.+"}, "fault": {"action": "close", "phase": "request"}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"z" * 5000)
    assert isinstance(out.error, httpx.RemoteProtocolError), out.error
    assert out.saw("http11.send_request_body.complete")
    assert out.saw("http11.receive_response_headers.failed")
    assert fresh.upstream.saw(tid) == []
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["phase"] == "request" and entry["request_body_bytes"] == 5000
    assert entry["forwarded"] == "no" and entry["upstream_status"] is None


def test_close_after_receiver_answered(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"match": {"method": "POST"}, "fault": {"action": "close", "phase": "response"}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}")
    assert isinstance(out.error, httpx.RemoteProtocolError), out.error
    assert out.saw("http11.receive_response_headers.failed") and out.body_bytes == 0
    assert len(fresh.upstream.saw(tid)) == 1  # the receiver committed
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["phase"] == "response" and entry["upstream_status"] == 200
    assert entry["forwarded"] == "yes" and entry["response_body_bytes_sent"] == 0
    assert entry["response_head_sent"] is False


@pytest.mark.parametrize("keep", [0, 37])
def test_truncate_delivers_head_and_n_body_bytes(fresh: RunningProxy, keep: int) -> None:
    fresh.control.add_rule({"fault": {"action": "truncate", "body_bytes": keep}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "GET", _path(tid) + "?size=1000", tid)
    assert isinstance(out.error, httpx.RemoteProtocolError), out.error
    assert out.response is not None and out.response.status_code == 200
    assert out.response.headers["content-length"] == "1000"
    assert out.body_bytes == keep
    assert out.saw("http11.receive_response_body.failed")
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["phase"] == "delivered" and entry["response_body_bytes_sent"] == keep
    assert entry["faults"][0]["detail"] == {"body_bytes": keep, "declared_bytes": 1000}


def test_delay_before_forwarding_times_out_client_and_never_reaches_receiver(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "delay", "phase": "request", "seconds": 1.0}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}", timeout=0.3)
    assert isinstance(out.error, httpx.ReadTimeout), out.error
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert fresh.upstream.saw(tid) == []  # the client left during the delay: dropped, never forwarded
    assert entry["forwarded"] == "no" and entry["phase"] == "request"
    assert "client closed" in (entry["error"] or "")


def test_delay_before_answering_times_out_client_after_receiver_committed(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "delay", "phase": "response", "seconds": 1.0}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}", timeout=0.3)
    assert isinstance(out.error, httpx.ReadTimeout), out.error
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["upstream_status"] == 200 and entry["response_body_bytes_sent"] == 0
    assert entry["phase"] == "response"


def test_delay_shorter_than_timeout_still_delivers(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "delay", "phase": "request", "seconds": 0.3}})
    tid = new_test_id()
    started = time.monotonic()
    out = traced_request(fresh.proxy_url, "GET", _path(tid), tid)
    assert out.response is not None and out.response.status_code == 200
    assert time.monotonic() - started >= 0.3
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["timestamps"]["forwarded"] - entry["timestamps"]["request"] >= 0.3


@pytest.mark.parametrize(
    ("status", "headers"),
    [(429, {"Retry-After": "7"}), (503, {"Retry-After": "1"}), (500, {}), (409, {}), (413, {})],
)
def test_synthetic_status_without_contacting_receiver(
    fresh: RunningProxy, status: int, headers: dict[str, str]
) -> None:
    fresh.control.add_rule({"fault": {"action": "status", "status": status, "headers": headers}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}")
    assert out.error is None and out.response is not None
    assert out.response.status_code == status
    for name, value in headers.items():
        assert out.response.headers[name] == value
    assert out.response.headers["content-type"] == "application/problem+json"
    assert fresh.upstream.saw(tid) == []
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert entry["synthetic"] is True and entry["forwarded"] == "no"
    assert entry["status_sent"] == status and entry["upstream_status"] is None


def test_control_api_is_not_reachable_through_the_proxy_port(fresh: RunningProxy) -> None:
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "GET", "/health", tid)
    assert out.response is not None
    # The receiver's answer (16 octet-stream bytes), not the control API's JSON health document.
    assert out.response.headers["content-type"] == "application/octet-stream" and out.body_bytes == 16
    assert len(fresh.upstream.saw(tid)) == 1


def test_rules_combine_in_order_across_phases(fresh: RunningProxy) -> None:
    fresh.control.add_rule({"fault": {"action": "delay", "phase": "request", "seconds": 0.2}})
    fresh.control.add_rule({"fault": {"action": "close", "phase": "response"}})
    tid = new_test_id()
    out = traced_request(fresh.proxy_url, "POST", _path(tid), tid, content=b"{}")
    assert isinstance(out.error, httpx.RemoteProtocolError)
    assert len(fresh.upstream.saw(tid)) == 1
    entry = entry_for(fresh, _by_path(_path(tid)))
    assert [(f["action"], f["phase"]) for f in entry["faults"]] == [("delay", "request"), ("close", "response")]


def test_upstream_down_is_logged_as_not_forwarded() -> None:
    from fp_harness import start_proxy, start_upstream, stop_proxy

    upstream = start_upstream()
    upstream.server.shutdown()
    upstream.server.server_close()  # nothing listens on the upstream port any more
    running = start_proxy(upstream)
    try:
        tid = new_test_id()
        out = traced_request(running.proxy_url, "POST", _path(tid), tid, content=b"{}")
        assert out.response is not None and out.response.status_code == 502  # mitmproxy's own answer
        entry = entry_for(running, _by_path(_path(tid)))
        assert entry["forwarded"] == "no" and entry["upstream_status"] is None
        assert entry["error"]
    finally:
        stop_proxy(running)
