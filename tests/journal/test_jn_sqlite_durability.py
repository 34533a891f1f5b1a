"""SQLite critical writes refuse synchronous below FULL; the lossy mode is tests-only and explicit.

Nothing public lowers ``synchronous`` on the journal's connection (the adapter sets FULL itself),
so the refusal is shown by lowering it on that connection directly, as stray code in the same
process could: the next critical write must refuse, the non-critical ones still work.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from jn_builders import CAPACITY, seal, submit, week_parent

from sink.journal.durability import NON_DURABLE_WARNING, Durability, check_sqlite_synchronous
from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalDurabilityNotProven, UnavailableCode
from sink.journal.records import LeaseKind, LeaseRequest
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal

pytestmark = pytest.mark.timeout(30)


def _synchronous(journal: SqliteJournal) -> int:
    return int(journal._conn.execute("PRAGMA synchronous").fetchone()[0])


def test_durable_journal_runs_full_and_refuses_critical_writes_below_it(tmp_path: Path) -> None:
    markers = FileMarkerStore(tmp_path / "m")
    journal = open_sqlite_journal(tmp_path / "j.db", markers=markers)
    try:
        assert _synchronous(journal) == 2
        journal.configure_capacity(CAPACITY, 2)
        op = seal(journal, journal.admit_parent(week_parent("durable")).children[0])
        journal._conn.execute("PRAGMA synchronous=NORMAL")
        with pytest.raises(JournalDurabilityNotProven) as refused:
            submit(journal, markers, op)
        assert refused.value.code is UnavailableCode.DURABILITY_NOT_PROVEN and refused.value.exit_code == 3
        assert journal.get_operation(op.operation_id) == op and journal.list_attempts(op.operation_id) == ()
        assert not markers.grant_claimed(op.operation_namespace, op.operation_id, 1)
        with pytest.raises(JournalDurabilityNotProven):
            journal.admit_parent(week_parent("durable-2"))
        # Non-critical writes (leases, capacity) stay available; they authorise nothing on their own.
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-1"))
        journal._conn.execute("PRAGMA synchronous=EXTRA")
        assert submit(journal, markers, op, take_lease=False, owner="worker-1").attempt.attempt_ordinal == 1
    finally:
        journal.close()


def test_non_durable_mode_is_explicit_and_loud(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    markers = FileMarkerStore(tmp_path / "m")
    with caplog.at_level(logging.WARNING):
        journal = open_sqlite_journal(tmp_path / "j.db", markers=markers, durability=Durability.NON_DURABLE_TESTS_ONLY)
    try:
        assert NON_DURABLE_WARNING in caplog.text
        assert NON_DURABLE_WARNING.startswith("journal opened NON-DURABLE (tests only)")
        assert NON_DURABLE_WARNING.endswith("never use this mode outside tests")
        assert _synchronous(journal) == 0
        journal.configure_capacity(CAPACITY, 1)
        op = seal(journal, journal.admit_parent(week_parent("fast")).children[0])
        assert submit(journal, markers, op).attempt.attempt_ordinal == 1
    finally:
        journal.close()


@pytest.mark.parametrize(("level", "refused"), [(0, True), (1, True), (2, False), (3, False)])
def test_sqlite_synchronous_threshold_is_full(level: int, refused: bool) -> None:
    if refused:
        with pytest.raises(JournalDurabilityNotProven, match="below FULL"):
            check_sqlite_synchronous(level, transaction="submit")
    else:
        check_sqlite_synchronous(level, transaction="submit")
