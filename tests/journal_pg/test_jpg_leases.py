"""Leases and capacity decided by the PostgreSQL server (its now()), never by a worker clock."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from threading import Barrier

import psycopg
import pytest
from jpg_support import TESTS_ONLY, daily_parent, drop_schema, new_schema, outcome_of, seal, submit

from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalRejection, LeaseUnavailable, RejectionReason
from sink.journal.postgres import open_postgres_journal
from sink.journal.records import LeaseKind, LeaseRequest, TransitionRequest

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


@dataclass
class Env:
    journal: DeliveryJournalPort
    markers: FileMarkerStore
    dsn: str
    schema: str

    def sql(self, query: str, *params: object) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.schema}"')
            conn.execute(query, params)


@pytest.fixture
def env(pg_dsn: str, tmp_path: Path) -> Iterator[Env]:
    schema = new_schema()
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers, max_connections=8)
    try:
        yield Env(journal, markers, pg_dsn, schema)
    finally:
        journal.close()
        drop_schema(pg_dsn, schema)


def test_jpg_lease_expiry_is_computed_from_the_database_clock(env: Env) -> None:
    ttl = timedelta(seconds=30)
    before = env.journal.now()
    lease = env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-1", "alice", ttl))
    after = env.journal.now()
    assert before + ttl <= lease.expires_at <= after + ttl
    assert lease.fencing_token == 1


def test_jpg_lease_takeover_follows_the_server_clock_not_sleeping(env: Env) -> None:
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-1", "alice", timedelta(hours=1)))
    with pytest.raises(LeaseUnavailable) as held:
        env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-1", "bob"))
    assert held.value.reason is RejectionReason.LEASE_HELD_BY_OTHER
    # Expire it on the server's clock only: no worker sleeps, no worker time is consulted.
    env.sql("UPDATE leases SET expires_at = now() - interval '1 millisecond'")
    taken = env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-1", "bob"))
    assert (taken.owner, taken.fencing_token) == ("bob", 2)
    with pytest.raises(JournalRejection) as not_held:
        env.journal.release_lease(LeaseKind.MUTATION, "op-1", "alice")
    assert not_held.value.reason is RejectionReason.LEASE_NOT_HELD


def test_jpg_lease_renewal_keeps_the_token_and_release_bumps_the_next_owner(env: Env) -> None:
    first = env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, "op-2", "alice", timedelta(seconds=5)))
    renewed = env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, "op-2", "alice", timedelta(seconds=60)))
    assert renewed.fencing_token == first.fencing_token
    assert renewed.expires_at > first.expires_at
    env.journal.release_lease(LeaseKind.OBSERVATION, "op-2", "alice")
    after_release = env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, "op-2", "bob"))
    assert after_release.fencing_token == first.fencing_token + 1
    # The three lease kinds are independent rows.
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-2", "carol"))
    env.journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, "op-2", "dave"))


def test_jpg_eight_threads_race_for_one_lease_exactly_one_wins(env: Env) -> None:
    barrier = Barrier(8)

    def contend(owner: str) -> str:
        barrier.wait(timeout=30)
        try:
            env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, "op-race", owner))
        except LeaseUnavailable:
            return "refused"
        return "won"

    for round_no in range(5):
        env.sql("DELETE FROM leases")
        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(contend, [f"w{round_no}-{i}" for i in range(8)]))
        assert outcomes.count("won") == 1, outcomes


def test_jpg_capacity_slots_are_never_oversubscribed_under_concurrency(env: Env) -> None:
    env.journal.configure_capacity("receiver-jobs", 3)
    ops = [seal(env.journal, c) for c in env.journal.admit_parent(daily_parent("cap", 8, domain="cap")).children]
    # Non-overlapping scopes in one domain: only capacity can refuse.
    barrier = Barrier(8)

    def contend(index: int) -> str:
        barrier.wait(timeout=30)
        try:
            submit(env.journal, env.markers, ops[index], owner=f"w{index}")
        except JournalRejection as exc:
            return outcome_of(exc)
        return "won"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(contend, range(8)))
    assert outcomes.count("won") == 3, outcomes
    assert set(outcomes) - {"won"} == {RejectionReason.CAPACITY_EXHAUSTED.value}
    status = env.journal.capacity_status("receiver-jobs")
    assert (status.slots, len(status.held_by_attempts), status.free) == (3, 3, 0)

    # Shrinking below the held count frees nothing; each release then retires a slot row.
    assert env.journal.configure_capacity("receiver-jobs", 1).free == -2
    winners = [op for op, outcome in zip(ops, outcomes, strict=True) if outcome == "won"]
    for op in winners:
        current = env.journal.get_operation(op.operation_id)
        assert current is not None
        owner = f"w{ops.index(op)}"
        current = env.journal.transition(TransitionRequest(current.operation_id, current.revision,
                                                           "sync_response_failed", lease_owner=owner))
        env.journal.transition(TransitionRequest(current.operation_id, current.revision, "verified_no_effect"))
    status = env.journal.capacity_status("receiver-jobs")
    assert (status.slots, status.held_by_attempts, status.free) == (1, (), 1)
    loser = next(i for i, outcome in enumerate(outcomes) if outcome != "won")
    assert submit(env.journal, env.markers, ops[loser], owner=f"w{loser}").attempt.capacity_scope == "receiver-jobs"
    assert env.journal.capacity_status("receiver-jobs").free == 0
