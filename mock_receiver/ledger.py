"""Durable ground-truth ledger (SQLite, WAL).

Tables: ``requests`` (every request received, digests/counts/keys only, never
payload rows or raw bodies), ``effects`` (every mutation applied), ``rows`` and
``staged_rows`` (the receiver's own data, kept so summaries can be computed;
not a log), ``fences`` (idempotency / duplicate-key / fingerprint records),
``jobs`` (async bulk jobs) and ``meta`` (receiver clock offset).

All ledger work goes through :meth:`Ledger.run`: a single writer executes the
work items of concurrent requests one after another inside ONE ``BEGIN
IMMEDIATE`` transaction (group commit), each under its own savepoint, commits,
and only then resolves their results, so every answer leaves after its ledger
rows are committed. Items run strictly in order, so a fence decision always
sees the effect of the item before it; ``BEGIN IMMEDIATE`` also serialises
several processes sharing one state directory. Group commit turns one fsync
per request into one fsync per batch.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_MAX_BATCH = 256
MAX_CLOCK_OFFSET_SECONDS = 100 * 366 * 86_400
"""Cap on the admin clock's TOTAL offset: every receiver-clock instant stays a valid datetime."""
LEDGER_FORMAT = "mock-receiver.ledger.v1"


class LedgerRefused(Exception):
    """The file exists but is not a mock-receiver ledger; it was not modified."""

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
    job_id TEXT,
    response_delivered TEXT NOT NULL DEFAULT 'unknown'
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
    applied_at REAL NOT NULL,
    content_sum TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS effects_mutation_key ON effects (mutation_key);
