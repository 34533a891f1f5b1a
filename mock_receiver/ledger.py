"""Durable ground-truth ledger (SQLite, WAL).

Tables: ``requests`` (every request received, digests/counts/keys only, never
payload rows or raw bodies), ``effects`` (every mutation applied), ``rows`` and
``staged_rows`` (the receiver's own data, kept so summaries can be computed;
not a log), ``fences`` (idempotency / duplicate-key / fingerprint records),
``jobs`` (async bulk jobs) and ``meta`` (receiver clock offset).

Every write goes through :meth:`Ledger.write`, which opens ``BEGIN IMMEDIATE``
so fence decisions of concurrent requests, even from several processes sharing
one state directory, are serialised, and commits before the caller answers.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    request_id INTEGER PRIMARY KEY,
    received_at REAL NOT NULL,
    endpoint TEXT NOT NULL,
    method TEXT NOT NULL,
    resource TEXT,
    mutation_key TEXT,
    idempotency_key TEXT,
    scope_start TEXT,
    scope_end TEXT,
    body_bytes INTEGER NOT NULL,
    body_digest TEXT,
    payload_digest TEXT,
    row_count INTEGER,
    status INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    problem TEXT,
    rule TEXT,
    receipt_id TEXT,
    effect_id INTEGER,
    job_id TEXT
);
CREATE INDEX IF NOT EXISTS requests_mutation_key ON requests (mutation_key);
CREATE INDEX IF NOT EXISTS requests_idempotency_key ON requests (idempotency_key);
CREATE INDEX IF NOT EXISTS requests_resource ON requests (resource);
CREATE TABLE IF NOT EXISTS effects (
    effect_id INTEGER PRIMARY KEY,
    request_id INTEGER NOT NULL,
    receipt_id TEXT NOT NULL,
    job_id TEXT,
    resource TEXT NOT NULL,
    mutation TEXT NOT NULL,
    scope_start TEXT,
    scope_end TEXT,
    mutation_key TEXT,
    idempotency_key TEXT,
    payload_digest TEXT NOT NULL,
    accepted_rows INTEGER NOT NULL,
    rejected_rows INTEGER NOT NULL,
    replaced_rows INTEGER NOT NULL,
    reported_accepted_rows INTEGER NOT NULL,
    reported_rejected_rows INTEGER NOT NULL,
    content_digest TEXT NOT NULL,
    applied_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS effects_mutation_key ON effects (mutation_key);
CREATE INDEX IF NOT EXISTS effects_resource ON effects (resource);
CREATE TABLE IF NOT EXISTS rows (
    row_id INTEGER PRIMARY KEY,
    resource TEXT NOT NULL,
    row_date TEXT NOT NULL,
    encoded BLOB NOT NULL,
    effect_id INTEGER NOT NULL,
    live INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS rows_live ON rows (resource, live, row_date);
CREATE TABLE IF NOT EXISTS staged_rows (
    job_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    row_date TEXT NOT NULL,
    encoded BLOB NOT NULL,
    PRIMARY KEY (job_id, ordinal)
);
CREATE TABLE IF NOT EXISTS fences (
    fence TEXT NOT NULL,
    resource TEXT NOT NULL,
    fence_key TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    created_at REAL NOT NULL,
    status INTEGER,
    response BLOB,
    receipt_id TEXT,
    PRIMARY KEY (fence, resource, fence_key)
);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    request_id INTEGER NOT NULL,
    resource TEXT NOT NULL,
    mutation_key TEXT,
    payload_digest TEXT NOT NULL,
    scope_start TEXT,
    scope_end TEXT,
    created_at REAL NOT NULL,
    polls INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    fail INTEGER NOT NULL DEFAULT 0,
    accepted_rows INTEGER NOT NULL,
    rejected_rows INTEGER NOT NULL,
    accepted_delta INTEGER NOT NULL DEFAULT 0,
    rejected_delta INTEGER NOT NULL DEFAULT 0,
    records TEXT NOT NULL,
    terminal_at REAL,
    effect_id INTEGER
);
"""

