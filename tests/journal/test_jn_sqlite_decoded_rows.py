"""The SQLite codec's memo of decoded operation rows (sink.journal.sqlite.codec): the same stored
values give the same record, changed values a new one, and the memo stays bounded."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sink.journal.markers import FileMarkerStore
from sink.journal.sqlite import codec
from sink.journal.sqlite.adapter import open_sqlite_journal
from tests.journal.conftest import TESTS_ONLY, SteppingClock
from tests.journal.jn_builders import seal, week_parent


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A journal with one admitted parent (three children), and a read-only connection to it."""
    journal = open_sqlite_journal(tmp_path / "journal.sqlite3", markers=FileMarkerStore(tmp_path / "markers"),
                                  clock=SteppingClock(), durability=TESTS_ONLY)
    try:
        admitted = journal.admit_parent(week_parent("parent-a"))
        seal(journal, admitted.children[0])
    finally:
        journal.close()
    connection = sqlite3.connect(f"file:{tmp_path / 'journal.sqlite3'}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        yield connection
    finally:
        connection.close()


def _rows(connection: sqlite3.Connection, columns: str = codec.OPERATION_COLUMNS) -> list[sqlite3.Row]:
    return connection.execute(f"SELECT {columns} FROM operations ORDER BY ordinal").fetchall()


def test_the_same_stored_values_give_the_same_record(stored: sqlite3.Connection) -> None:
    codec._decoded.clear()
    first = [codec.operation_from_row(row) for row in _rows(stored)]
    again = [codec.operation_from_row(row) for row in _rows(stored)]
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert first == [codec._decode_operation(row) for row in _rows(stored)]
    assert len({row.operation_id for row in first}) == 3
    assert first[0].revision != first[1].revision  # the sealed child is its own version


def test_changed_values_or_another_column_order_never_hit(stored: sqlite3.Connection) -> None:
    codec._decoded.clear()
    row = _rows(stored)[0]
    original = codec.operation_from_row(row)
    bumped = re.sub(r"\brevision\b", "revision + 1 AS revision", codec.OPERATION_COLUMNS, count=1)
    later = codec.operation_from_row(_rows(stored, bumped)[0])
    assert later.revision == original.revision + 1 and later is not original
    reordered = ", ".join(reversed(codec.OPERATION_COLUMNS.split(", ")))
    same = codec.operation_from_row(_rows(stored, reordered)[0])
    assert same == original and same is not original  # decoded by name, memoised by names and values


def test_the_memo_is_bounded(stored: sqlite3.Connection) -> None:
    codec._decoded.clear()
    for offset in range(codec._DECODED_LIMIT + 10):
        columns = re.sub(r"\brevision\b", f"revision + {offset} AS revision", codec.OPERATION_COLUMNS, count=1)
        assert codec.operation_from_row(_rows(stored, columns)[0]).revision >= offset
        assert len(codec._decoded) <= codec._DECODED_LIMIT
