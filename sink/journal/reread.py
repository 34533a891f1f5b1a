"""What a worker does after a critical submit raised JournalUnavailable (seed: "only after
confirmed commit, execute HTTP").

``outcome_unknown``: the COMMIT may have happened, so the caller must NOT send; after reconnecting
it rereads the journal (``reread_submit``) and acts on what the journal and the marker store hold:

* ``GRANTED_NOT_SENT``: the attempt row is there (the grant committed) but this worker sent
  nothing: it holds REQUEST_NOT_STARTED proof for that attempt (``request_not_started_retry`` /
  ``request_not_started_final`` under its mutation lease), never a silent send now;
* ``ORPHAN``: no attempt row, but the marker carries a grant claim: the next submit will be
  refused as an orphan; reconciliation (operator-only retirement) decides;
* ``NOT_GRANTED``: no attempt row and no claim: nothing happened, the same submit may be retried.

``not_sent`` needs no reread: nothing of the transaction was committed.
"""

from __future__ import annotations

from enum import StrEnum

from sink.journal.markers import MarkerStore
from sink.journal.port import DeliveryJournalPort, JournalRejection, JournalUnavailable, RejectionReason
from sink.journal.records import Attempt, SubmitRequest


class SubmitReread(StrEnum):
    GRANTED_NOT_SENT = "granted_not_sent"
    ORPHAN = "orphan"
    NOT_GRANTED = "not_granted"


def must_reread(exc: JournalUnavailable) -> bool:
    """True when the failed critical transaction may have committed: do not send, reread."""
    return exc.may_have_committed


def classify_submit(request: SubmitRequest, attempt: Attempt | None, claimed: bool) -> SubmitReread:
    """The decision, pure: ``attempt`` is the journal's attempt at the request's ordinal (if any),
    ``claimed`` whether the marker store holds the grant claim of that ordinal."""
    if attempt is not None:
        if (attempt.attempt_id, attempt.marker_digest) != (request.attempt_id, request.marker_digest):
            raise JournalRejection(
                RejectionReason.MARKER_MISMATCH,
                f"attempt {attempt.attempt_id} in the journal is not the one this submit asked for",
            )
        return SubmitReread.GRANTED_NOT_SENT
    return SubmitReread.ORPHAN if claimed else SubmitReread.NOT_GRANTED


def reread_submit(journal: DeliveryJournalPort, markers: MarkerStore, request: SubmitRequest) -> SubmitReread:
    """Reread after reconnecting (raises JournalUnavailable again while the journal is still down)."""
    op = journal.get_operation(request.operation_id)
    if op is None:
        raise JournalRejection(RejectionReason.UNKNOWN_OPERATION, f"no operation {request.operation_id}")
    attempt = next((a for a in journal.list_attempts(op.operation_id) if a.attempt_ordinal == request.attempt_ordinal),
                   None)
    claimed = markers.grant_claimed(op.operation_namespace, op.operation_id, request.attempt_ordinal)
    return classify_submit(request, attempt, claimed)
