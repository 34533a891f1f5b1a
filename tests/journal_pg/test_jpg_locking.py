"""Lock order of the critical submit: gate, then domain row, then operation row.

Every path that locks both a domain row and an operation row takes the domain first; the submit
takes both in one statement, so this checks PostgreSQL applies its locking clauses in that order:
while the submit waits for a domain row held elsewhere, it must not hold the operation row.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from jpg_support import TESTS_ONLY, daily_parent, drop_schema, new_schema, publish_marker, seal, submit_request

from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort
from sink.journal.postgres import open_postgres_journal
from sink.journal.records import LeaseKind, LeaseRequest, SubmitGrant

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


@pytest.fixture
def journal(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[DeliveryJournalPort, FileMarkerStore, str]]:
    schema = new_schema()
    markers = FileMarkerStore(tmp_path / "markers")
    opened = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers)
    opened.configure_capacity("receiver-jobs", 4)
    try:
        yield opened, markers, schema
    finally:
        opened.close()
        drop_schema(pg_dsn, schema)


def test_jpg_submit_waits_for_the_domain_row_without_holding_the_operation_row(
    pg_dsn: str, journal: tuple[DeliveryJournalPort, FileMarkerStore, str]
) -> None:
    jn, markers, schema = journal
    op = seal(jn, jn.admit_parent(daily_parent("lock-order", 1, domain="lock-domain")).children[0])
    jn.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "w1"))
    request = submit_request(op, publish_marker(jn, markers, op), "w1")
    holder = psycopg.connect(pg_dsn, autocommit=True)
    probe = psycopg.connect(pg_dsn, autocommit=True)
    granted: list[SubmitGrant] = []
    try:
        holder.execute("BEGIN")
        holder.execute(f"SELECT 1 FROM {schema}.rest_delivery_effect_domain_lock "
                       "WHERE effect_conflict_domain = 'lock-domain' FOR UPDATE")
        submitter = threading.Thread(target=lambda: granted.append(jn.reserve_and_mark_submitting(request)))
        submitter.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # wait until the submit is blocked on a lock
            row = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                "AND datname = current_database()").fetchone()
            if row and row[0]:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the submit never waited for the domain row")
        probe.execute("BEGIN")
        # NOWAIT: fails at once if the blocked submit already holds the operation row.
        probe.execute(f"SELECT 1 FROM {schema}.operations WHERE operation_id = %s FOR UPDATE NOWAIT",
                      (op.operation_id,))
        probe.execute("ROLLBACK")
        holder.execute("ROLLBACK")
        submitter.join(timeout=10)
        assert granted and granted[0].operation.axes.execution_state.value == "SUBMITTING"
    finally:
        holder.close()
        probe.close()
