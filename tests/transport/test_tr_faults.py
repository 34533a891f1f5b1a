"""Phase classification against real faults: nothing listening, and the fault proxy cutting a real
mock-receiver exchange at each phase. The receiver's ledger is the judge of what arrived."""

# ruff: noqa: F811  # fixtures imported from tr_fixtures are redefined as test parameters

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from tr_capture import CaptureServer
from tr_fixtures import fresh_proxy, proxy, receiver  # noqa: F401  # pytest fixtures
from tr_support import BATCHES, FaultProxy, ServerProcess, batch_request, free_port, rows_json, timeouts

from sink.contracts.transport import FailureKind, PreparedRequest, SendCertainty, TransportPhase
from sink.transport import HttpxRestTransport, NoAuth

pytestmark = pytest.mark.timeout(60)


def _ledger(receiver: ServerProcess, key: str) -> list[dict[str, object]]:
    response = httpx.get(f"{receiver.admin_url}/_admin/requests", params={"idempotency_key": key}, timeout=10)
    items: list[dict[str, object]] = response.json()["items"]
    return items


def _rule(proxy: FaultProxy, fault: dict[str, object]) -> None:
    proxy.control.add_rule({"match": {"method": "POST", "path": BATCHES}, "fire": "once", "fault": fault})


@pytest.fixture
def via_proxy(fresh_proxy: FaultProxy) -> Iterator[HttpxRestTransport]:
    with HttpxRestTransport(fresh_proxy.url, NoAuth()) as transport:
        yield transport


def test_nothing_listening_is_a_connect_error_before_any_request_byte() -> None:
    with HttpxRestTransport(f"http://127.0.0.1:{free_port()}", NoAuth()) as transport:
        outcome = transport.send(batch_request("k-refused", rows_json("r")), timeouts=timeouts())
    evidence = outcome.evidence
    assert evidence.certainty is SendCertainty.NOT_STARTED
    assert evidence.failure is FailureKind.CONNECT_ERROR
    assert evidence.last_phase_started is TransportPhase.CONNECT
    assert evidence.request_bytes_to_kernel == 0
    assert outcome.response is None


