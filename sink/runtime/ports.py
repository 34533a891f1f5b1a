"""What the supervisor receives (seed: "Public Python contracts and ports").

The supervisor builds none of these: the composition root (``sink.runtime.composition``) picks the
adapters from the environment and hands them in, so a test can hand in fakes and a certification
run the real thing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from sink.contracts.profile import OperationProfile
from sink.contracts.transport import PreparedRequest, RestTransportPort
from sink.design.query import DesignContract
from sink.journal.markers import MarkerStore
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import OperationRow, Receipt
from sink.runtime.backoff import JitterSource
from sink.runtime.rate_limiter import DistributedRateLimiterPort, NoRateLimit
from sink.runtime.verification import ExpectedDelivery
from sink.security.revocation import OpenGate, SubmitGate


class ChildRequests(Protocol):
    """Rendered requests of the admitted children, from the pinned plan and sealed artifacts only."""

    def mutation_request(self, operation: OperationRow) -> PreparedRequest:
        """The child's mutation request; its body streams the sealed payload artifact."""

    def poll_request(self, operation: OperationRow, receipt: Receipt) -> PreparedRequest | None:
        """The read-only receipt poll (async family), or None when the profile has none."""

    def summary_request(self, operation: OperationRow) -> PreparedRequest | None:
        """A read-only summary query of the child's scope, when the profile offers one."""

    def expected(self, operation: OperationRow) -> ExpectedDelivery:
        """Rows and receiver-scheme content digest the sealed payload holds."""


class RuntimeClock(Protocol):
    def monotonic_ms(self) -> int: ...

    def sleep_ms(self, milliseconds: int) -> None: ...


class SystemClock:
    def monotonic_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def sleep_ms(self, milliseconds: int) -> None:
        if milliseconds > 0:
            time.sleep(milliseconds / 1000.0)


Failpoint = Callable[[str], None]


def no_failpoint(name: str) -> None:
    """The default: failpoints cost one call and nothing else."""


@dataclass(frozen=True, slots=True)
class SupervisorConfig:
    worker_id: str
    profile: OperationProfile
    capacity_scope: str
    lease_ttl: timedelta = timedelta(seconds=30)
    wait_for_async: bool = True
    """Poll an async child to its end in this process (``run --wait``); False returns pending."""


@dataclass(frozen=True, slots=True)
class SupervisorPorts:
    journal: DeliveryJournalPort
    markers: MarkerStore
    transport: RestTransportPort
    requests: ChildRequests
    contract: DesignContract
    jitter_for: Callable[[str], JitterSource]
    clock: RuntimeClock
    failpoint: Failpoint = no_failpoint
    submit_gate: SubmitGate = field(default_factory=OpenGate)
    """Asked before every new mutation attempt (the deny-only revocation list); never by polls."""
    limiter: DistributedRateLimiterPort = field(default_factory=NoRateLimit)
    """Asked before every submit, poll and summary request (journal-backed in a real run)."""