_TABLES = ("requests", "effects", "rows", "staged_rows", "fences", "jobs", "meta")


@dataclass
class RequestRecord:
    """One line of the request log: keys, digests and counts only."""

    endpoint: str
    method: str
    resource: str | None = None
    mutation_key: str | None = None
    idempotency_key: str | None = None
    scope_start: str | None = None
    scope_end: str | None = None
    body_bytes: int = 0
    body_digest: str | None = None
    payload_digest: str | None = None
    row_count: int | None = None
    status: int = 0
    outcome: str = "received"
    problem: str | None = None
    rule: str | None = None
    receipt_id: str | None = None
    effect_id: int | None = None
    job_id: str | None = None


_REQUEST_COLUMNS = [item.name for item in fields(RequestRecord)]


class Ledger:
    def __init__(self, path: Path, *, durability: str = "full") -> None:
        self.path = path
        # One connection per process, used from the event-loop thread only;
        # BEGIN IMMEDIATE serialises writers across processes as well.
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.executescript(SCHEMA)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def write(self) -> Iterator[Txn]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield Txn(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def read(self) -> Txn:
        return Txn(self.conn)

    def reset(self) -> None:
        with self.write() as txn:
            for table in _TABLES:
                txn.conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names


class Txn:
    """Typed helpers over one connection inside (or outside, for reads) a transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def clock_offset(self) -> float:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'clock_offset'").fetchone()
        return float(row[0]) if row else 0.0

    def now(self) -> float:
        """The receiver clock: wall time plus the offset the admin API has advanced it by."""
        return time.time() + self.clock_offset()

    def advance_clock(self, seconds: float) -> float:
        offset = self.clock_offset() + seconds
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('clock_offset', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (repr(offset),))
        return offset

    def record_request(self, record: RequestRecord, received_at: float) -> int:
        columns = ", ".join(["received_at", *_REQUEST_COLUMNS])
        marks = ", ".join("?" * (len(_REQUEST_COLUMNS) + 1))
        values = [received_at, *(getattr(record, name) for name in _REQUEST_COLUMNS)]
        cursor = self.conn.execute(f"INSERT INTO requests ({columns}) VALUES ({marks})", values)  # noqa: S608
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def fence(self, fence: str, resource: str, key: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.conn.execute(
            "SELECT * FROM fences WHERE fence = ? AND resource = ? AND fence_key = ?",
            (fence, resource, key)).fetchone()
        return row

    def drop_fence(self, fence: str, resource: str, key: str) -> None:
        self.conn.execute("DELETE FROM fences WHERE fence = ? AND resource = ? AND fence_key = ?",
                          (fence, resource, key))

    def put_fence(self, fence: str, resource: str, key: str, *, request_digest: str, created_at: float,
                  status: int | None, response: bytes | None, receipt_id: str | None) -> None:
        self.conn.execute(
            "INSERT INTO fences (fence, resource, fence_key, request_digest, created_at, status, response, "
            "receipt_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (fence, resource, key, request_digest, created_at, status, response, receipt_id))

    def select(self, table: str, filters: dict[str, object], *, order: str, after: int | None,
               limit: int) -> list[dict[str, object]]:
        """Equality filters over known columns (callers pass only allow-listed column names)."""
        clauses = [f"{column} = ?" for column in filters]
        values: list[object] = list(filters.values())
        if after is not None:
            clauses.append(f"{order} > ?")
            values.append(after)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        query = f"SELECT * FROM {table} {where} ORDER BY {order} LIMIT ?"  # noqa: S608 - allow-listed
        rows = self.conn.execute(query, [*values, limit]).fetchall()
        return [dict(row) for row in rows]

    def live_rows(self, resource: str, start: str | None, end: str | None) -> Sequence[bytes]:
        query = "SELECT encoded FROM rows WHERE resource = ? AND live = 1"
        values: list[object] = [resource]
        if start is not None:
            query += " AND row_date >= ?"
            values.append(start)
        if end is not None:
            query += " AND row_date < ?"
            values.append(end)
        return [bytes(row[0]) for row in self.conn.execute(query, values)]
