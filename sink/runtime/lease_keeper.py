"""Heartbeat renewal of the leases a live worker holds (seed: "Lease separation", "Clock skew:
journal leases use PostgreSQL time").

A lease is taken on the database clock with a time-to-live. A worker that is alive and still
working on a step (a mutation request that takes longer than the lease, a poll answered slowly, the
sleep between two polls) must not lose it: ``LeaseKeeper.held`` takes the lease and renews it in a
background thread every third of its time-to-live until the step ends, each renewal decided by the
journal on its own clock. A worker that dies stops renewing, and its lease runs out after one TTL.

Continuity is judged by the fencing token, which the journal increases every time an expired lease
is taken again: a renewal that returns the same token, or the next one (the lease ran out between
two renewals and nobody else took it), keeps the hold; anything else (another owner holds it, or
held it meanwhile) marks the lease *lost*, and the keeper stops renewing it. The step then stops at
its next journal write: the journal refuses a write whose lease is not held, and the supervisor
reports that as contention with another live worker (exit 3), never as an unknown effect.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from sink.journal.port import DeliveryJournalPort, JournalError, LeaseUnavailable
from sink.journal.records import LeaseKind, LeaseRequest

MIN_RENEW_EVERY_S = 0.05
LOST = -1
"""Stands for "another owner holds it": never a fencing token (they start at 1)."""


@dataclass
class _Held:
    kind: LeaseKind
    subject: str
    token: int
    lost: bool = False


class LeaseKeeper:
    """Takes leases for one owner and renews every held one until its ``held`` block ends."""

    def __init__(self, journal: DeliveryJournalPort, owner: str, ttl: timedelta, *,
                 renew_every_s: float | None = None, failpoint: Callable[[str], None] | None = None) -> None:
        self._journal = journal
        self._failpoint = failpoint
        self._owner = owner
        self._ttl = ttl
        self._every = max(MIN_RENEW_EVERY_S, renew_every_s if renew_every_s is not None
                          else ttl.total_seconds() / 3)
        self._lock = threading.Lock()
        self._held: dict[tuple[LeaseKind, str], _Held] = {}
        self._depth: dict[tuple[LeaseKind, str], int] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def renew_every_s(self) -> float:
        return self._every

    def acquire(self, kind: LeaseKind, subject: str) -> int:
        """Take or renew the lease now (LeaseUnavailable when another live owner holds it)."""
        lease = self._journal.acquire_lease(LeaseRequest(kind, subject, self._owner, self._ttl))
        return lease.fencing_token

    @contextmanager
    def held(self, kind: LeaseKind, subject: str) -> Iterator[None]:
        """Hold the lease for the duration of the block, renewing it in the background."""
        key = (kind, subject)
        # The taking (or first renewal) passes its named failpoints; background renewals do not,
        # so a crash point fires at the same step of every run.
        if self._failpoint is not None:
            self._failpoint("journal.acquire_lease.before")
        token = self.acquire(kind, subject)
        if self._failpoint is not None:
            self._failpoint("journal.acquire_lease.after")
        with self._lock:
            self._depth[key] = self._depth.get(key, 0) + 1
            self._held[key] = _Held(kind, subject, token)
            if self._thread is None:
                self._wake.clear()
                self._thread = threading.Thread(target=self._renew, name="restproof-lease-keeper", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._depth[key] -= 1
                if not self._depth[key]:
                    del self._depth[key]
                    self._held.pop(key, None)

    def lost(self, kind: LeaseKind, subject: str) -> bool:
        with self._lock:
            held = self._held.get((kind, subject))
            return held is not None and held.lost

    def close(self) -> None:
        """Stop renewing (the leases themselves are released, or run out, elsewhere)."""
        with self._lock:
            self._held.clear()
            self._depth.clear()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join(timeout=5)

    def renew_once(self) -> None:
        """One renewal round (the background thread's step; tests call it directly)."""
        with self._lock:
            due = [held for held in self._held.values() if not held.lost]
        for held in due:
            try:
                token = self.acquire(held.kind, held.subject)
            except LeaseUnavailable:
                token = LOST  # another live owner holds it now
            except JournalError:
                continue  # the journal is unreachable for a moment: the next round tries again
            with self._lock:
                if token in (held.token, held.token + 1):
                    held.token = token
                else:
                    held.lost = True

    def _renew(self) -> None:
        while not self._wake.wait(self._every):
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
            self.renew_once()
