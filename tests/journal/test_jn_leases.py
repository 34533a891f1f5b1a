"""Leases decided on the database clock: exclusive until expiry, renewable, fenced by a token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv

from sink.journal.port import JournalRejection, LeaseUnavailable, RejectionReason
from sink.journal.records import LeaseKind, LeaseRequest

pytestmark = pytest.mark.timeout(60)

TTL = timedelta(seconds=1)


def test_lease_expiry_is_measured_on_the_database_clock(journal_env: JournalEnv) -> None:
    journal = journal_env.journal
    before = journal.now()
    lease = journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op_1", "worker-1", TTL))
    after = journal.now()
    assert before.tzinfo is not None
    assert before + TTL <= lease.expires_at <= after + TTL
    assert lease.fencing_token == 1


def test_other_owner_waits_for_expiry_and_gets_a_higher_token(journal_env: JournalEnv) -> None:
    env = journal_env
    first = env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op_1", "worker-1", TTL))
    with pytest.raises(LeaseUnavailable) as caught:
        env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op_1", "worker-2", TTL))
    assert caught.value.reason is RejectionReason.LEASE_HELD_BY_OTHER
    assert env.journal.get_lease(LeaseKind.MUTATION, "op_1") == first

    env.advance(TTL * 1.5)
    second = env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op_1", "worker-2", TTL))
    assert (second.owner, second.fencing_token) == ("worker-2", first.fencing_token + 1)


def test_same_owner_renews_without_new_token(journal_env: JournalEnv) -> None:
    env = journal_env
    first = env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, "op_1", "poller", TTL))
    env.advance(TTL / 2)
    renewed = env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, "op_1", "poller", TTL))
    assert renewed.fencing_token == first.fencing_token
    assert renewed.expires_at > first.expires_at


def test_lease_kinds_are_independent(journal_env: JournalEnv) -> None:
    journal = journal_env.journal
    held = {kind: journal.acquire_lease(LeaseRequest(kind, "op_1", f"owner-{kind.value}", TTL)) for kind in LeaseKind}
    assert {lease.owner for lease in held.values()} == {f"owner-{k.value}" for k in LeaseKind}


def test_release_by_holder_only(journal_env: JournalEnv) -> None:
    journal = journal_env.journal
    journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, "parent-1", "ck-1", timedelta(seconds=60)))
    with pytest.raises(JournalRejection) as caught:
        journal.release_lease(LeaseKind.CHECKPOINT, "parent-1", "ck-2")
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    journal.release_lease(LeaseKind.CHECKPOINT, "parent-1", "ck-1")
    taken = journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, "parent-1", "ck-2", timedelta(seconds=60)))
    assert taken.owner == "ck-2" and taken.fencing_token == 2
