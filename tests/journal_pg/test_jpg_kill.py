"""A process SIGKILLed inside each critical transaction leaves no partial state.

The victim runs the adapter in a spawned process whose fault hook pauses at a named point
inside the open transaction; the test checks the transaction is really open on the server,
kills the process, waits for the server to end that backend, and compares every journal table
with its content before the attempt. The same operation then succeeds from another process
(no lock or half-written row is left behind).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from jpg_support import (
    TESTS_ONLY,
    daily_parent,
    drop_schema,
    new_schema,
    pausing_worker,
    publish_marker,
    seal,
    submit,
    submit_request,
)

from sink.journal.marker_policy import ORPHAN_CLAIMED_REASON
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalRejection, RejectionReason
from sink.journal.postgres import open_postgres_journal
from sink.journal.records import LeaseKind, LeaseRequest, TransitionRequest

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

TABLES = ("parents", "operations", "attempts", "capacity_slots", "transition_log", "receipts",
          "applied_generation_map", "rest_delivery_effect_domain_lock", "journal_epoch", "leases", "observations")


@dataclass
class Env:
    journal: DeliveryJournalPort
    markers: FileMarkerStore
    marker_root: Path
    dsn: str
    schema: str

    def snapshot(self) -> dict[str, str]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.schema}", public')
            result: dict[str, str] = {}
            for table in TABLES:
                row = conn.execute(f"SELECT coalesce(string_agg(t::text, '|' ORDER BY t::text), '') FROM {table} t"
                                   ).fetchone()
                assert row is not None
                result[table] = str(row[0])
            return result

    def open_transactions(self) -> int:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
            ).fetchone()
            assert row is not None
            return int(row[0])

    def kill_at(self, point: str, action: str, payload: Any) -> None:
        ctx = mp.get_context("spawn")
        paused = ctx.Event()
        proc = ctx.Process(target=pausing_worker,
                           args=(self.dsn, self.schema, str(self.marker_root), point, action, payload, paused))
        proc.start()
        try:
            assert paused.wait(timeout=60), f"worker never reached {point} (exit code {proc.exitcode})"
            assert self.open_transactions() >= 1, "the paused worker should hold an open transaction"
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(timeout=10)
            assert proc.exitcode == -signal.SIGKILL
        finally:
            if proc.is_alive():
                proc.kill()
        deadline = time.monotonic() + 15
        while self.open_transactions() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.open_transactions() == 0, "the server kept the killed client's transaction open"


@pytest.fixture
def env(pg_dsn: str, tmp_path: Path) -> Iterator[Env]:
    schema = new_schema()
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers)
    journal.configure_capacity("receiver-jobs", 4)
    try:
        yield Env(journal, markers, tmp_path / "markers", pg_dsn, schema)
    finally:
        journal.close()
        drop_schema(pg_dsn, schema)


@pytest.mark.parametrize("point", ["admit.parent_inserted", "admit.before_commit"])
def test_jpg_kill_inside_admission_leaves_nothing(env: Env, point: str) -> None:
    parent = daily_parent("kill-admit", 50)
    before = env.snapshot()
    env.kill_at(point, "admit", parent)
    assert env.snapshot() == before
    admitted = env.journal.admit_parent(parent)
    assert admitted.created and len(admitted.children) == 50


@pytest.mark.parametrize("point", ["submit.attempt_appended", "submit.before_commit"])
def test_jpg_kill_inside_critical_submit_leaves_nothing(env: Env, point: str) -> None:
    op = seal(env.journal, env.journal.admit_parent(daily_parent("kill-submit", 2)).children[0])
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(env.journal, env.markers, op), "w1")
    before = env.snapshot()
    env.kill_at(point, "submit", request)
    assert env.snapshot() == before
    assert env.journal.capacity_status("receiver-jobs").held_by_attempts == ()
    grant = env.journal.reserve_and_mark_submitting(request)
    assert grant.operation.axes.execution_state.value == "SUBMITTING"
    assert env.journal.capacity_status("receiver-jobs").held_by_attempts == (request.attempt_id,)


@pytest.mark.parametrize("point", ["transition.updated", "transition.before_commit"])
def test_jpg_kill_inside_effect_transition_leaves_nothing(env: Env, point: str) -> None:
    op = seal(env.journal, env.journal.admit_parent(daily_parent("kill-transition", 1)).children[0])
    op = submit(env.journal, env.markers, op, "w1").operation
    op = env.journal.transition(TransitionRequest(op.operation_id, op.revision, "sync_response_succeeded",
                                                  lease_owner="w1"))
    request = TransitionRequest(op.operation_id, op.revision, "verified_full")
    before = env.snapshot()
    env.kill_at(point, "transition", request)
    assert env.snapshot() == before
    assert env.journal.effect_intervals("domain-a") == ()
    done = env.journal.transition(request)
    assert done.axes.remote_effect.value == "FULLY_APPLIED"
    assert len(env.journal.effect_intervals("domain-a")) == 1
    assert env.journal.capacity_status("receiver-jobs").held_by_attempts == ()


def test_jpg_kill_after_the_grant_claim_leaves_an_orphan_never_a_second_grant(env: Env) -> None:
    """Killed after the marker's grant claim, before COMMIT: the journal holds nothing, and the same
    request is refused (the claim may belong to a grant whose POST went out): reconciliation work."""
    op = seal(env.journal, env.journal.admit_parent(daily_parent("kill-claimed", 1)).children[0])
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(env.journal, env.markers, op), "w1")
    before = env.snapshot()
    env.kill_at("submit.marker_claimed", "submit", request)
    assert env.snapshot() == before
    with pytest.raises(JournalRejection) as refused:
        env.journal.reserve_and_mark_submitting(request)
    assert refused.value.reason is RejectionReason.ORPHAN_MARKER
    assert env.snapshot() == before
    assert [(o.attempt_id, o.reason) for o in env.journal.find_orphan_markers()] == [
        (request.attempt_id, ORPHAN_CLAIMED_REASON)]
