"""What a move decided, stored with the transition that made it (seed: "Durable continuation
contract": DeliveryPending is returned only after the next-check bound is durable; results are
functions of the journal, never of process memory).

* ``Decision``: the stable error code, the exit class and a short reason word of the move. A run,
  a later ``resume`` and ``inspect`` read the same three values, so they report the same code and
  exit class for the same journal state. A later transition replaces it (a move that decides
  nothing clears it).
* ``ResultFacts``: the bounded evidence verification needs from the receiver's answer (its
  accepted / rejected row counters, whether it refused the content before processing it, whether
  it said "partially done"), so a process that did not see the answer verifies from the same facts.
* ``OperatorDecision``: an audited operator decision outside the state axes: abandoning a child
  (no automatic step or fence waits for it any more) or transferring its remote-job capacity to the
  incident reserve (its slot no longer blocks unrelated intervals).

Nothing here carries a payload row, a header or a response body: codes, small integers and words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sink.contracts.errors import ErrorCode
from sink.journal.ids import require_digest

MAX_COUNTER = 2**53
"""Counters beyond this are not a receiver's row count (and would not round-trip through JSON)."""
MAX_NEXT_CHECK = timedelta(days=30)
DECIDED_EXIT_CLASSES = frozenset({2, 3, 4, 5})
_REASON = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")


@dataclass(frozen=True, slots=True)
class Decision:
    error_code: ErrorCode | None = None
    exit_class: int | None = None
    """2, 3, 4 or 5: the exit class the move decided (None: nothing blocks, or the code's class)."""
    reason: str | None = None
    """A stable lower-case word saying why (``request_not_started``, ``credential_unavailable``, ...)."""

    def __post_init__(self) -> None:
        if self.error_code is not None:
            ErrorCode(self.error_code)  # a catalogued code or nothing
        if self.exit_class is not None and self.exit_class not in DECIDED_EXIT_CLASSES:
            raise ValueError("a decided exit class is 2, 3, 4 or 5")
        if self.reason is not None and not _REASON.match(self.reason):
            raise ValueError("a decision reason is a lower-case word of at most 64 characters")

    @property
    def empty(self) -> bool:
        return self.error_code is None and self.exit_class is None and self.reason is None


NO_DECISION = Decision()


def _counter(value: int | None, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not 0 <= value <= MAX_COUNTER):
        raise ValueError(f"{name} must be an integer between 0 and 2**53")


@dataclass(frozen=True, slots=True)
class ResultFacts:
    accepted_rows: int | None = None
    rejected_rows: int | None = None
    rejection_proven: bool = False
    """The receiver refused the content before processing it (411/413/414/415)."""
    receiver_reported_partial: bool = False
    """The receiver's own state word said "partially done"."""

    def __post_init__(self) -> None:
        _counter(self.accepted_rows, "accepted_rows")
        _counter(self.rejected_rows, "rejected_rows")

    @property
    def has_counters(self) -> bool:
        return self.accepted_rows is not None or self.rejected_rows is not None


NO_FACTS = ResultFacts()


class OperatorDecisionKind(StrEnum):
    ABANDON = "abandon"
    """The child will not be delivered by its generation: nothing automatic acts on it again, its
    capacity is released, and an overlapping newer generation no longer waits for it."""
    TRANSFER_CAPACITY = "transfer_capacity"
    """Its remote-job slots move to the incident reserve; its effect axes and fence stay as they are."""


@dataclass(frozen=True, slots=True)
class OperatorDecisionRecord:
    operation_id: str
    kind: OperatorDecisionKind
    actor_id: str
    reconciliation_id: str
    evidence_digest: str
    released_attempts: tuple[str, ...]
    """The attempt ids whose capacity reservation this decision released or transferred."""
    decided_at: datetime

    def __post_init__(self) -> None:
        require_digest(self.evidence_digest, "evidence_digest")
