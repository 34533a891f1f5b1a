"""Per-request bookkeeping shared by the trace callback, the network backend and the classifier.

httpcore performs all I/O of a synchronous request on the calling thread, so the exchange in
flight is found through a context variable: the counting backend charges bytes and applies the
phase bounds of *this* request even on a pooled connection opened by an earlier one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from sink.contracts.profile_policy import TimeoutVector

Operation = Literal["authority", "dns", "connect", "tls", "write", "read", "body", "credential"]
Cause = Literal["timeout", "error", "eof", "unavailable"]
Bound = Literal["dns", "connect", "tls", "write", "read", "idle", "total"]


@dataclass(frozen=True, slots=True)
class IoFailure:
    """The first thing that went wrong, as observed where it happened (not from an exception type)."""

    operation: Operation
    cause: Cause
    bound: Bound | None = None
    """For a timeout: which bound expired (``total`` when the request deadline was the tighter one)."""


@dataclass(slots=True)
class Exchange:
    timeouts: TimeoutVector
    started: float = field(default_factory=time.monotonic)
    steps: list[str] = field(default_factory=list)
    bytes_sent: int = 0
    bytes_received: int = 0
    failure: IoFailure | None = None
    resolved_address: str | None = None
    observer: Callable[[str], None] | None = None
    """Told every step as it happens (the runtime's request-boundary failpoints); never sees
    ``info``, which may hold the request."""

    @property
    def deadline(self) -> float:
        return self.started + self.timeouts.request_total_ms / 1000.0

    def trace(self, event: str, info: object) -> None:
        """httpcore trace callback: keep only the event name (``info`` may hold the request)."""
        self.steps.append(event)
        if self.observer is not None:
            self.observer(event)

    def record_failure(self, failure: IoFailure) -> None:
        # The first failure explains the exchange: httpcore swallows a write error and goes on
        # to read, and that later read failure must not hide where the exchange really broke.
        if self.failure is None:
            self.failure = failure

    def bound(self, phase: Bound) -> tuple[float, Bound]:
        """Seconds allowed for the next operation of ``phase``, and which bound that is."""
        phase_ms = {
            "dns": self.timeouts.dns_ms,
            "connect": self.timeouts.connect_ms,
            "tls": self.timeouts.tls_ms,
            "write": self.timeouts.write_ms,
            "read": self.timeouts.read_ms,
            "idle": self.timeouts.idle_ms,
            "total": self.timeouts.request_total_ms,
        }[phase]
        remaining = self.deadline - time.monotonic()
        if remaining < phase_ms / 1000.0:
            return max(remaining, 0.0), "total"
        return phase_ms / 1000.0, phase

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


CURRENT: ContextVar[Exchange | None] = ContextVar("restproof_transport_exchange", default=None)
