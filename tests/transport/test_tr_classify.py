"""The pure classifier: certainty from the trace and the byte count, kind from the first I/O
failure and the bound that expired. Each row would fail if its rule alone were broken."""

from __future__ import annotations

import pytest

from sink.contracts.transport import FailureKind, PreparedRequest, SendCertainty, TransportPhase
from sink.transport.classify import (
    DNS_STEP,
    classify_failure,
    failure_kind,
    last_phase_started,
    received,
    request_started,
)
from sink.transport.exchange import IoFailure

CONNECTED = ["connection.connect_tcp.started", "connection.connect_tcp.complete"]
HEADERS_STARTED = [*CONNECTED, "http11.send_request_headers.started"]
SENT = [*HEADERS_STARTED, "http11.send_request_headers.complete", "http11.send_request_body.started",
        "http11.send_request_body.complete", "http11.receive_response_headers.started"]


@pytest.mark.parametrize(
    ("failure", "pool", "kind"),
    [
        (IoFailure("dns", "timeout", "dns"), False, FailureKind.DNS_TIMEOUT),
        (IoFailure("dns", "error"), False, FailureKind.DNS_ERROR),
        (IoFailure("dns", "timeout", "total"), False, FailureKind.REQUEST_TOTAL_TIMEOUT),
        (IoFailure("connect", "timeout", "connect"), False, FailureKind.CONNECT_TIMEOUT),
        (IoFailure("connect", "error"), False, FailureKind.CONNECT_ERROR),
        (IoFailure("tls", "timeout", "tls"), False, FailureKind.TLS_TIMEOUT),
        (IoFailure("tls", "error"), False, FailureKind.TLS_ERROR),
        (IoFailure("write", "timeout", "write"), False, FailureKind.WRITE_TIMEOUT),
        (IoFailure("write", "error"), False, FailureKind.WRITE_ERROR),
        (IoFailure("read", "timeout", "read"), False, FailureKind.READ_TIMEOUT),
        (IoFailure("read", "timeout", "idle"), False, FailureKind.IDLE_TIMEOUT),
        (IoFailure("read", "timeout", "total"), False, FailureKind.REQUEST_TOTAL_TIMEOUT),
        (IoFailure("write", "timeout", "total"), False, FailureKind.REQUEST_TOTAL_TIMEOUT),
        (IoFailure("read", "timeout"), False, FailureKind.READ_TIMEOUT),
        (IoFailure("read", "error"), False, FailureKind.READ_ERROR),
        (IoFailure("read", "eof"), False, FailureKind.CONNECTION_CLOSED),
        (IoFailure("body", "unavailable"), False, FailureKind.BODY_UNAVAILABLE),
        (IoFailure("credential", "unavailable"), False, FailureKind.CREDENTIAL_UNAVAILABLE),
        (IoFailure("authority", "error"), False, FailureKind.AUTHORITY_REFUSED),
        (None, True, FailureKind.POOL_TIMEOUT),
        (None, False, FailureKind.PROTOCOL_ERROR),
        (IoFailure("read", "eof"), True, FailureKind.CONNECTION_CLOSED),
    ],
)
def test_failure_kind(failure: IoFailure | None, pool: bool, kind: FailureKind) -> None:
    assert failure_kind(failure, pool_timeout=pool) is kind


def test_not_started_needs_no_header_start_and_no_byte() -> None:
    before = classify_failure(steps=CONNECTED, failure=IoFailure("read", "eof"), pool_timeout=False,
                              request_bytes_to_kernel=0, elapsed_ms=3)
    assert before.certainty is SendCertainty.NOT_STARTED
    assert before.failure is FailureKind.CONNECTION_CLOSED
    assert before.last_phase_started is TransportPhase.CONNECT
    assert before.response_bytes_received == 0 and before.response_status is None
    assert before.resolved_address is None
    # Header writing started but no byte was accepted yet: the peer may still have some bytes
    # (a previous partial send) -- headers started is enough to lose the proof.
    started = classify_failure(steps=HEADERS_STARTED, failure=IoFailure("write", "error"), pool_timeout=True,
                               request_bytes_to_kernel=0, elapsed_ms=3)
    assert started.certainty is SendCertainty.MAY_HAVE_REACHED_PEER
    assert started.failure is FailureKind.WRITE_ERROR  # a recorded failure wins over the pool flag
    assert started.last_phase_started is TransportPhase.REQUEST_HEADERS
    # A counted byte without a trace step (defensive): still not provably absent.
    counted = classify_failure(steps=CONNECTED, failure=IoFailure("write", "error"), pool_timeout=False,
                               request_bytes_to_kernel=1, elapsed_ms=3)
    assert counted.certainty is SendCertainty.MAY_HAVE_REACHED_PEER


