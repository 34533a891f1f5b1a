"""An existing MAY_ATTEMPT marker is never permission: the grant claim, on both adapters.

A claimed marker without its journal attempt is what a rewound journal leaves behind (the grant
committed, the journal lost it, the marker store kept marker and claim). It is made here by
claiming the marker directly in the store, the way the lost grant did.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import JournalEnv, postgres_journal_env
from jn_builders import CAPACITY, WORKER, digest, publish_marker, seal, submit, take_lease, week_parent

from sink.journal.marker_policy import ORPHAN_CLAIMED_REASON
from sink.journal.markers import FileMarkerStore, GrantClaim, namespace_key
from sink.journal.port import CapacityExhausted, DeliveryJournalPort, JournalRejection, RejectionReason
from sink.journal.records import Actor, ActorKind, LeaseKind, MarkerRetirement, OperationRow, SubmitRequest
from sink.journal.sqlite.adapter import open_sqlite_journal

pytestmark = pytest.mark.timeout(60)

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-claim-1")


def _sealed(journal: DeliveryJournalPort, key: str) -> OperationRow:
    op = seal(journal, journal.admit_parent(week_parent(key)).children[0])
    take_lease(journal, LeaseKind.MUTATION, op.operation_id)
    return op


def _request(op: OperationRow, marker_digest: str) -> SubmitRequest:
    return SubmitRequest(op.operation_id, op.revision, op.attempt_count + 1, marker_digest, WORKER, CAPACITY)


def _lost_grant(markers: FileMarkerStore, op: OperationRow, marker_digest: str) -> None:
    """The claim a granted submit wrote before the journal that held its attempt was rewound."""
    request = _request(op, marker_digest)
    assert markers.claim_grant(GrantClaim(
        op.operation_namespace, op.operation_id, request.attempt_ordinal, request.attempt_id, marker_digest,
        op.revision, 1, WORKER, datetime.now(UTC).isoformat(), "lost-grant-nonce",
    ))


def _claim_file(markers: FileMarkerStore, op: OperationRow, ordinal: int) -> Path:
    return (markers.root / namespace_key(op.operation_namespace) / op.operation_id
            / f"{ordinal:010d}.grant.json")


def test_claimed_marker_without_attempt_refuses_and_writes_nothing(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 2)
    op = _sealed(env.journal, "claimed")
    marker_digest = publish_marker(env.journal, env.markers, op)
    _lost_grant(env.markers, op, marker_digest)
    with pytest.raises(JournalRejection) as refused:
        env.journal.reserve_and_mark_submitting(_request(op, marker_digest))
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER
    assert "possible remote effect" in str(refused.value)
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()
    orphans = env.journal.find_orphan_markers()
    assert [(o.operation_id, o.attempt_ordinal, o.marker_digest, o.reason) for o in orphans] == [
        (op.operation_id, 1, marker_digest, ORPHAN_CLAIMED_REASON)]


def test_orphan_refusal_comes_before_the_fence_and_capacity(journal_env: JournalEnv) -> None:
    """The supervisor gets the reconciliation reason, not a retryable capacity refusal."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 0)
    op = _sealed(env.journal, "claimed-full")
    marker_digest = publish_marker(env.journal, env.markers, op)
    with pytest.raises(CapacityExhausted):
        env.journal.reserve_and_mark_submitting(_request(op, marker_digest))
    _lost_grant(env.markers, op, marker_digest)
    with pytest.raises(JournalRejection) as refused:
        env.journal.reserve_and_mark_submitting(_request(op, marker_digest))
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER


