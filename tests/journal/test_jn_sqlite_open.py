"""Opening the SQLite journal: forward-only migrations, refusals that protect the operator."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from sink.journal.markers import FileMarkerStore
from sink.journal.port import (
    DeliveryJournalPort,
    JournalConfigurationError,
    JournalRejection,
    JournalSchemaMismatch,
    NotAJournal,
)
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.journal.sqlite.migrations import LATEST_VERSION, MIGRATIONS

pytestmark = pytest.mark.timeout(30)


def test_fresh_file_is_migrated_and_reopening_is_idempotent(tmp_path: Path) -> None:
    markers = FileMarkerStore(tmp_path / "m")
    journal = open_sqlite_journal(tmp_path / "j.db", markers=markers)
    assert isinstance(journal, DeliveryJournalPort)
    assert journal.schema_version() == LATEST_VERSION
    assert journal.critical_commit_guard is None
    journal.close()
    again = open_sqlite_journal(tmp_path / "j.db", markers=markers)
    rows = sqlite3.connect(tmp_path / "j.db").execute("SELECT version FROM schema_version").fetchall()
    assert rows == [(v,) for v in range(1, LATEST_VERSION + 1)]
    assert again.gate_status().journal_epoch == 1
    again.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m")).close()
    with sqlite3.connect(tmp_path / "j.db") as conn:
        conn.execute("INSERT INTO schema_version VALUES (?, 'later')", (LATEST_VERSION + 1,))
    with pytest.raises(JournalConfigurationError, match="newer than this code"):
        open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"))


def test_zero_rpo_on_sqlite_is_refused_before_creating_anything(tmp_path: Path) -> None:
    with pytest.raises(JournalConfigurationError, match="zero-RPO"):
        open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"), require_zero_rpo=True)
    assert not (tmp_path / "j.db").exists()


def test_naive_clock_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"),
                            clock=lambda: datetime(2026, 9, 1))
    assert not (tmp_path / "j.db").exists()


def test_version_1_file_is_migrated_forward_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    with sqlite3.connect(path) as conn:  # a journal file written by the first schema version
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        for statement in (s.strip() for s in MIGRATIONS[0][1].split(";")):
            if statement:
                conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (1, 'earlier')")
        conn.execute("INSERT INTO capacity_scopes VALUES ('receiver-jobs', 3)")
    conn.close()
    journal = open_sqlite_journal(path, markers=FileMarkerStore(tmp_path / "m"))
    try:
        assert journal.schema_version() == LATEST_VERSION >= 2
        assert journal.capacity_status("receiver-jobs").slots == 3
    finally:
        journal.close()
    with sqlite3.connect(path) as conn:
        indexes = {row[1] for row in conn.execute("SELECT * FROM sqlite_master WHERE type = 'index'")}
        applied = conn.execute("SELECT version, applied_at FROM schema_version ORDER BY version").fetchall()
    conn.close()
    assert "operations_by_domain" not in indexes
    assert {"operations_by_domain_scope", "capacity_reservations_by_scope"} <= indexes
    assert applied[0] == (1, "earlier") and [v for v, _ in applied] == list(range(1, LATEST_VERSION + 1))


def _foreign(path: Path) -> bytes:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    return path.read_bytes()


@pytest.mark.parametrize("read_only", [False, True])
def test_another_applications_database_is_refused_and_left_untouched(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "j.db"
    before = _foreign(path)
    with pytest.raises(NotAJournal, match="another application"):
        open_sqlite_journal(path, markers=FileMarkerStore(tmp_path / "m"), read_only=read_only)
    assert path.read_bytes() == before
    assert not path.with_name("j.db-wal").exists() and not path.with_name("j.db-shm").exists()


def test_bytes_that_are_not_a_database_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    path.write_bytes(b"not sqlite " * 500)
    with pytest.raises(NotAJournal, match="not a database"):
        open_sqlite_journal(path, markers=FileMarkerStore(tmp_path / "m"))
    assert path.read_bytes() == b"not sqlite " * 500


@pytest.mark.parametrize("link", ["j.db", "j.db-wal", "j.db-shm"])
def test_a_symlink_at_the_journal_or_its_companions_is_never_followed(tmp_path: Path, link: str) -> None:
    if link != "j.db":
        open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m")).close()
        (tmp_path / link).unlink(missing_ok=True)
    target = tmp_path / "elsewhere"
    (tmp_path / link).symlink_to(target)
    for read_only in (False, True):
        with pytest.raises(NotAJournal, match="symbolic link"):
            open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"), read_only=read_only)
    assert not target.exists()


def test_read_only_opening_creates_migrates_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(NotAJournal, match="no journal"):
        open_sqlite_journal(tmp_path / "missing.db", markers=FileMarkerStore(tmp_path / "m"), read_only=True)
    assert not (tmp_path / "missing.db").exists()
    open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m")).close()
    viewer = open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"), read_only=True)
    try:
        assert viewer.gate_status().journal_epoch == 1 and viewer.schema_version() == LATEST_VERSION
        with pytest.raises(JournalRejection, match="read-only"):
            viewer.configure_capacity("scope", 1)
    finally:
        viewer.close()
    with sqlite3.connect(tmp_path / "j.db") as conn:
        conn.execute("DELETE FROM schema_version WHERE version = ?", (LATEST_VERSION,))
    with pytest.raises(JournalSchemaMismatch, match="older than this code"):
        open_sqlite_journal(tmp_path / "j.db", markers=FileMarkerStore(tmp_path / "m"), read_only=True)
