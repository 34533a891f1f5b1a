"""Connection pool and transaction scopes of the PostgreSQL journal.

Every connection is autocommit (psycopg 3): a transaction exists only inside an explicit
``conn.transaction()`` block, so locks and COMMIT happen exactly where the code says. Critical
transactions go through the zero-RPO guard when a policy is configured; a commit that is not
proven replicated blocks the mutation gate (local commit) and raises ZeroRpoNotProven.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from sink.journal.port import JournalUnavailable, ZeroRpoNotProven
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


class JournalConnections:
    """Pool + transaction helpers bound to one journal schema."""

    def __init__(self, dsn: str, *, search_path: str, min_size: int, max_size: int,
                 zero_rpo: ZeroRpoPolicy | None, connect_timeout_s: float) -> None:
        self.zero_rpo = zero_rpo
        self.pool: ConnectionPool[TupleConnection] = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "options": f"-c search_path={search_path}"},
            open=False,
            timeout=connect_timeout_s,
            name="restproof-journal",
        )

    def open(self, timeout_s: float) -> None:
        try:
            self.pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            self.pool.close()
            raise JournalUnavailable(f"journal database unreachable: {type(exc).__name__}") from None

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[TupleConnection]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise JournalUnavailable(f"journal database unavailable: {type(exc).__name__}") from exc

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
        """One transaction. `critical` ones need the synchronous quorum in zero-RPO mode; the
        others commit locally there (they are re-observable or fenced by a later critical CAS)."""
        with self.connection() as conn:
            if not critical or self.zero_rpo is None:
                with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
                    if self.zero_rpo is not None:
                        cur.execute("SET LOCAL synchronous_commit = local")
                    yield cur
                return
            try:
                with critical_transaction(conn, self.zero_rpo), conn.cursor(row_factory=dict_row) as cur:
                    yield cur
            except SyncQuorumUnavailable as exc:
                raise ZeroRpoNotProven(f"{name}: {exc}; nothing was committed") from None
            except SyncQuorumUnconfirmed as exc:
                self._record_unconfirmed(conn, name)
                raise ZeroRpoNotProven(
                    f"{name}: {exc}; the mutation gate is now BLOCKED until an epoch attestation"
                ) from None

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