CREATE INDEX IF NOT EXISTS effects_resource ON effects (resource);
CREATE TABLE IF NOT EXISTS rows (
    row_id INTEGER PRIMARY KEY,
    resource TEXT NOT NULL,
    row_date TEXT NOT NULL,
    encoded BLOB NOT NULL,
    effect_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS rows_by_date ON rows (resource, row_date);
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
    response_delivered: str = "unknown"
    """true: the whole answer was written to a connection still open; false: the client was gone first;
    unknown: committed, and the process may have stopped before the answer was written."""
    request_id: int | None = None
    """Set by Txn.record_request; not a stored column of its own (it is the row's key)."""


_REQUEST_COLUMNS = [item.name for item in fields(RequestRecord) if item.name != "request_id"]


class Ledger:
    def __init__(self, path: Path, *, durability: str = "full") -> None:
        self.path = path
        _refuse_foreign_database(path)
        # One connection, used only by the single writer thread (and by tests after the server stopped).
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        self.conn.executescript(SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(requests)")}
        if "response_delivered" not in columns:  # a ledger written before the column existed
            self.conn.execute("ALTER TABLE requests ADD COLUMN response_delivered TEXT NOT NULL DEFAULT 'unknown'")
        if "content_sum" not in {row[1] for row in self.conn.execute("PRAGMA table_info(effects)")}:
            # '' = not known: a ledger-only summary over such an effect is refused, never guessed
            self.conn.execute("ALTER TABLE effects ADD COLUMN content_sum TEXT NOT NULL DEFAULT ''")
        self.conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)", (LEDGER_FORMAT,))
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-writer")
        self._pending: list[tuple[Callable[[Txn], Any], asyncio.Future[Any]]] = []
        self._wakeup: asyncio.Event | None = None
        self._drainer: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.group_commits = 0
        """Transactions committed by the writer (each holding one or more work items)."""

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.conn.close()

    async def run(self, work: Callable[[Txn], T]) -> T:
        """Run ``work`` in the next group-committed transaction; return its result once committed."""
        return await self._submit(work)

    def enqueue(self, work: Callable[[Txn], object]) -> None:
        """Queue ``work`` for the next group commit without waiting for it (fire and forget; a failure
        is retrieved and dropped, it cannot affect the requests committed with it)."""
        self._submit(work).add_done_callback(lambda done: done.cancelled() or done.exception())

    def _submit(self, work: Callable[[Txn], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._drainer is None or self._drainer.done():
            self._loop, self._wakeup = loop, asyncio.Event()
            self._drainer = loop.create_task(self._drain())
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((work, future))
        assert self._wakeup is not None
        self._wakeup.set()
        return future

    async def _drain(self) -> None:
        assert self._wakeup is not None and self._loop is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._pending:
                batch, self._pending = self._pending[:_MAX_BATCH], self._pending[_MAX_BATCH:]
                try:
                    outcomes = await self._loop.run_in_executor(self._executor, self._execute, batch)
                except Exception as commit_error:  # the commit itself failed: nothing in the batch holds
                    outcomes = [(None, commit_error)] * len(batch)
                for (_, future), (result, failure) in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if failure is None:
                        future.set_result(result)
                    else:
                        future.set_exception(failure)

    def _execute(self, batch: list[tuple[Callable[[Txn], Any], asyncio.Future[Any]]]
                 ) -> list[tuple[Any, BaseException | None]]:
        outcomes: list[tuple[Any, BaseException | None]] = []
        with self.write() as txn:
            for work, _ in batch:
                self.conn.execute("SAVEPOINT item")
                try:
                    outcomes.append((work(txn), None))
                except Exception as error:  # one failing item must not undo the others
                    self.conn.execute("ROLLBACK TO item")
                    outcomes.append((None, error))
                self.conn.execute("RELEASE item")
        self.group_commits += 1
        return outcomes

    @contextmanager
    def write(self) -> Iterator[Txn]:
        """One BEGIN IMMEDIATE transaction on the calling thread (the writer, or a stopped server)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield Txn(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @staticmethod
    def reset_all(txn: Txn) -> None:
        for table in _TABLES:
            txn.conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
        txn.conn.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (LEDGER_FORMAT,))


def _refuse_foreign_database(path: Path) -> None:
    """Open an existing file read-only first: a database that is not ours (other tables, or a format
    marker of something else) is refused before anything could add a table or a WAL to it."""
    if not path.exists():
        return
    try:
        probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise LedgerRefused(f"{path} cannot be opened read-only: {error}") from None
    try:
        tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        marker = probe.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() if "meta" in tables else None
    except sqlite3.Error:
        raise LedgerRefused(f"{path} is not an SQLite database") from None
    finally:
        probe.close()
    if not tables.issubset(_TABLES) or (marker is not None and marker[0] != LEDGER_FORMAT):
        raise LedgerRefused(f"{path} is an SQLite database that is not a mock-receiver ledger; refusing to touch it")


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
        """Callers check the total against MAX_CLOCK_OFFSET_SECONDS first."""
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
        record.request_id = cursor.lastrowid
        return cursor.lastrowid

    def set_delivery(self, request_id: int, delivered: str) -> None:
        self.conn.execute("UPDATE requests SET response_delivered = ? WHERE request_id = ?", (delivered, request_id))

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
            # An upsert: a key reserved as executing (status NULL) is completed in place.
            "INSERT INTO fences (fence, resource, fence_key, request_digest, created_at, status, response, "
            "receipt_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (fence, resource, fence_key) DO UPDATE SET "
            "request_digest = excluded.request_digest, status = excluded.status, response = excluded.response, "
            "receipt_id = excluded.receipt_id",
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

    def select_jobs(self, filters: dict[str, object], *, after_job: str | None, limit: int
                    ) -> list[dict[str, object]]:
        """Jobs in insertion order, after the job named by ``after_job`` (a job_id cursor)."""
        clauses = [f"{column} = ?" for column in filters]
        values: list[object] = list(filters.values())
        if after_job is not None:
            # An unknown cursor is the end of the list, never a restart from the beginning.
            clauses.append("rowid > coalesce((SELECT rowid FROM jobs WHERE job_id = ?), "
                           "(SELECT coalesce(max(rowid), 0) FROM jobs))")
            values.append(after_job)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        query = f"SELECT * FROM jobs {where} ORDER BY rowid LIMIT ?"  # noqa: S608 - allow-listed columns
        return [dict(row) for row in self.conn.execute(query, [*values, limit]).fetchall()]

    def applied_rows(self, resource: str, start: str | None, end: str | None) -> Sequence[bytes]:
        query = "SELECT encoded FROM rows WHERE resource = ?"
        values: list[object] = [resource]
        if start is not None:
            query += " AND row_date >= ?"
            values.append(start)
        if end is not None:
            query += " AND row_date < ?"
            values.append(end)
        return [bytes(row[0]) for row in self.conn.execute(query, values)]
