"""How a MAY_ATTEMPT marker must match its journal attempt (seed: "Zero-RPO mutation admission").

Pure checks shared by the adapters: the critical submit refuses a marker that does not bind the
exact attempt, and reconciliation reports every marker without an exactly matching attempt.

An existing marker is never permission. A marker binds an attempt only once: the submit that is
granted first publishes its grant claim (``markers.GrantClaim``) as its last step before COMMIT
and is granted only when that call created the claim (``require_claim_created``). A marker whose
claim exists while the journal holds no attempt for it (``check_marker_unclaimed``) was offered to
a grant the journal no longer knows (restore, failover, a lost commit): possible remote effect,
the submit is refused with ORPHAN_MARKER and the ordinal waits for operator-only retirement.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from sink.journal.ids import require_digest
from sink.journal.markers import GrantClaim, StoredMarker
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import ActorKind, Attempt, MarkerRetirement, OperationRow, SubmitRequest

ORPHAN_CLAIMED_REASON = "marker claimed by a critical submit the journal does not hold: possible remote effect"


class OrphanMarkerRefused(TransitionRejected):
    """The submit's marker was already claimed by a grant the journal does not hold."""

    def __init__(self, request: SubmitRequest) -> None:
        super().__init__(
            RejectionReason.ORPHAN_MARKER,
            f"attempt {request.attempt_id} (ordinal {request.attempt_ordinal}): {ORPHAN_CLAIMED_REASON}; "
            "never permission to resend: reconcile and retire it (operator only)",
        )


def check_marker_unclaimed(claimed: bool, request: SubmitRequest) -> None:
    """Refuse before any write when the next attempt's marker already carries a grant claim."""
    if claimed:
        raise OrphanMarkerRefused(request)


def grant_claim_for(row: OperationRow, request: SubmitRequest, epoch: int, now: datetime) -> GrantClaim:
    """The grant identity this submit writes next to its marker (a fresh nonce per call)."""
    return GrantClaim(
        operation_namespace=row.operation_namespace, operation_id=row.operation_id,
        attempt_ordinal=request.attempt_ordinal, attempt_id=request.attempt_id,
        marker_digest=request.marker_digest, expected_revision=request.expected_revision,
        journal_epoch=epoch, lease_owner=request.lease_owner,
        claimed_at_utc=now.isoformat(), grant_nonce=secrets.token_hex(16),
    )


def require_claim_created(created: bool, request: SubmitRequest) -> None:
    """Grant only when this call created the claim: at most one grant per marker, by construction."""
    if not created:
        raise OrphanMarkerRefused(request)


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


def marker_attempt_mismatch(entry: StoredMarker, attempt: Attempt | None, *, claimed: bool = False) -> str | None:
    """None when the journal holds exactly the attempt the marker announced; else why not.
    ``claimed``: the marker carries a grant claim (it was offered to a grant that may have run)."""
    if attempt is None:
        if claimed:
            return ORPHAN_CLAIMED_REASON
        return "no journal attempt for this marker: possible remote effect"
    m = entry.marker
    if (attempt.attempt_id, attempt.expected_revision, attempt.journal_epoch, attempt.marker_digest) != (
        m.attempt_id, m.expected_revision, m.journal_epoch, entry.digest
    ):
        return "journal attempt differs from the marker: possible remote effect"
    return None


def check_retirement_request(request: MarkerRetirement) -> str:
    """Refuse an automatic actor or a missing reconciliation id; return the reconciliation id."""
    require_digest(request.marker_digest, "marker_digest")
    require_digest(request.evidence_digest, "evidence_digest")
    reconciliation_id = request.actor.reconciliation_id
    if request.actor.kind is not ActorKind.OPERATOR or reconciliation_id is None:
        raise JournalRejection(
            RejectionReason.OPERATOR_REQUIRED,
            "retiring a MAY_ATTEMPT marker is operator-only: needs an operator actor and a reconciliation id",
        )
    return reconciliation_id


def check_retirable(
    request: MarkerRetirement, row: OperationRow, stored: StoredMarker | None, *,
    attempt_exists: bool, reconciliation_used: bool,
) -> None:
    """Only the orphan that blocks the next submit may be retired: the marker of ordinal
    ``attempt_count + 1``, exactly as published, with no journal attempt at that ordinal."""
    if reconciliation_used:
        raise JournalRejection(RejectionReason.INVALID_REQUEST, "a reconciliation id is never reused on one operation")
    if attempt_exists:
        raise JournalRejection(
            RejectionReason.MARKER_NOT_ORPHAN,
            f"attempt {request.attempt_ordinal} exists in the journal: its marker is not an orphan",
        )
    if request.attempt_ordinal != row.attempt_count + 1:
        raise JournalRejection(
            RejectionReason.ATTEMPT_ORDINAL_NOT_NEXT,
            f"only the marker of the next ordinal {row.attempt_count + 1} can be retired, "
            f"got {request.attempt_ordinal}",
        )
    if stored is None:
        raise JournalRejection(
            RejectionReason.MARKER_MISSING, f"no readable MAY_ATTEMPT marker for attempt {request.attempt_ordinal}"
        )
    if stored.digest != request.marker_digest or stored.marker.operation_id != row.operation_id:
        raise JournalRejection(RejectionReason.MARKER_MISMATCH, "the stored marker is not the one named for retirement")
