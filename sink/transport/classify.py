"""Pure classification of one failed exchange into ``TransportEvidence``.

Inputs are what was observed, never an exception type: the httpcore trace steps (how far the
exchange got), the first I/O failure recorded by the counting backend (what failed, and which
bound expired) and the byte count the kernel accepted. The single exception-derived input is
``pool_timeout``: waiting for a pooled connection is not traced by httpcore, and it happens
before any step.

The certainty rule (seed "Safe retry and remote fencing", FIELD-NOTES "httpx / httpcore"):
REQUEST_NOT_STARTED only when request headers never started AND the kernel accepted no request
byte. Everything later is MAY_HAVE_REACHED_PEER, whatever failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from sink.contracts.transport import FailureKind, SendCertainty, TransportEvidence, TransportPhase
from sink.transport.exchange import IoFailure

DNS_STEP = "resolver.resolve"
"""Trace step the transport adds for its own bounded name resolution."""

_STEP_PHASES = {
    DNS_STEP: TransportPhase.DNS,
    "connection.connect_tcp": TransportPhase.CONNECT,
    "connection.start_tls": TransportPhase.TLS,
    "http11.send_request_headers": TransportPhase.REQUEST_HEADERS,
    "http11.send_request_body": TransportPhase.REQUEST_BODY,
    "http11.receive_response_headers": TransportPhase.RESPONSE_HEADERS,
    "http11.receive_response_body": TransportPhase.RESPONSE_BODY,
    "http2.send_request_headers": TransportPhase.REQUEST_HEADERS,
    "http2.send_request_body": TransportPhase.REQUEST_BODY,
    "http2.receive_response_headers": TransportPhase.RESPONSE_HEADERS,
    "http2.receive_response_body": TransportPhase.RESPONSE_BODY,
}
_REQUEST_STARTED = ("http11.send_request_headers.started", "http2.send_request_headers.started")

_TIMEOUT_KINDS = {
    "dns": FailureKind.DNS_TIMEOUT,
    "connect": FailureKind.CONNECT_TIMEOUT,
    "tls": FailureKind.TLS_TIMEOUT,
    "write": FailureKind.WRITE_TIMEOUT,
    "read": FailureKind.READ_TIMEOUT,
    "idle": FailureKind.IDLE_TIMEOUT,
    "total": FailureKind.REQUEST_TOTAL_TIMEOUT,
}
_ERROR_KINDS = {
    "authority": FailureKind.AUTHORITY_REFUSED,
    "dns": FailureKind.DNS_ERROR,
    "connect": FailureKind.CONNECT_ERROR,
    "tls": FailureKind.TLS_ERROR,
    "write": FailureKind.WRITE_ERROR,
    "read": FailureKind.READ_ERROR,
    "body": FailureKind.BODY_UNAVAILABLE,
    "credential": FailureKind.CREDENTIAL_UNAVAILABLE,
}


def request_started(steps: Sequence[str]) -> bool:
    return any(step in _REQUEST_STARTED for step in steps)


def last_phase_started(steps: Sequence[str]) -> TransportPhase | None:
    phase: TransportPhase | None = None
    for step in steps:
        name, _, event = step.rpartition(".")
        if event == "started" and name in _STEP_PHASES:
            phase = _STEP_PHASES[name]
    return phase


def failure_kind(failure: IoFailure | None, *, pool_timeout: bool) -> FailureKind:
    if failure is None:
        return FailureKind.POOL_TIMEOUT if pool_timeout else FailureKind.PROTOCOL_ERROR
    if failure.cause == "timeout":
        # The bound says which timeout expired; the operation decides when it is missing.
        return _TIMEOUT_KINDS[failure.bound or failure.operation]
    if failure.cause == "eof":
        return FailureKind.CONNECTION_CLOSED
    return _ERROR_KINDS[failure.operation]


def classify_failure(
    *,
    steps: Sequence[str],
    failure: IoFailure | None,
    pool_timeout: bool,
    request_bytes_to_kernel: int,
    elapsed_ms: int,
    resolved_address: str | None = None,
    response_status: int | None = None,
    response_bytes_received: int = 0,
) -> TransportEvidence:
    started = request_started(steps) or request_bytes_to_kernel > 0
    certainty = SendCertainty.MAY_HAVE_REACHED_PEER if started else SendCertainty.NOT_STARTED
    phase = last_phase_started(steps)
    if phase is None and failure is None and pool_timeout:
        phase = TransportPhase.POOL
    return TransportEvidence(
        certainty=certainty,
        last_phase_started=phase,
        failure=failure_kind(failure, pool_timeout=pool_timeout),
        request_bytes_to_kernel=request_bytes_to_kernel,
        trace_steps=tuple(steps),
        elapsed_ms=elapsed_ms,
        resolved_address=resolved_address,
        response_status=response_status,
        response_bytes_received=response_bytes_received,
    )


def received(
    *,
    steps: Sequence[str],
    request_bytes_to_kernel: int,
    elapsed_ms: int,
    resolved_address: str | None,
    response_bytes_received: int,
) -> TransportEvidence:
    return TransportEvidence(
        certainty=SendCertainty.RESPONSE_RECEIVED,
        last_phase_started=TransportPhase.COMPLETE,
        failure=None,
        request_bytes_to_kernel=request_bytes_to_kernel,
        trace_steps=tuple(steps),
        elapsed_ms=elapsed_ms,
        resolved_address=resolved_address,
        response_bytes_received=response_bytes_received,
    )
