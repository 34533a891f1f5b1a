"""Opening the SQLite journal: forward-only migrations, refusals that protect the operator."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalConfigurationError
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.journal.sqlite.migrations import LATEST_VERSION

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