def test_last_phase_and_pool_phase() -> None:
    assert last_phase_started([]) is None
    assert last_phase_started([f"{DNS_STEP}.started", f"{DNS_STEP}.failed"]) is TransportPhase.DNS
    assert last_phase_started([*CONNECTED, "connection.start_tls.started"]) is TransportPhase.TLS
    assert last_phase_started(SENT) is TransportPhase.RESPONSE_HEADERS
    assert last_phase_started([*SENT, "http11.receive_response_headers.complete",
                               "http11.receive_response_body.started"]) is TransportPhase.RESPONSE_BODY
    assert last_phase_started([*HEADERS_STARTED, "http11.send_request_headers.failed",
                               "http11.response_closed.started"]) is TransportPhase.REQUEST_HEADERS
    assert last_phase_started(["http2.send_request_body.started"]) is TransportPhase.REQUEST_BODY
    pool = classify_failure(steps=[], failure=None, pool_timeout=True, request_bytes_to_kernel=0, elapsed_ms=1)
    assert pool.last_phase_started is TransportPhase.POOL
    assert pool.failure is FailureKind.POOL_TIMEOUT
    assert pool.certainty is SendCertainty.NOT_STARTED
    other = classify_failure(steps=[], failure=None, pool_timeout=False, request_bytes_to_kernel=0, elapsed_ms=1)
    assert other.last_phase_started is None
    assert other.failure is FailureKind.PROTOCOL_ERROR
    # A pool flag with a recorded connect step is not a pool-phase failure.
    late = classify_failure(steps=CONNECTED, failure=None, pool_timeout=True, request_bytes_to_kernel=0, elapsed_ms=1)
    assert late.last_phase_started is TransportPhase.CONNECT


def test_request_started_only_on_the_header_start_event() -> None:
    assert not request_started(CONNECTED)
    assert request_started(HEADERS_STARTED)
    assert request_started(["http2.send_request_headers.started"])
    assert not request_started(["http11.send_request_headers.complete"])


def test_evidence_carries_what_was_observed() -> None:
    evidence = classify_failure(steps=SENT, failure=IoFailure("read", "eof"), pool_timeout=False,
                                request_bytes_to_kernel=120, elapsed_ms=42, resolved_address="127.0.0.1",
                                response_status=202, response_bytes_received=90)
    assert (evidence.request_bytes_to_kernel, evidence.elapsed_ms, evidence.resolved_address,
            evidence.response_status, evidence.response_bytes_received) == (120, 42, "127.0.0.1", 202, 90)
    assert evidence.trace_steps == tuple(SENT)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"path_and_query": "https://evil/x"}, "relative"),
        ({"path_and_query": "//evil/x"}, "relative"),
        ({"method": "DELETE"}, "method"),
        ({"method": "post"}, "method"),
        ({"semantic_headers": (("Authorization", "Bearer x"),)}, "name"),
        ({"semantic_headers": (("Content-Length", "1"),)}, "name"),
        ({"semantic_headers": (("bad name", "v"),)}, "name"),
        ({"semantic_headers": (("x-k", "v\r\nx-evil: 1"),)}, "value"),
        ({"semantic_headers": (("x-k", " padded"),)}, "value"),
        ({"semantic_headers": (("x-k", "caf\u00e9"),)}, "value"),
        ({"content_type": "text/csv\r\nx: y"}, "content type"),
    ],
)
def test_prepared_request_refuses_what_must_never_reach_the_wire(changes: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"method": "POST", "path_and_query": "/v1/x?a=1",
                                 "semantic_headers": (("idempotency-key", "k 1"),), "content_type": "text/csv",
                                 "body": None}
    PreparedRequest(**fields)  # type: ignore[arg-type]  # the baseline is valid
    fields.update(changes)
    with pytest.raises(ValueError, match=message) as refused:
        PreparedRequest(**fields)  # type: ignore[arg-type]
    assert "evil" not in str(refused.value) and "caf" not in str(refused.value)


def test_received_evidence() -> None:
    evidence = received(steps=SENT, request_bytes_to_kernel=10, elapsed_ms=2, resolved_address="::1",
                        response_bytes_received=5)
    assert evidence.certainty is SendCertainty.RESPONSE_RECEIVED
    assert evidence.failure is None and evidence.last_phase_started is TransportPhase.COMPLETE
    assert (evidence.request_bytes_to_kernel, evidence.elapsed_ms, evidence.resolved_address,
            evidence.response_bytes_received, evidence.trace_steps) == (10, 2, "::1", 5, tuple(SENT))
    assert evidence.response_status is None
