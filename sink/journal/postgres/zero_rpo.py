"""Zero-RPO critical transactions: commit only with a confirmed synchronous remote-apply quorum.

PostgreSQL's own behaviour forces three extra checks on the client (see docs/journal-postgres.md):

* with no synchronous standby, ``COMMIT`` under ``synchronous_commit = remote_apply`` waits forever
  and ``statement_timeout`` does not end that wait, so the quorum is checked in
  ``pg_stat_replication`` *before* the commit, inside the transaction;
* the commit wait is bounded here: a timer cancels the backend's wait (``conn.cancel()``);
* a cancelled wait makes ``COMMIT`` return *success* with the WARNING "canceling wait for
  synchronous replication" (SQLSTATE 01000) although the row is committed locally. That warning,
  seen through a notice handler, means "not replicated": the caller gets
  :class:`SyncQuorumUnconfirmed` and must not act on the transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import errors as pg_errors

SYNC_WAIT_CANCELLED_SQLSTATE = "01000"
SYNC_WAIT_CANCELLED_TEXT = "canceling wait for synchronous replication"

QUORUM_QUERY = """
SELECT count(*) FILTER (WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')),
       current_setting('synchronous_standby_names')
FROM pg_stat_replication
"""


class SyncQuorumUnavailable(RuntimeError):
    """No healthy synchronous standby before a critical commit: nothing was committed."""


class SyncQuorumUnconfirmed(RuntimeError):
    """The commit happened locally but its replication was not confirmed within the bound."""


@dataclass(frozen=True, slots=True)
class ZeroRpoPolicy:
    """`required_standbys` streaming sync/quorum standbys; commit wait bounded by `commit_wait_s`."""

    required_standbys: int = 1
    commit_wait_s: float = 5.0

    def __post_init__(self) -> None:
        if self.required_standbys < 1:
            raise ValueError("zero-RPO needs at least one synchronous standby")
        if not 0 < self.commit_wait_s <= 300:
            raise ValueError("commit_wait_s must be in (0, 300]")


def check_quorum(conn: psycopg.Connection[tuple[object, ...]], policy: ZeroRpoPolicy) -> None:
    """Raise SyncQuorumUnavailable unless enough synchronous standbys are streaming now."""
    row = conn.execute(QUORUM_QUERY).fetchone()
    healthy = int(str(row[0])) if row else 0
    names = str(row[1]) if row else ""
    if not names.strip():
        raise SyncQuorumUnavailable("synchronous_standby_names is empty on the journal primary")
    if healthy < policy.required_standbys:
        raise SyncQuorumUnavailable(
            f"{healthy} synchronous standby(s) streaming, {policy.required_standbys} required"
        )


class _CommitWatch:
    """Notice handler + timer state for one bounded commit."""

    def __init__(self) -> None:
        self.sync_wait_cancelled = False
        self.timer_fired = threading.Event()

    def on_notice(self, diag: psycopg.errors.Diagnostic) -> None:
        message = diag.message_primary or ""
        if diag.sqlstate == SYNC_WAIT_CANCELLED_SQLSTATE and SYNC_WAIT_CANCELLED_TEXT in message:
            self.sync_wait_cancelled = True


@contextmanager
def critical_transaction(
    conn: psycopg.Connection[tuple[object, ...]], policy: ZeroRpoPolicy | None
) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """An explicit transaction on an autocommit connection; zero-RPO checks when `policy` is set.

    Raises SyncQuorumUnavailable (rolled back, nothing written) or SyncQuorumUnconfirmed
    (committed locally, replication unproven) in zero-RPO mode.
    """
    if policy is None:
        with conn.transaction():
            yield conn
        return
    watch = _CommitWatch()
    timer: threading.Timer | None = None
    conn.add_notice_handler(watch.on_notice)
    try:
        try:
            with conn.transaction():
                conn.execute("SET LOCAL synchronous_commit = remote_apply")
                check_quorum(conn, policy)
                yield conn
                # Everything below the yield runs right before COMMIT: arm the bound on its wait.
                timer = threading.Timer(policy.commit_wait_s, _cancel_wait, (conn, watch))
                timer.daemon = True
                timer.start()
        except pg_errors.QueryCanceled as exc:
            if watch.timer_fired.is_set():
                raise SyncQuorumUnavailable("critical transaction cancelled by the commit bound") from exc
            raise
        finally:
            if timer is not None:
                timer.cancel()
    finally:
        conn.remove_notice_handler(watch.on_notice)
    if watch.sync_wait_cancelled:
        raise SyncQuorumUnconfirmed(
            f"synchronous replication not confirmed within {policy.commit_wait_s}s; "
            "the transaction is committed locally only"
        )


def _cancel_wait(conn: psycopg.Connection[tuple[object, ...]], watch: _CommitWatch) -> None:
    watch.timer_fired.set()
    conn.cancel_safe(timeout=5.0)
