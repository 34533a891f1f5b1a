"""Critical transactions refuse lossy durability; an unavailable journal says what it knows.

Runs on the shared durable cluster (tests/journal_pg/jpg_durable_cluster.py: fsync on, synchronous_commit
OFF by default with a 10 s WAL writer delay, so only the journal's per-transaction pin makes a
commit durable), plus the lossy session cluster of tests/conftest.py for the refusal at open.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from jpg_crash_support import set_server_setting
from jpg_durable_cluster import durable_cluster_fixture  # noqa: F401 - provides `durable_cluster`
from jpg_support import CAPACITY, daily_parent, publish_marker, seal, submit, submit_request

from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import (
    EXIT_UNAVAILABLE,
    DeliveryJournalPort,
    JournalConfigurationError,
    JournalDurabilityNotProven,
    JournalUnavailable,
    UnavailableCode,
    UnavailableOutcome,
)
from sink.journal.postgres import ZeroRpoPolicy, open_postgres_journal
from sink.journal.postgres.cluster import Cluster
from sink.journal.records import LeaseKind, LeaseRequest
from sink.journal.reread import SubmitReread, reread_submit

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


@dataclass
class Durable:
    cluster: Cluster
    journal: DeliveryJournalPort
    markers: FileMarkerStore
    schema: str

    def scalar(self, query: str) -> object:
        with psycopg.connect(self.cluster.dsn(), autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.schema}", public')
            row = conn.execute(query).fetchone()
            assert row is not None
            return row[0]


@pytest.fixture
def durable(durable_cluster: Cluster, tmp_path: Path) -> Iterator[Durable]:
    schema = "dur_" + uuid.uuid4().hex[:10]
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_postgres_journal(durable_cluster.dsn(), schema=schema, markers=markers, connect_timeout_s=3)
    journal.configure_capacity(CAPACITY, 8)
    try:
        yield Durable(durable_cluster, journal, markers, schema)
    finally:
        journal.close()


def test_durable_open_refuses_a_server_running_fsync_off(pg_dsn: str, tmp_path: Path) -> None:
    schema = "dur_refused_" + uuid.uuid4().hex[:8]
    with pytest.raises(JournalDurabilityNotProven) as refused:
        open_postgres_journal(pg_dsn, schema=schema, markers=FileMarkerStore(tmp_path))
    assert refused.value.code is UnavailableCode.DURABILITY_NOT_PROVEN
    assert refused.value.exit_code == EXIT_UNAVAILABLE == 3
    assert refused.value.outcome is UnavailableOutcome.NOT_SENT and not refused.value.may_have_committed
    assert "fsync=off" in str(refused.value)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # refused before anything was written
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None


def test_non_durable_mode_cannot_carry_zero_rpo(tmp_path: Path) -> None:
    with pytest.raises(JournalConfigurationError, match="durable"):
        open_postgres_journal("host=127.0.0.1 port=1", schema="never", markers=FileMarkerStore(tmp_path),
                              zero_rpo=ZeroRpoPolicy(), durability=Durability.NON_DURABLE_TESTS_ONLY)


def test_critical_commit_is_flushed_although_the_server_default_is_lossy(durable: Durable) -> None:
    """synchronous_commit is off on the server; the submit pins it on inside its transaction, so
    when it returns its commit record is already flushed (the WAL writer would wait 10 s)."""
    op = seal(durable.journal, durable.journal.admit_parent(daily_parent("pinned", 1)).children[0])
    durable.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(durable.journal, durable.markers, op), "w1")
    before = str(durable.scalar("SELECT pg_current_wal_insert_lsn()"))
    durable.journal.reserve_and_mark_submitting(request)
    flushed = durable.scalar(f"SELECT pg_current_wal_flush_lsn() > '{before}'::pg_lsn")
    assert flushed is True


def test_fsync_turned_off_after_open_refuses_the_grant_and_writes_nothing(durable: Durable) -> None:
    op = seal(durable.journal, durable.journal.admit_parent(daily_parent("fsync-off", 1)).children[0])
    durable.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(durable.journal, durable.markers, op), "w1")
    set_server_setting(durable.cluster, "fsync", "off")
    try:
        with pytest.raises(JournalDurabilityNotProven) as refused:
            durable.journal.reserve_and_mark_submitting(request)
        assert refused.value.code is UnavailableCode.DURABILITY_NOT_PROVEN
        assert durable.journal.get_operation(op.operation_id) == op
        assert durable.journal.list_attempts(op.operation_id) == ()
        assert not durable.markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
    finally:
        set_server_setting(durable.cluster, "fsync", None, expected="on")
    assert durable.journal.reserve_and_mark_submitting(request).attempt.attempt_ordinal == 1


def test_commit_lost_in_flight_is_outcome_unknown_and_never_a_second_grant(durable: Durable) -> None:
    """The backend dies during COMMIT (a deferred trigger terminates it): the caller is told the
    outcome is unknown; rereading shows no attempt and the claimed marker as an orphan."""
    op = seal(durable.journal, durable.journal.admit_parent(daily_parent("dies", 1)).children[0])
    durable.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(durable.journal, durable.markers, op), "w1")
    with psycopg.connect(durable.cluster.dsn(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{durable.schema}"')
        conn.execute("CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                     "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END $$")
        conn.execute("CREATE CONSTRAINT TRIGGER die_at_commit AFTER INSERT ON attempts "
                     "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die_at_commit()")
    try:
        with pytest.raises(JournalUnavailable) as lost:
            durable.journal.reserve_and_mark_submitting(request)
    finally:
        with psycopg.connect(durable.cluster.dsn(), autocommit=True) as conn:
            conn.execute(f'DROP TRIGGER die_at_commit ON "{durable.schema}".attempts')
    assert lost.value.outcome is UnavailableOutcome.OUTCOME_UNKNOWN and lost.value.may_have_committed
    assert lost.value.code is UnavailableCode.OUTCOME_UNKNOWN and lost.value.exit_code == 3
    assert "reread the journal" in str(lost.value)
    # Reconnects on the next call; the reread is the authority: nothing committed, orphan reported.
    assert reread_submit(durable.journal, durable.markers, request) is SubmitReread.ORPHAN
    assert durable.journal.list_attempts(op.operation_id) == ()
    assert [o.attempt_id for o in durable.journal.find_orphan_markers()] == [request.attempt_id]
    with pytest.raises(Exception, match="orphan_marker_possible_remote_effect"):
        durable.journal.reserve_and_mark_submitting(request)


def test_server_down_is_not_sent_and_the_first_call_after_restart_succeeds(durable: Durable) -> None:
    op = seal(durable.journal, durable.journal.admit_parent(daily_parent("restart", 2)).children[0])
    durable.cluster.stop("immediate")
    try:
        with pytest.raises(JournalUnavailable) as down:
            submit(durable.journal, durable.markers, op, "w1")
        assert down.value.outcome is UnavailableOutcome.NOT_SENT
        assert down.value.code is UnavailableCode.NOT_SENT and down.value.exit_code == 3
        with pytest.raises(JournalUnavailable):  # still down: refused again, quickly, by the probe
            durable.journal.gate_status()
    finally:
        durable.cluster.start()
    assert durable.journal.get_operation(op.operation_id) == op  # the very first call after restart
    assert submit(durable.journal, durable.markers, op, "w1").attempt.attempt_ordinal == 1
