"""The grant-claim rules of marker_policy, each on its own (issue 14).

Two checks keep a marker from being granted twice: the early refusal of a marker that already
carries a grant claim (``check_marker_unclaimed``, before the fence and capacity) and the late one
(``require_claim_created``: granted only when this call created the claim). Each masks the other
on a plain rewind, so each is tested alone: the early one through the port (a claimed marker is
refused as an orphan even where capacity would have refused first), both as the public pure
policy functions the adapters share.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, WORKER, publish_marker, seal, submit, take_lease, week_parent

from sink.journal.marker_policy import (
    ORPHAN_CLAIMED_REASON,
    OrphanMarkerRefused,
    check_marker_unclaimed,
    grant_claim_for,
    marker_attempt_mismatch,
    require_claim_created,
)
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import LeaseKind, SubmitRequest

pytestmark = pytest.mark.timeout(60)

REQUEST = SubmitRequest("op_1", 3, 2, "sha256:" + "ab" * 32, WORKER, CAPACITY)
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def test_the_orphan_reason_is_the_documented_evidence_string() -> None:
    assert ORPHAN_CLAIMED_REASON == (
        "marker claimed by a critical submit the journal does not hold: possible remote effect")
    with pytest.raises(OrphanMarkerRefused) as refused:
        check_marker_unclaimed(True, REQUEST)
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER
    assert ORPHAN_CLAIMED_REASON in str(refused.value) and REQUEST.attempt_id in str(refused.value)


def test_an_unclaimed_marker_passes_the_early_check_and_a_claimed_one_is_refused() -> None:
    check_marker_unclaimed(False, REQUEST)
    with pytest.raises(OrphanMarkerRefused):
        check_marker_unclaimed(True, REQUEST)


def test_only_the_call_that_created_the_claim_is_granted() -> None:
    require_claim_created(True, REQUEST)
    with pytest.raises(OrphanMarkerRefused) as refused:
        require_claim_created(False, REQUEST)
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER


def test_two_submit_calls_never_write_equal_claims(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("claims")).children[0])
    first, second = (grant_claim_for(op, REQUEST, 1, NOW) for _ in range(2))
    assert first != second and replace(first, grant_nonce="") == replace(second, grant_nonce="")
    for claim in (first, second):
        assert re.fullmatch(r"[0-9a-f]{32}", claim.grant_nonce), "a 128-bit random nonce"
    assert (first.operation_id, first.attempt_ordinal, first.journal_epoch, first.claimed_at_utc) == (
        op.operation_id, 2, 1, NOW.isoformat())


def test_a_marker_without_an_attempt_is_reported_by_whether_it_was_claimed(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("report")).children[0])
    publish_marker(env.journal, env.markers, op)
    stored = env.markers.get(op.operation_namespace, op.operation_id, 1)
    assert stored is not None
    assert marker_attempt_mismatch(stored, None) == "no journal attempt for this marker: possible remote effect"
    assert marker_attempt_mismatch(stored, None, claimed=True) == ORPHAN_CLAIMED_REASON


def test_a_claimed_marker_is_refused_as_an_orphan_before_capacity_is_looked_at(journal_env: JournalEnv) -> None:
    """A lost grant (its claim survived, the journal forgot it) on a full capacity scope: the
    refusal is the orphan, so the operator sees the possible remote effect, not a capacity wait."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    admitted = env.journal.admit_parent(week_parent("orphan-first", weeks=2))
    holder, claimed = (seal(env.journal, child) for child in admitted.children)
    submit(env.journal, env.markers, holder)  # holds the only capacity slot
    take_lease(env.journal, LeaseKind.MUTATION, claimed.operation_id)
    digest = publish_marker(env.journal, env.markers, claimed)
    request = SubmitRequest(claimed.operation_id, claimed.revision, 1, digest, WORKER, CAPACITY)
    assert env.markers.claim_grant(grant_claim_for(claimed, request, env.journal.gate_status().journal_epoch, NOW))
    with pytest.raises(TransitionRejected) as refused:
        env.journal.reserve_and_mark_submitting(request)
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER
    assert env.journal.get_operation(claimed.operation_id) == claimed
