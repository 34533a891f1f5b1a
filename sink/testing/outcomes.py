"""Transport outcomes of each certainty, for ``ScriptedTransport`` scripts: what the real
transport reports when a request never started, when it may have reached the peer, and when a
response arrived. The trace steps and byte counts are plausible values, not measured ones."""

from __future__ import annotations

from collections.abc import Mapping

from sink.contracts.profile_policy import TimeoutVector
from sink.contracts.transport import (
    FailureKind,
    JsonScalar,
    ResponseEvidence,
    SendCertainty,
    TransportEvidence,
    TransportOutcome,
    TransportPhase,
)

BODY_DIGEST = "sha256:" + "ab" * 32
"""The body digest every scripted response reports (the double never sees a body)."""

_CONNECT_FAILED = ("connection.connect_tcp.started", "connection.connect_tcp.failed")
_READ_FAILED = ("http11.send_request_headers.started", "http11.send_request_headers.complete",
                "http11.send_request_body.started", "http11.send_request_body.complete",
                "http11.receive_response_headers.started", "http11.receive_response_headers.failed")
_ANSWERED = ("http11.send_request_headers.started", "http11.receive_response_body.complete")

TEST_TIMEOUTS = TimeoutVector(dns_ms=1_000, connect_ms=1_000, tls_ms=1_000, write_ms=5_000, read_ms=30_000,
                              idle_ms=30_000, request_total_ms=60_000, operation_total_ms=600_000)
"""A valid timeout vector for code under test that needs one to call ``send``."""


def not_started(failure: FailureKind | None = FailureKind.CONNECT_ERROR,
                phase: TransportPhase | None = TransportPhase.CONNECT,
                steps: tuple[str, ...] = _CONNECT_FAILED) -> TransportOutcome:
    """No request byte could have reached the peer: the only proof of no remote effect."""
    return TransportOutcome(TransportEvidence(SendCertainty.NOT_STARTED, phase, failure, 0, steps, 5), None)


def reached_peer(failure: FailureKind = FailureKind.READ_TIMEOUT,
                 phase: TransportPhase = TransportPhase.RESPONSE_HEADERS) -> TransportOutcome:
    """The request was sent and no complete answer came back: the effect is unknown."""
    return TransportOutcome(
        TransportEvidence(SendCertainty.MAY_HAVE_REACHED_PEER, phase, failure, 1234, _READ_FAILED, 30_000), None
    )


def responded(status: int, scalars: Mapping[str, JsonScalar] | None = None,
              headers: Mapping[str, str] | None = None, parse_problem: str | None = None) -> TransportOutcome:
    """A complete answer: ``scalars`` are the values the profile's extractors would read, keyed by
    their JSON pointer (``{"/id": "job-1"}``); ``headers`` lower-case allowlisted names."""
    return TransportOutcome(
        TransportEvidence(SendCertainty.RESPONSE_RECEIVED, TransportPhase.COMPLETE, None, 1234, _ANSWERED, 40),
        ResponseEvidence(status=status, headers=dict(headers or {}), body_size=64, body_digest=BODY_DIGEST,
                         scalars=dict(scalars or {}), parse_problem=parse_problem),
    )
