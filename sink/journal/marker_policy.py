"""How a MAY_ATTEMPT marker must match its journal attempt (seed: "Zero-RPO mutation admission").

Pure checks shared by the adapters: the critical submit refuses a marker that does not bind the
exact attempt, and reconciliation reports every marker without an exactly matching attempt.
"""

from __future__ import annotations

from sink.journal.markers import StoredMarker
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import Attempt, OperationRow, SubmitRequest


def check_marker_binds(stored: StoredMarker | None, row: OperationRow, request: SubmitRequest, epoch: int) -> None:
    """Raise unless the published marker binds this operation, attempt, revision and epoch."""
    if stored is None:
        raise TransitionRejected(
            RejectionReason.MARKER_MISSING, f"no MAY_ATTEMPT marker for attempt {request.attempt_ordinal}"
        )
    m = stored.marker
    binds = (
        stored.digest == request.marker_digest
        and m.operation_id == row.operation_id
        and m.attempt_ordinal == request.attempt_ordinal
        and m.parent_id == row.parent_id
        and m.delivery_key == row.delivery_key
        and m.generation == row.descriptor.generation
        and m.mutation_intent_digest == row.descriptor.mutation_intent_digest
        and m.expected_revision == request.expected_revision
        and m.journal_epoch == epoch
    )
    if not binds:
        raise TransitionRejected(RejectionReason.MARKER_MISMATCH, "MAY_ATTEMPT marker does not bind this attempt")


def marker_attempt_mismatch(entry: StoredMarker, attempt: Attempt | None) -> str | None:
    """None when the journal holds exactly the attempt the marker announced; else why not."""
    if attempt is None:
        return "no journal attempt for this marker: possible remote effect"
    m = entry.marker
    if (attempt.attempt_id, attempt.expected_revision, attempt.journal_epoch, attempt.marker_digest) != (
        m.attempt_id, m.expected_revision, m.journal_epoch, entry.digest
    ):
        return "journal attempt differs from the marker: possible remote effect"
    return None
