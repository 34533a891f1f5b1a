"""Connection pool and transaction scopes of the PostgreSQL journal.

Every connection is autocommit (psycopg 3): a transaction exists only inside an explicit
``conn.transaction()`` block, so locks and COMMIT happen exactly where the code says.

Critical transactions (``write(..., critical=True)``) refuse lossy durability: in durable mode
each one pins ``synchronous_commit`` with SET LOCAL (``on``; ``remote_apply`` in zero-RPO mode) and
checks ``fsync`` inside the transaction, before writing; otherwise JournalDurabilityNotProven.

An unreachable or lost server raises JournalUnavailable saying whether the transaction is
certainly absent (NOT_SENT: no connection, or lost before COMMIT was sent; the server rolls an
interrupted transaction back) or may have committed (OUTCOME_UNKNOWN: lost while COMMIT was in
flight). After a failure the next call first probes the server with one direct connection and,
once it answers, replaces the pool, so the first call after the server is back succeeds instead
of waiting out the pool's reconnection back-off.
"""

from __future__ import annotations

import logging
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from sink.journal.durability import REQUIRED_SYNCHRONOUS_COMMIT, Durability, check_postgres_settings
from sink.journal.port import (
    JournalRejection,
    JournalUnavailable,
    RejectionReason,
    UnavailableOutcome,
    ZeroRpoNotProven,
)
from sink.journal.postgres.rows import Row
from sink.journal.postgres.zero_rpo import (
    SyncQuorumUnavailable,
    SyncQuorumUnconfirmed,
    ZeroRpoPolicy,
    check_quorum,
    critical_transaction,
)

LOG = logging.getLogger(__name__)
Cursor = psycopg.Cursor[Row]
TupleConnection = psycopg.Connection[tuple[object, ...]]
_LOST = (psycopg.OperationalError, psycopg.InterfaceError)
PIN_DURABLE_SQL = ("SELECT set_config('synchronous_commit', %s, true) AS synchronous_commit, "
                   "current_setting('fsync') AS fsync")
_SETTINGS = "SELECT current_setting('synchronous_commit') AS synchronous_commit, current_setting('fsync') AS fsync"


