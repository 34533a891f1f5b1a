"""Kill tests for sink/transport/classify.py (mutation gate, tools/mutation): every httpcore trace
step (names as httpcore emits them, FIELD-NOTES "httpx / httpcore") maps to its phase on its
``started`` event only, and a recorded I/O failure is never reported as a pool wait."""

from __future__ import annotations

import pytest

from sink.contracts.transport import FailureKind, TransportPhase
from sink.transport.classify import classify_failure, last_phase_started
from sink.transport.exchange import IoFailure

P = TransportPhase
STEP_PHASES = [
    ("resolver.resolve", P.DNS),  # the transport's own bounded resolution step
    ("connection.connect_tcp", P.CONNECT),
    ("connection.start_tls", P.TLS),
    ("http11.send_request_headers", P.REQUEST_HEADERS),
    ("http11.send_request_body", P.REQUEST_BODY),
    ("http11.receive_response_headers", P.RESPONSE_HEADERS),
    ("http11.receive_response_body", P.RESPONSE_BODY),
    ("http2.send_request_headers", P.REQUEST_HEADERS),
    ("http2.send_request_body", P.REQUEST_BODY),
    ("http2.receive_response_headers", P.RESPONSE_HEADERS),
    ("http2.receive_response_body", P.RESPONSE_BODY),
]


@pytest.mark.parametrize(("step", "phase"), STEP_PHASES, ids=[s for s, _ in STEP_PHASES])
def test_each_trace_step_started_is_its_phase(step: str, phase: TransportPhase) -> None:
    assert last_phase_started([f"{step}.started"]) is phase


@pytest.mark.parametrize("event", ["complete", "failed"])
def test_only_a_started_event_moves_the_phase(event: str) -> None:
    steps = ["connection.connect_tcp.started", "connection.connect_tcp.complete",
             f"http11.send_request_headers.{event}"]
    assert last_phase_started(steps) is P.CONNECT


def test_an_io_failure_with_a_pool_timeout_is_not_a_pool_phase() -> None:
    evidence = classify_failure(steps=[], failure=IoFailure("connect", "error"), pool_timeout=True,
                                request_bytes_to_kernel=0, elapsed_ms=5)
    assert evidence.last_phase_started is None
    assert evidence.failure is FailureKind.CONNECT_ERROR
    pooled = classify_failure(steps=[], failure=None, pool_timeout=True, request_bytes_to_kernel=0, elapsed_ms=5)
    assert pooled.last_phase_started is P.POOL
