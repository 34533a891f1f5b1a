"""Opening the SQLite journal file without harming what is there (issue: state directories are
not the tool's own).

* A symlink at the journal's path, or at its ``-wal`` / ``-shm`` companions, is refused, never
  followed; a new journal file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (so a link planted
  between the check and the creation fails instead of being followed).
* Before anything is written (not even the WAL switch, which rewrites the file header) the file
  must be empty or a restproof journal: the ``application_id`` this adapter stamps, or, for
  journals made before the stamp, its own tables. Anything else is ``NotAJournal``.
* Read-only opening (``mode=ro``) never creates, migrates or stamps: a missing file is
  ``NotAJournal``; a schema older or newer than the code is ``JournalSchemaMismatch``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from sink.journal.port import JournalSchemaMismatch, NotAJournal
from sink.journal.sqlite import migrations

APPLICATION_ID = 0x52505246
"""``PRAGMA application_id`` of a restproof journal ("RPRF")."""
OWN_TABLES = frozenset({"schema_version", "parents", "operations", "journal_gate"})


def _refuse_symlinks(path: Path) -> None:
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if candidate.is_symlink():
            raise NotAJournal(f"{candidate.name} is a symbolic link: a journal file is never opened through one")


def connect(path: Path, *, read_only: bool, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection to the journal file, checked to be a restproof journal (or empty, when writing)."""
    _refuse_symlinks(path)
    if read_only:
        if not path.is_file():
            raise NotAJournal(f"no journal at {path.name}")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout_s, check_same_thread=False)
    else:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
            os.close(fd)
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout_s, check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        empty = _require_journal(conn, path)
        if read_only:
            _require_current_schema(conn)
        elif empty:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    except BaseException:
        conn.close()
        raise
    return conn


def _require_journal(conn: sqlite3.Connection, path: Path) -> bool:
    """True when the file is empty (a new journal); raises unless it is a restproof journal."""
    try:
        application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.DatabaseError:
        raise NotAJournal(f"{path.name} is not a database") from None
    if not tables and application_id in (0, APPLICATION_ID):
        return True
    if application_id == APPLICATION_ID or (application_id == 0 and tables >= OWN_TABLES):
        return False
    raise NotAJournal(f"{path.name} is a database of another application, not a restproof journal; "
                      "nothing was written to it")


def _require_current_schema(conn: sqlite3.Connection) -> None:
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    version = 0 if row is None or row[0] is None else int(row[0])
    if version != migrations.LATEST_VERSION:
        newer = version > migrations.LATEST_VERSION
        raise JournalSchemaMismatch(
            f"journal schema version {version} is {'newer' if newer else 'older'} than this code "
            f"({migrations.LATEST_VERSION}); "
            + ("upgrade the code" if newer else "open it once with a writing command (run or resume) to migrate it")
        )