def test_grant_claims_its_marker_and_a_refused_submit_does_not(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 0)
    op = _sealed(env.journal, "claims")
    marker_digest = publish_marker(env.journal, env.markers, op)
    with pytest.raises(CapacityExhausted):
        env.journal.reserve_and_mark_submitting(_request(op, marker_digest))
    assert not env.markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
    env.journal.configure_capacity(CAPACITY, 1)
    grant = env.journal.reserve_and_mark_submitting(_request(op, marker_digest))  # same marker, unclaimed
    assert env.markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
    claim = json.loads(_claim_file(env.markers, op, 1).read_bytes())
    assert {k: claim[k] for k in ("attempt_id", "marker_digest", "expected_revision", "journal_epoch",
                                  "lease_owner", "attempt_ordinal", "operation_id")} == {
        "attempt_id": grant.attempt.attempt_id, "marker_digest": marker_digest,
        "expected_revision": op.revision, "journal_epoch": 1, "lease_owner": WORKER,
        "attempt_ordinal": 1, "operation_id": op.operation_id}
    assert len(claim["grant_nonce"]) == 32
    assert env.journal.find_orphan_markers() == ()  # granted: the claim matches a journal attempt


def test_claimed_orphan_is_retired_by_an_operator_then_the_next_ordinal_is_granted(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 2)
    op = _sealed(env.journal, "claimed-retired")
    marker_digest = publish_marker(env.journal, env.markers, op)
    _lost_grant(env.markers, op, marker_digest)
    retired = env.journal.retire_orphan_marker(MarkerRetirement(
        op.operation_id, 1, marker_digest, digest("receiver: no job for attempt 1"), OPERATOR))
    assert retired.attempt_count == 1
    assert submit(env.journal, env.markers, retired).attempt.attempt_ordinal == 2
    assert env.journal.find_orphan_markers() == ()


class RacingClaimStore(FileMarkerStore):
    """Says 'unclaimed' at the early check, as when another grant claims the marker in between:
    the claim written right before COMMIT is then what refuses."""

    def grant_claimed(self, operation_namespace: str, operation_id: str, attempt_ordinal: int) -> bool:
        return False


@pytest.fixture(params=["sqlite", "postgres"])
def racing_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JournalEnv]:
    markers = RacingClaimStore(tmp_path / "markers")
    if request.param == "postgres":
        with postgres_journal_env(request.getfixturevalue("pg_dsn"), markers) as env:
            yield env
        return
    journal = open_sqlite_journal(tmp_path / "j.sqlite3", markers=markers)
    try:
        yield JournalEnv(journal, markers, lambda _delta: None, "sqlite")
    finally:
        journal.close()


def test_only_the_call_that_creates_the_claim_is_granted(racing_env: JournalEnv) -> None:
    env = racing_env
    env.journal.configure_capacity(CAPACITY, 2)
    op = _sealed(env.journal, "claim-race")
    marker_digest = publish_marker(env.journal, env.markers, op)
    _lost_grant(env.markers, op, marker_digest)
    with pytest.raises(JournalRejection) as refused:
        env.journal.reserve_and_mark_submitting(_request(op, marker_digest))
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER
    assert env.journal.get_operation(op.operation_id) == op  # rolled back: attempt, slot and CAS
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()


def test_marker_store_claims_once_and_never_lists_claims_as_markers(tmp_path: Path) -> None:
    markers = FileMarkerStore(tmp_path)
    journal = open_sqlite_journal(tmp_path / "j.sqlite3", markers=FileMarkerStore(tmp_path / "m"))
    try:
        op = seal(journal, journal.admit_parent(week_parent("store")).children[0])
        marker_digest = publish_marker(journal, markers, op)
    finally:
        journal.close()
    claim = GrantClaim(op.operation_namespace, op.operation_id, 1, "a", marker_digest, op.revision, 1, WORKER,
                       "t", "nonce-1")
    assert not markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
    assert markers.claim_grant(claim) is True
    assert markers.claim_grant(claim) is False  # even the identical claim: only one creator, ever
    assert markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
    assert not markers.grant_claimed(op.operation_namespace, op.operation_id, 2)
    assert [entry.digest for entry in markers.scan()] == [marker_digest]  # type: ignore[union-attr]
