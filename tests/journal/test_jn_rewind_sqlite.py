"""Journal rewind on SQLite: a restored journal file never grants an ordinal a second time.

The journal file is put back as it was before a grant while the marker store (another failure
domain) keeps the MAY_ATTEMPT marker of that grant. Before the fix the next submit re-published
the same marker ("exists, same digest") and was granted ordinal 1 again: the duplicate remote
mutation the design forbids. Now the marker of a granted attempt carries a grant claim, and a
claimed marker without its journal attempt refuses the submit (orphan marker: possible effect).
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from jn_builders import CAPACITY, WORKER, digest, seal, submit, take_lease, week_parent

from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import Actor, ActorKind, LeaseKind, MarkerRetirement
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal

pytestmark = pytest.mark.timeout(60)

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-rewind-1")


def _backup(source: Path, target: Path) -> None:
    """A consistent copy of the live WAL database (what a file-level backup restores)."""
    live, copy = sqlite3.connect(source), sqlite3.connect(target)
    try:
        live.backup(copy)
    finally:  # closed explicitly: a connection's context manager only commits
        copy.close()
        live.close()


def _restore(backup: Path, path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(backup, path)


def _open(path: Path, markers: FileMarkerStore) -> SqliteJournal:
    return open_sqlite_journal(path, markers=markers)


def test_restored_journal_file_never_grants_the_same_ordinal_twice(tmp_path: Path) -> None:
    path, backup = tmp_path / "journal.sqlite3", tmp_path / "before-grant.sqlite3"
    markers = FileMarkerStore(tmp_path / "markers")
    journal = _open(path, markers)
    journal.configure_capacity(CAPACITY, 4)
    op = seal(journal, journal.admit_parent(week_parent("rewind")).children[0])
    take_lease(journal, LeaseKind.MUTATION, op.operation_id, ttl=timedelta(hours=1))
    journal.close()
    _backup(path, backup)

    journal = _open(path, markers)
    first = submit(journal, markers, op, take_lease=False)
    assert first.attempt.attempt_ordinal == 1
    journal.close()

    _restore(backup, path)  # the journal lost the grant; the marker store did not
    journal = _open(path, markers)
    try:
        rewound = journal.get_operation(op.operation_id)
        assert rewound is not None and rewound.attempt_count == 0
        assert rewound.axes.execution_state.value == "SEALED"
        with pytest.raises(JournalRejection) as refused:
            submit(journal, markers, rewound, take_lease=False)
        assert refused.value.reason is RejectionReason.ORPHAN_MARKER
        assert journal.list_attempts(op.operation_id) == ()
        assert journal.capacity_status(CAPACITY).held_by_attempts == ()
        assert journal.get_operation(op.operation_id) == rewound
        orphans = journal.find_orphan_markers()
        assert [(o.operation_id, o.attempt_ordinal, o.attempt_id) for o in orphans] == [
            (op.operation_id, 1, first.attempt.attempt_id)]
        assert "possible remote effect" in orphans[0].reason
        # Reconciliation path: only an operator retires it, with evidence; the next submit then
        # uses ordinal 2 with a fresh marker.
        journal.retire_orphan_marker(MarkerRetirement(
            op.operation_id, 1, orphans[0].marker_digest, digest("receiver: no job for attempt 1"), OPERATOR))
        retired = journal.get_operation(op.operation_id)
        assert retired is not None
        second = submit(journal, markers, retired, take_lease=False, owner=WORKER)
        assert second.attempt.attempt_ordinal == 2
    finally:
        journal.close()
