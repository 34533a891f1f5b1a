"""Zero-RPO mode on a real primary + synchronous standby (pg_basebackup -R -X stream, 127.0.0.1).

* standby stopped: the critical submit is refused before commit and nothing is written;
* standby back: the same submit proceeds;
* standby streaming but not applying (replay paused): COMMIT's wait is cancelled by the bound,
  PostgreSQL returns success with the "canceling wait for synchronous replication" WARNING, and
  the journal refuses the submit, closes the mutation gate and records the unconfirmed commit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from jpg_support import daily_parent, publish_marker, seal, submit_request

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError, ZeroRpoNotProven
from sink.journal.postgres import ZeroRpoPolicy, open_postgres_journal
from sink.journal.postgres.cluster import Cluster, ClusterSet
from sink.journal.records import Actor, ActorKind, GateState, LeaseKind, LeaseRequest, OperationRow

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(180)]

SCHEMA = "zero_rpo_journal"


@dataclass
class Pair:
    primary: Cluster
    standby: Cluster
    journal: DeliveryJournalPort
    markers: FileMarkerStore

    def wait_for_quorum(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.primary.dsn(), autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' "
                                   "AND sync_state IN ('sync', 'quorum')").fetchone()
                if row and int(row[0]) >= 1:
                    return
                time.sleep(0.1)
        raise AssertionError("standby never became a streaming synchronous standby")

    def on_standby(self, query: str) -> object:
        with psycopg.connect(self.standby.dsn(), autocommit=True) as conn:
            row = conn.execute(query).fetchone()
            return None if row is None else row[0]

    def prepare_submit(self, key: str) -> tuple[OperationRow, str]:
        op = seal(self.journal, self.journal.admit_parent(daily_parent(key, 1, domain=key)).children[0])
        self.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
        return op, publish_marker(self.journal, self.markers, op)


@pytest.fixture
def pair(pg_cluster: ClusterSet, tmp_path: Path) -> Iterator[Pair]:
    primary = pg_cluster.primary({"synchronous_commit": "on"})
    standby = pg_cluster.standby(primary, "s1")
    with psycopg.connect(primary.dsn(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1)'")
        conn.execute("SELECT pg_reload_conf()")
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_postgres_journal(primary.dsn(), schema=SCHEMA, markers=markers,
                                    zero_rpo=ZeroRpoPolicy(required_standbys=1, commit_wait_s=1.5))
    result = Pair(primary, standby, journal, markers)
    result.wait_for_quorum()
    journal.configure_capacity("receiver-jobs", 8)
    try:
        yield result
    finally:
        journal.close()


def test_jpg_zero_rpo_refuses_submit_without_standby_then_proceeds_when_it_returns(pair: Pair) -> None:
    op, marker_digest = pair.prepare_submit("zr-stop")
    request = submit_request(op, marker_digest, "w1")
    assert pair.journal.critical_commit_guard is not None

    pair.standby.stop()
    started = time.monotonic()
    with pytest.raises(ZeroRpoNotProven, match="synchronous standby"):
        pair.journal.reserve_and_mark_submitting(request)
    assert time.monotonic() - started < 10, "the refusal must not wait on the missing standby"
    stored = pair.journal.get_operation(op.operation_id)
    assert stored is not None and stored.axes.execution_state.value == "SEALED"
    assert stored.revision == op.revision
    assert pair.journal.list_attempts(op.operation_id) == ()
    assert pair.journal.capacity_status("receiver-jobs").held_by_attempts == ()
    with pytest.raises(ZeroRpoNotProven):  # every critical transaction, admission included
        pair.journal.admit_parent(daily_parent("zr-stop-other", 1, domain="zr-other"))
    assert pair.journal.get_parent(daily_parent("zr-stop-other", 1).parent_id) is None
    assert pair.journal.gate_status().state is GateState.OPEN  # nothing committed, nothing to distrust
    assert pair.journal.list_unconfirmed_critical_commits() == ()  # refused before commit: nothing to reconcile

    pair.standby.start()
    pair.wait_for_quorum()
    grant = pair.journal.reserve_and_mark_submitting(request)
    assert grant.operation.axes.execution_state.value == "SUBMITTING"
    # remote_apply: the standby has applied the critical commit before the journal returned.
    applied = pair.on_standby(
        f"SELECT execution_state FROM {SCHEMA}.operations WHERE operation_id = '{op.operation_id}'"
    )
    assert applied == "SUBMITTING"


def test_jpg_zero_rpo_unconfirmed_commit_warning_refuses_and_blocks_the_gate(pair: Pair) -> None:
    op, marker_digest = pair.prepare_submit("zr-paused")
    other, other_marker = pair.prepare_submit("zr-paused-next")
    assert pair.journal.list_unconfirmed_critical_commits() == ()
    before = datetime.now(UTC)
    pair.on_standby("SELECT pg_wal_replay_pause()")
    try:
        started = time.monotonic()
        with pytest.raises(ZeroRpoNotProven, match="BLOCKED"):
            pair.journal.reserve_and_mark_submitting(submit_request(op, marker_digest, "w1"))
        assert 1.4 < time.monotonic() - started < 10, "the commit wait is bounded by commit_wait_s"
    finally:
        pair.on_standby("SELECT pg_wal_replay_resume()")
    # The row is committed locally although replication was not confirmed; the journal says so.
    stored = pair.journal.get_operation(op.operation_id)
    assert stored is not None and stored.axes.execution_state.value == "SUBMITTING"
    gate = pair.journal.gate_status()
    assert gate.state is GateState.BLOCKED
    assert "synchronous replication unconfirmed" in gate.reason
    with psycopg.connect(pair.primary.dsn(), autocommit=True) as conn:
        row = conn.execute(f"SELECT transaction_name, subject_id FROM {SCHEMA}.unconfirmed_critical_commits"
                           ).fetchone()
    assert row == ("reserve_and_mark_submitting", op.operation_id)
    # Reconciliation reads the same record through the port.
    (unconfirmed,) = pair.journal.list_unconfirmed_critical_commits()
    assert (unconfirmed.transaction_name, unconfirmed.subject_id) == ("reserve_and_mark_submitting", op.operation_id)
    assert before - timedelta(seconds=5) <= unconfirmed.detected_at <= datetime.now(UTC) + timedelta(seconds=5)
    # Nothing else may proceed until an operator attests a new epoch.
    with pytest.raises(DeliveryError) as refused:
        pair.journal.reserve_and_mark_submitting(submit_request(other, other_marker, "w1"))
    assert refused.value.code is ErrorCode.JOURNAL_EPOCH_BLOCKED
    # The attestation reopens the gate but keeps the record: it is the reconciliation trail.
    pair.wait_for_quorum()
    attested = pair.journal.attest_epoch(new_epoch=2, actor=Actor(ActorKind.OPERATOR, "oncall"),
                                         attestation_digest="sha256:" + "ab" * 32)
    assert attested.state is GateState.OPEN
    assert pair.journal.list_unconfirmed_critical_commits() == (unconfirmed,)


def test_jpg_zero_rpo_required_without_policy_refuses_to_open(pg_dsn: str, tmp_path: Path) -> None:
    with pytest.raises(JournalConfigurationError, match="zero-RPO"):
        open_postgres_journal(pg_dsn, schema="zr_refused", markers=FileMarkerStore(tmp_path), require_zero_rpo=True)


def test_jpg_zero_rpo_without_synchronous_standby_names_refuses(pg_cluster: ClusterSet, tmp_path: Path) -> None:
    lone = pg_cluster.primary()
    journal = open_postgres_journal(lone.dsn(), schema="zr_lone", markers=FileMarkerStore(tmp_path),
                                    zero_rpo=ZeroRpoPolicy(commit_wait_s=1.0))
    try:
        with pytest.raises(ZeroRpoNotProven, match="synchronous_standby_names is empty"):
            journal.admit_parent(daily_parent("zr-lone", 1))
        assert journal.get_parent(daily_parent("zr-lone", 1).parent_id) is None
    finally:
        journal.close()
