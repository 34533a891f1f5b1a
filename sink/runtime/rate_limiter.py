"""The distributed rate limiter the supervisor asks before every request (seed: "Circuit-breaker
state and distributed token buckets are shared by certified endpoint/principal scope, not
process-local"; "Distributed controls are separately keyed for submit requests, polls, ... active
requests, and active remote jobs").

``DistributedRateLimiterPort`` is what the supervisor receives. ``JournalRateLimiter`` keeps every
limit in the journal database (``sink.journal.rate_policy``), so every process sharing a journal
shares the buckets:

* a submit takes one token of the submit bucket (``rate_limits.submit_per_minute``), a poll one of
  the poll bucket (``poll_per_minute``); a read-only summary query takes none (it is neither);
* every request, summary included, holds one of ``max_active_requests`` slots while it runs. A
  slot is a short lease that a background keeper renews while the request runs: a process killed
  while holding it blocks it only until the lease expires (``SLOT_TTL``), never forever, and a
  long request never loses its slot.

Burst: each bucket holds at most one minute's quota (``burst = per_minute``), the plain meaning of
"N per minute"; it then refills at ``per_minute / 60`` per second. The remote-job semaphore
(``max_active_remote_jobs``) is not here: it is the journal's capacity reservation, taken in the
critical transaction and never freed by a TTL.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from enum import StrEnum
from typing import Protocol

from sink.canonical import CanonicalValue, hash_fields
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile_policy import RateLimits
from sink.journal.port import CapacityExhausted, JournalConfigurationError, RejectionReason
from sink.journal.rate_policy import BucketSpec, RateLimitJournal, SlotRequest

MAX_SLEEP_STEP_MS = 250
"""Re-ask at least this often: another process may release a slot before its lease ends."""
SLOT_TTL = timedelta(seconds=4)
"""An active-request slot is a short lease, renewed every ``SLOT_RENEW_EVERY_S`` while its request
runs: a killed process stops renewing, and its slots come free within this time."""
SLOT_RENEW_EVERY_S = 1.0


class RequestKind(StrEnum):
    SUBMIT = "submit"
    POLL = "poll"
    SUMMARY = "summary"


class RateLimitWaitExceeded(CapacityExhausted):
    """The limits did not admit the request within the wait budget: nothing was sent (exit 3)."""

    def __init__(self, kind: RequestKind, waited_ms: int) -> None:
        super().__init__(RejectionReason.CAPACITY_EXHAUSTED,
                         f"rate limits did not admit a {kind.value} request within {waited_ms} ms")


class DistributedRateLimiterPort(Protocol):
    def admit(self, kind: RequestKind) -> AbstractContextManager[None]:
        """Wait for the kind's token and an active-request slot; hold the slot inside the block."""

    def take_token(self, kind: RequestKind) -> None:
        """Wait for one more token of the kind's bucket (a same-key replay inside an admitted attempt)."""


class Sleeper(Protocol):
    def monotonic_ms(self) -> int: ...

    def sleep_ms(self, milliseconds: int) -> None: ...


class NoRateLimit:
    """For tests that drive the supervisor without a journal-backed limiter."""

    @contextmanager
    def admit(self, kind: RequestKind) -> Iterator[None]:
        yield

    def take_token(self, kind: RequestKind) -> None:
        return None


def rate_scope_key(plan: CompiledPlan) -> str:
    """The certified scope the limits are shared by: the components ``rate_limits.scope`` names
    (endpoint = authority origin and path, principal, tenant, environment), digested."""
    binding, environment = plan.binding, plan.environment
    parts: dict[str, str] = {
        "endpoint": f"{binding.authority_origin} {plan.operation.request.method} {plan.operation.request.path}",
        "principal": binding.remote_principal_id,
        "tenant": environment.tenant_id,
        "environment": environment.environment_id,
    }
    fields: dict[str, CanonicalValue] = {"profile": plan.operation.id}
    for name in sorted(plan.operation.rate_limits.scope):
        fields[name] = parts[name]
    return hash_fields("restproof.runtime.rate_scope", fields).removeprefix("sha256:")[:40]