def test_a_complete_exchange_is_response_received_with_receipt_scalars(
    receiver: ServerProcess, via_proxy: HttpxRestTransport
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    body = rows_json("ok")
    outcome = via_proxy.send(batch_request(key, body), timeouts=timeouts())
    assert outcome.evidence.certainty is SendCertainty.RESPONSE_RECEIVED
    assert outcome.evidence.failure is None
    assert outcome.evidence.request_bytes_to_kernel > len(body)
    assert outcome.response is not None and outcome.response.status == 201
    assert str(outcome.response.scalars["/receipt_id"]).startswith("rcpt_")
    assert outcome.response.scalars["/accepted_rows"] == 3
    assert [item["outcome"] for item in _ledger(receiver, key)] == ["applied"]


@pytest.mark.parametrize("phase", ["connect", "request_headers"])
def test_cut_before_the_request_was_read_may_have_reached_the_peer(
    receiver: ServerProcess, fresh_proxy: FaultProxy, via_proxy: HttpxRestTransport, phase: str
) -> None:
    # TCP connect succeeded, so request bytes were handed to the kernel: never NOT_STARTED,
    # although the receiver saw nothing.
    key = f"k-{uuid.uuid4().hex}"
    if phase == "connect":  # a connect-phase rule matches connections, not requests
        fresh_proxy.control.add_rule({"fire": "once", "fault": {"action": "close", "phase": "connect"}})
    else:
        _rule(fresh_proxy, {"action": "close", "phase": phase})
    outcome = via_proxy.send(batch_request(key, rows_json("c", 2000)), timeouts=timeouts())
    evidence = outcome.evidence
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.request_bytes_to_kernel > 0
    assert evidence.failure in (FailureKind.CONNECTION_CLOSED, FailureKind.READ_ERROR, FailureKind.WRITE_ERROR)
    assert "http11.send_request_headers.started" in evidence.trace_steps
    assert _ledger(receiver, key) == []


@pytest.mark.parametrize(("phase", "applied"), [("request", 0), ("response", 1)])
def test_full_request_then_no_response_is_unknown_whether_or_not_the_receiver_committed(
    receiver: ServerProcess, fresh_proxy: FaultProxy, via_proxy: HttpxRestTransport, phase: str, applied: int
) -> None:
    # 'request': the proxy read everything and forwarded nothing; 'response': the receiver
    # committed and answered, the client got nothing. The client's evidence is the same.
    key = f"k-{uuid.uuid4().hex}"
    _rule(fresh_proxy, {"action": "close", "phase": phase})
    request = batch_request(key, rows_json("f"))
    outcome = via_proxy.send(request, timeouts=timeouts())
    evidence = outcome.evidence
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.failure is FailureKind.CONNECTION_CLOSED
    assert evidence.last_phase_started is TransportPhase.RESPONSE_HEADERS
    assert "http11.send_request_body.complete" in evidence.trace_steps
    assert evidence.response_bytes_received == 0 and evidence.response_status is None
    assert request.body is not None and evidence.request_bytes_to_kernel > request.body.length
    assert len([item for item in _ledger(receiver, key) if item["outcome"] == "applied"]) == applied


def test_head_plus_some_body_bytes_keeps_the_status_but_is_not_a_response(
    receiver: ServerProcess, fresh_proxy: FaultProxy, via_proxy: HttpxRestTransport
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    _rule(fresh_proxy, {"action": "truncate", "body_bytes": 7})
    outcome = via_proxy.send(batch_request(key, rows_json("t")), timeouts=timeouts())
    evidence = outcome.evidence
    assert outcome.response is None
    assert evidence.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert evidence.failure is FailureKind.CONNECTION_CLOSED
    assert evidence.last_phase_started is TransportPhase.RESPONSE_BODY
    assert evidence.response_status == 201
    assert evidence.response_bytes_received > 7
    assert [item["outcome"] for item in _ledger(receiver, key)] == ["applied"]


def test_a_synthetic_status_before_forwarding_is_a_response(
    receiver: ServerProcess, fresh_proxy: FaultProxy, via_proxy: HttpxRestTransport
) -> None:
    key = f"k-{uuid.uuid4().hex}"
    _rule(fresh_proxy, {"action": "status", "status": 503, "headers": {"Retry-After": "7"}})
    outcome = via_proxy.send(batch_request(key, rows_json("s")), timeouts=timeouts())
    assert outcome.evidence.certainty is SendCertainty.RESPONSE_RECEIVED
    assert outcome.response is not None
    assert outcome.response.status == 503
    assert outcome.response.headers["retry-after"] == "7"
    assert _ledger(receiver, key) == []


def test_redirect_is_recorded_never_followed(fresh_proxy: FaultProxy, via_proxy: HttpxRestTransport) -> None:
    other = f"http://127.0.0.1:{free_port()}/elsewhere"
    _rule(fresh_proxy, {"action": "status", "status": 307, "headers": {"Location": other}, "body": ""})
    outcome = via_proxy.send(batch_request(f"k-{uuid.uuid4().hex}", rows_json("x")), timeouts=timeouts())
    assert outcome.response is not None
    assert outcome.response.status == 307
    assert outcome.response.headers["location"] == other
    entries = fresh_proxy.control.log()
    assert len(entries) == 1  # one request, to our authority; none followed the Location


def test_a_read_only_get_has_no_body_framing_and_yields_scalars(receiver: ServerProcess) -> None:
    summary = PreparedRequest(method="GET", path_and_query="/mock/v1/resources/measurements/summary",
                              semantic_headers=(), content_type=None, body=None,
                              extract_pointers=("/row_count", "/content_digest"))
    with HttpxRestTransport(receiver.data_url, NoAuth()) as transport:
        outcome = transport.send(summary, timeouts=timeouts())
    assert outcome.response is not None and outcome.response.status == 200
    assert isinstance(outcome.response.scalars["/row_count"], int)
    assert str(outcome.response.scalars["/content_digest"]).startswith("sha256:")
    capture = CaptureServer()
    try:
        with HttpxRestTransport(capture.url, NoAuth()) as transport:
            transport.send(summary, timeouts=timeouts())
            transport.send(PreparedRequest(method="POST", path_and_query="/x", semantic_headers=(),
                                           content_type=None, body=None), timeouts=timeouts())
    finally:
        capture.close()
    get_head, post_head = (captured.head.lower() for captured in capture.requests)
    assert b"content-length" not in get_head and b"transfer-encoding" not in get_head
    assert b"content-length: 0" in post_head
    assert b"accept-encoding: identity" in get_head