def _check_idle(conn: TupleConnection) -> None:
    """Pool check on checkout: a round trip only when the idle socket has something to say (a
    server that went away leaves it readable: EOF or a FATAL message)."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("connection closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        ConnectionPool.check_connection(conn)


@dataclass
class _Phase:
    """Which transaction, and whether its COMMIT has been sent (the body finished)."""

    name: str
    commit_sent: bool = False


class JournalConnections:
    """Pool + transaction helpers bound to one journal schema."""

    def __init__(self, dsn: str, *, search_path: str, min_size: int, max_size: int,
                 zero_rpo: ZeroRpoPolicy | None, connect_timeout_s: float,
                 durability: Durability = Durability.DURABLE, read_only: bool = False) -> None:
        self.zero_rpo = zero_rpo
        self.durability = durability
        self._dsn = dsn
        self._search_path = search_path
        self._sizes = (min_size, max_size)
        self._timeout = connect_timeout_s
        self._read_only = read_only
        self._lock = threading.Lock()
        self._suspect = False
        self.pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[TupleConnection]:
        return ConnectionPool(
            self._dsn, min_size=self._sizes[0], max_size=self._sizes[1],
            kwargs={"autocommit": True, "options": f"-c search_path={self._search_path}"
                    + (" -c default_transaction_read_only=on" if self._read_only else "")},
            open=False, timeout=self._timeout, check=_check_idle, name="restproof-journal",
        )

    def open(self, timeout_s: float) -> None:
        try:
            self.pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            self.pool.close()
            raise JournalUnavailable(f"journal database unreachable: {type(exc).__name__}") from None

    def close(self) -> None:
        self.pool.close()

    # ----- checkout and reconnection -----------------------------------------------------------
    def _reconnect_if_suspect(self) -> None:
        """After a failure: probe the server directly; once it answers, start a fresh pool."""
        with self._lock:
            if not self._suspect:
                return
            try:
                psycopg.connect(self._dsn, connect_timeout=max(1, int(self._timeout)), autocommit=True).close()
            except _LOST as exc:
                raise JournalUnavailable(f"journal database unreachable: {type(exc).__name__}") from None
            old, self.pool = self.pool, self._new_pool()
            # The old pool's workers may sit in connection attempts: let them finish off-thread.
            threading.Thread(target=old.close, kwargs={"timeout": 5.0}, daemon=True).start()
            try:
                self.pool.open(wait=True, timeout=self._timeout)
            except PoolTimeout:
                raise JournalUnavailable("journal database unreachable: PoolTimeout") from None
            self._suspect = False
            LOG.info("journal database reachable again: connection pool replaced")

    @contextmanager
    def connection(self, phase: _Phase | None = None) -> Iterator[TupleConnection]:
        """A pooled connection. A lost server raises JournalUnavailable (OUTCOME_UNKNOWN when
        ``phase`` says COMMIT was in flight, else NOT_SENT) and marks the pool suspect."""
        self._reconnect_if_suspect()
        pool = self.pool
        try:
            conn = pool.getconn()
        except (PoolTimeout, *_LOST) as exc:
            self._suspect = True
            raise JournalUnavailable(f"journal database unavailable: {type(exc).__name__}") from None
        try:
            yield conn
        except _LOST as exc:
            self._suspect = True
            if phase is not None and phase.commit_sent:
                raise JournalUnavailable(
                    f"{phase.name}: connection lost while COMMIT was in flight ({type(exc).__name__}); "
                    "do not act on it: reread the journal after reconnecting",
                    outcome=UnavailableOutcome.OUTCOME_UNKNOWN,
                ) from None
            raise JournalUnavailable(
                f"journal database unavailable ({type(exc).__name__}); nothing was committed"
            ) from None
        finally:
            pool.putconn(conn)

    # ----- transactions ------------------------------------------------------------------------
    @contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Cursor]:
        """Autocommit reads; `snapshot` gives several statements one REPEATABLE READ snapshot."""
        with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            if not snapshot:
                yield cur
                return
            with conn.transaction():
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield cur

    @contextmanager
    def write(self, name: str, *, critical: bool) -> Iterator[Cursor]:
        """One transaction. `critical` ones are pinned durable (and need the synchronous quorum in
        zero-RPO mode); the others commit with the server's settings (locally in zero-RPO mode):
        they are re-observable or fenced by a later critical CAS."""
        if self._read_only:
            raise JournalRejection(RejectionReason.INVALID_REQUEST, f"the journal was opened read-only ({name})")
        phase = _Phase(name)
        with self.connection(phase) as conn:
            if critical and self.zero_rpo is not None:
                yield from self._zero_rpo_write(conn, name, phase)
                return
            with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
                if critical and self.durability is Durability.DURABLE:
                    cur.execute(PIN_DURABLE_SQL, (REQUIRED_SYNCHRONOUS_COMMIT,))
                    self._require_durable(cur, name)
                elif self.zero_rpo is not None:
                    cur.execute("SET LOCAL synchronous_commit = local")
                yield cur
                phase.commit_sent = True

    def _zero_rpo_write(self, conn: TupleConnection, name: str, phase: _Phase) -> Iterator[Cursor]:
        assert self.zero_rpo is not None
        try:
            with critical_transaction(conn, self.zero_rpo), conn.cursor(row_factory=dict_row) as cur:
                self._require_durable(cur, name, pin=False)  # remote_apply is pinned by SET LOCAL
                yield cur
                phase.commit_sent = True
        except SyncQuorumUnavailable as exc:
            raise ZeroRpoNotProven(f"{name}: {exc}; nothing was committed") from None
        except SyncQuorumUnconfirmed as exc:
            self._record_unconfirmed(conn, name)
            raise ZeroRpoNotProven(
                f"{name}: {exc}; the mutation gate is now BLOCKED until an epoch attestation",
                committed_locally=True,
            ) from None

    @staticmethod
    def _require_durable(cur: Cursor, name: str, *, pin: bool = True) -> None:
        if not pin:
            cur.execute(_SETTINGS)
        row = cur.fetchone()
        assert row is not None
        check_postgres_settings(str(row["fsync"]), str(row["synchronous_commit"]), transaction=name)

    def check_settings(self) -> None:
        """At open, in durable mode: refuse a server whose commits can be lost (fsync off)."""
        if self.durability is not Durability.DURABLE:
            return
        with self.connection() as conn, conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(PIN_DURABLE_SQL, (REQUIRED_SYNCHRONOUS_COMMIT,))
            self._require_durable(cur, "open")

    def check_quorum(self) -> None:
        if self.zero_rpo is None:
            return
        with self.connection() as conn:
            try:
                check_quorum(conn, self.zero_rpo)
            except SyncQuorumUnavailable as exc:
                raise ZeroRpoNotProven(str(exc)) from None

    @staticmethod
    def _record_unconfirmed(conn: TupleConnection, name: str) -> None:
        """Close the gate, locally: nothing may proceed on a commit the standby may lack."""
        transaction_name, _, subject_id = name.partition(":")
        try:
            with conn.transaction():
                conn.execute("SET LOCAL synchronous_commit = local")
                conn.execute(
                    "INSERT INTO unconfirmed_critical_commits (transaction_name, subject_id) VALUES (%s, %s)",
                    (transaction_name, subject_id),
                )
                conn.execute(
                    "UPDATE journal_epoch SET mutation_gate = 'BLOCKED', changed_at = now(), "
                    "gate_reason = %s, attested_by = NULL, attestation_digest = NULL",
                    (f"synchronous replication unconfirmed for {name}",),
                )
        except psycopg.Error as exc:  # the refusal stands even if the gate row cannot be written
            LOG.error("could not block the mutation gate after an unconfirmed commit: %s", type(exc).__name__)