def bucket_specs(limits: RateLimits, scope_key: str) -> dict[RequestKind, BucketSpec]:
    return {
        RequestKind.SUBMIT: BucketSpec(f"submit.{scope_key}", limits.submit_per_minute, limits.submit_per_minute),
        RequestKind.POLL: BucketSpec(f"poll.{scope_key}", limits.poll_per_minute, limits.poll_per_minute),
    }


class SlotKeeper:
    """Renews the held active-request slots of this process in the background.

    Renewal and release run under one lock, so a slot released by its request is never renewed
    (re-created) afterwards. A failed renewal only lets that lease run out sooner.
    """

    def __init__(self, store: RateLimitJournal, scope: str, limit: int, *, ttl: timedelta = SLOT_TTL,
                 renew_every_s: float = SLOT_RENEW_EVERY_S) -> None:
        self._store, self._scope, self._limit, self._ttl = store, scope, limit, ttl
        self._every = renew_every_s
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._thread: threading.Thread | None = None

    def request(self, holder: str) -> SlotRequest:
        return SlotRequest(self._scope, holder, self._limit, self._ttl)

    def hold(self, holder: str) -> None:
        with self._lock:
            self._held.add(holder)
            if self._thread is None:
                self._thread = threading.Thread(target=self._renew, name="restproof-slot-keeper", daemon=True)
                self._thread.start()

    def release(self, holder: str) -> None:
        with self._lock:
            self._held.discard(holder)
            self._store.release_request_slot(self._scope, holder)

    def _renew(self) -> None:
        while True:
            time.sleep(self._every)
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
                for holder in sorted(self._held):
                    with contextlib.suppress(Exception):
                        self._store.acquire_request_slot(self.request(holder))


class JournalRateLimiter:
    def __init__(self, store: RateLimitJournal, clock: Sleeper, *, limits: RateLimits, scope_key: str,
                 max_wait_ms: int, keeper: SlotKeeper | None = None) -> None:
        self._store = store
        self._clock = clock
        self._buckets = bucket_specs(limits, scope_key)
        self._keeper = keeper or SlotKeeper(store, f"requests.{scope_key}", limits.max_active_requests)
        self._max_wait_ms = max_wait_ms

    @contextmanager
    def admit(self, kind: RequestKind) -> Iterator[None]:
        holder = f"{kind.value}.{uuid.uuid4().hex}"
        self.take_token(kind)
        request = self._keeper.request(holder)
        self._wait(kind, lambda: self._store.acquire_request_slot(request))
        self._keeper.hold(holder)
        try:
            yield
        finally:
            self._keeper.release(holder)

    def take_token(self, kind: RequestKind) -> None:
        spec = self._buckets.get(kind)
        if spec is not None:
            self._wait(kind, lambda: self._store.take_rate_token(spec))

    def _wait(self, kind: RequestKind, attempt: _Attempt) -> None:
        started = self._clock.monotonic_ms()
        while True:
            wait_ms = attempt()
            if wait_ms <= 0:
                return
            waited = self._clock.monotonic_ms() - started
            step = min(wait_ms, MAX_SLEEP_STEP_MS)
            if waited + step > self._max_wait_ms:
                # Never send early: past the budget the request is not made at all.
                raise RateLimitWaitExceeded(kind, waited)
            self._clock.sleep_ms(step)


class _Attempt(Protocol):
    def __call__(self) -> int: ...


def journal_rate_limiter(plan: CompiledPlan, journal: object, clock: Sleeper) -> JournalRateLimiter:
    """The limiter of one plan over a journal adapter (both adapters implement ``RateLimitJournal``)."""
    if not isinstance(journal, RateLimitJournal):
        raise JournalConfigurationError("this journal adapter keeps no distributed rate limits")
    return JournalRateLimiter(journal, clock, limits=plan.operation.rate_limits, scope_key=rate_scope_key(plan),
                              max_wait_ms=plan.operation.timeouts.operation_total_ms)
