"""Applying a policy's decision to the journal, with the failpoints around every write.

Every durable write the supervisor makes goes through here, so each one has its named
``journal.<write>.before`` / ``.after`` crash point (``sink.runtime.failpoints``) and the same
evidence digest scheme.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

from sink.canonical import CanonicalValue, hash_fields
from sink.contracts.transport import TransportOutcome
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import (
    Decision,
    LeaseKind,
    LeaseRequest,
    OperationRow,
    Receipt,
    ResultFacts,
    TransitionRequest,
)
from sink.runtime import ContractMove
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.ports import Failpoint

EVIDENCE_PURPOSE = "restproof.runtime.transport_evidence"


def outcome_digest(outcome: TransportOutcome) -> str:
    """A digest of the bounded evidence (never the body: only its size and digest)."""
    evidence = outcome.evidence
    fields: dict[str, CanonicalValue] = {
        "certainty": evidence.certainty.value,
        "failure": None if evidence.failure is None else evidence.failure.value,
        "last_phase_started": None if evidence.last_phase_started is None else evidence.last_phase_started.value,
        "request_bytes_to_kernel": evidence.request_bytes_to_kernel,
    }
    if outcome.response is not None:
        fields["status"] = outcome.response.status
        fields["body_digest"] = outcome.response.body_digest
        fields["body_size"] = outcome.response.body_size
    return hash_fields(EVIDENCE_PURPOSE, fields)


_TRACE_BOUNDARIES = {
    "http11.send_request_headers.complete": "after_headers_sent",
    "http11.send_request_body.complete": "after_body_sent",
    "http11.receive_response_headers.complete": "after_response_headers",
    "http11.receive_response_body.complete": "after_response_body",
}


def boundary_observer(kind: str, failpoint: Failpoint) -> Callable[[str], None]:
    """Maps httpcore trace steps to the request-boundary failpoints ``http.<kind>.<boundary>``."""
    points = {step: request_point(kind, boundary) for step, boundary in _TRACE_BOUNDARIES.items()}

    def observe(step: str) -> None:
        point = points.get(step)
        if point is not None:
            failpoint(point)

    return observe


def decision_of(move: ContractMove, reason: str | None = None) -> Decision:
    """What a move decided, as the journal stores it."""
    exit_class = None if move.exit_class is None else int(move.exit_class)
    return Decision(move.error_code, exit_class if exit_class != 0 else None, reason)


def facts_digest(purpose: str, facts: Mapping[str, CanonicalValue]) -> str:
    return hash_fields(purpose, dict(facts))


class JournalMoves:
    """The supervisor's journal writes, each between its two failpoints."""

    def __init__(self, journal: DeliveryJournalPort, failpoint: Failpoint) -> None:
        self._journal = journal
        self._failpoint = failpoint

    def lease(self, kind: LeaseKind, subject: str, owner: str, ttl: timedelta) -> None:
        """Take or renew a lease (database clock) between its two failpoints."""
        self._failpoint(journal_point("acquire_lease", "before"))
        self._journal.acquire_lease(LeaseRequest(kind=kind, subject_id=subject, owner=owner, ttl=ttl))
        self._failpoint(journal_point("acquire_lease", "after"))

    def apply(
        self, row: OperationRow, move: ContractMove, *, write: str, lease_owner: str | None,
        evidence_digest: str | None = None, receipt: Receipt | None = None, reason: str | None = None,
        facts: ResultFacts | None = None, next_check_after: timedelta | None = None,
    ) -> OperationRow:
        """Apply ``move``, storing what it decided (its code, its exit class, ``reason``) with it."""
        self._failpoint(journal_point(write, "before"))
        updated = self._journal.transition(
            TransitionRequest(
                operation_id=row.operation_id, expected_revision=row.revision, transition_id=move.transition_id,
                evidence_digest=evidence_digest, receipt=receipt, lease_owner=lease_owner,
                decision=decision_of(move, reason), facts=facts, next_check_after=next_check_after,
            )
        )
        self._failpoint(journal_point(write, "after"))
        return updated
