"""Distributed rate limits kept in the journal database: the pure rules both adapters share.

Seed ("Safe retry", "Security, timeout, and operations policy"): submit and poll token buckets
and the active-request bound are shared by certified endpoint/principal scope, never held in
process memory. The adapters (``sqlite/rate_limits.py``, ``postgres/rate_limits.py``) only lock a
row, read it, call these functions and write the result back in ONE transaction, so a take is
atomic across every process sharing the journal.

Token bucket arithmetic is exact integers: a bucket's level is counted in 1/60000 of a token, so
``rate_per_minute`` tokens per 60000 ms refill exactly ``rate_per_minute`` units per millisecond and
no rounding can ever grant more than the rate allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from sink.journal.ids import require_ident

UNITS_PER_TOKEN = 60_000
"""A bucket's level unit: 1/60000 token, i.e. a rate of r per minute refills r units per ms."""
MAX_RATE_PER_MINUTE = 1_000_000
MAX_BURST = 1_000_000
MAX_SLOTS = 10_000
MAX_SLOT_TTL = timedelta(hours=6)


@dataclass(frozen=True, slots=True)
class BucketSpec:
    """One token bucket: ``burst`` tokens at most, refilled at ``rate_per_minute``."""

    bucket: str
    rate_per_minute: int
    burst: int

    def __post_init__(self) -> None:
        require_ident(self.bucket, "rate bucket")
        if not 1 <= self.rate_per_minute <= MAX_RATE_PER_MINUTE:
            raise ValueError(f"rate_per_minute must be in 1..{MAX_RATE_PER_MINUTE}")
        if not 1 <= self.burst <= MAX_BURST:
            raise ValueError(f"burst must be in 1..{MAX_BURST}")

    @property
    def capacity_units(self) -> int:
        return self.burst * UNITS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class BucketLevel:
    """What the journal stores per bucket: the level at ``refilled_at`` (database clock)."""

    units: int
    refilled_at: datetime


@dataclass(frozen=True, slots=True)
class TakeDecision:
    granted: bool
    wait_ms: int
    """0 when granted; otherwise the exact time until one whole token is back (>= 1)."""
    level: BucketLevel
    """The level to write back (the refill is recorded even when nothing is granted)."""


def _elapsed_ms(earlier: datetime, now: datetime) -> int:
    # A clock that steps backwards refills nothing (never a negative or a double refill).
    return max(0, (now - earlier) // timedelta(milliseconds=1))


def take_token(spec: BucketSpec, stored: BucketLevel | None, now: datetime) -> TakeDecision:
    """Refill ``stored`` up to ``now``, then take one token or say how long until one is back.

    A bucket seen for the first time starts full (``burst`` tokens). The level never exceeds the
    capacity, so in any window of T ms at most ``burst + rate_per_minute * T / 60000`` tokens are
    granted, however many processes share the bucket.
    """
    if stored is None:
        units = spec.capacity_units
    else:
        refill = _elapsed_ms(stored.refilled_at, now) * spec.rate_per_minute
        units = min(spec.capacity_units, max(0, stored.units) + refill)
    refilled = now if stored is None or now > stored.refilled_at else stored.refilled_at
    if units >= UNITS_PER_TOKEN:
        return TakeDecision(True, 0, BucketLevel(units - UNITS_PER_TOKEN, refilled))
    missing = UNITS_PER_TOKEN - units
    wait = -(-missing // spec.rate_per_minute)  # ceiling: never wake before the token is whole
    return TakeDecision(False, wait, BucketLevel(units, refilled))


@dataclass(frozen=True, slots=True)
class SlotRequest:
    """One in-flight request's claim on the active-request bound of ``scope``.

    The claim is a lease: it expires ``ttl`` after it was taken, so a process killed while holding
    it blocks the slot only until then, never forever.
    """

    scope: str
    holder: str
    limit: int
    ttl: timedelta

    def __post_init__(self) -> None:
        require_ident(self.scope, "request-slot scope")
        require_ident(self.holder, "request-slot holder")
        if not 1 <= self.limit <= MAX_SLOTS:
            raise ValueError(f"the active-request limit must be in 1..{MAX_SLOTS}")
        if not timedelta(0) < self.ttl <= MAX_SLOT_TTL:
            raise ValueError("a request-slot ttl must be positive and at most 6 hours")


@dataclass(frozen=True, slots=True)
class SlotDecision:
    granted: bool
    wait_ms: int
    """0 when granted; otherwise the time until the earliest live claim expires (>= 1)."""


def decide_slot(request: SlotRequest, live_expiries: list[datetime], *, holds_already: bool,
                now: datetime) -> SlotDecision:
    """``live_expiries``: the unexpired claims of the scope held by OTHER holders."""
    if holds_already or len(live_expiries) < request.limit:
        return SlotDecision(True, 0)
    earliest = min(live_expiries)
    return SlotDecision(False, max(1, -(-(earliest - now) // timedelta(milliseconds=1))))


@runtime_checkable
class RateLimitJournal(Protocol):
    """The journal side of the distributed limiter (implemented by both adapters)."""

    def take_rate_token(self, spec: BucketSpec) -> int:
        """Atomically take one token from ``spec.bucket``: 0 if granted, else ms until one is back."""

    def acquire_request_slot(self, request: SlotRequest) -> int:
        """Atomically claim (or renew) an active-request slot: 0 if held, else ms to wait."""

    def release_request_slot(self, scope: str, holder: str) -> None:
        """Drop the claim (no-op when it already expired or was never taken)."""
