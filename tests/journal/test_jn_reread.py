"""After JournalUnavailable: only an unknown outcome needs a reread, and the reread decides."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, WORKER, digest, publish_marker, seal, take_lease, week_parent

from sink.journal.markers import GrantClaim
from sink.journal.port import JournalRejection, JournalUnavailable, RejectionReason, UnavailableOutcome
from sink.journal.records import LeaseKind, OperationRow, SubmitRequest
from sink.journal.reread import SubmitReread, must_reread, reread_submit

pytestmark = pytest.mark.timeout(60)


def _ready(env: JournalEnv, key: str) -> tuple[OperationRow, SubmitRequest]:
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent(key)).children[0])
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id)
    request = SubmitRequest(op.operation_id, op.revision, 1, publish_marker(env.journal, env.markers, op), WORKER,
                            CAPACITY)
    return op, request


def test_only_an_unknown_outcome_must_be_reread() -> None:
    assert must_reread(JournalUnavailable("lost in COMMIT", outcome=UnavailableOutcome.OUTCOME_UNKNOWN))
    assert not must_reread(JournalUnavailable("no connection"))


def test_reread_tells_granted_orphan_and_nothing(journal_env: JournalEnv) -> None:
    env = journal_env
    op, request = _ready(env, "reread-nothing")
    assert reread_submit(env.journal, env.markers, request) is SubmitReread.NOT_GRANTED
    env.journal.reserve_and_mark_submitting(request)
    assert reread_submit(env.journal, env.markers, request) is SubmitReread.GRANTED_NOT_SENT
    other = SubmitRequest(op.operation_id, op.revision, 1, digest("another marker"), WORKER, CAPACITY)
    with pytest.raises(JournalRejection) as mismatch:
        reread_submit(env.journal, env.markers, other)
    assert mismatch.value.reason is RejectionReason.MARKER_MISMATCH

    lost, lost_request = _ready(env, "reread-orphan")
    assert env.markers.claim_grant(GrantClaim(
        lost.operation_namespace, lost.operation_id, 1, lost_request.attempt_id, lost_request.marker_digest,
        lost.revision, 1, WORKER, datetime.now(UTC).isoformat(), "nonce"))
    assert reread_submit(env.journal, env.markers, lost_request) is SubmitReread.ORPHAN
