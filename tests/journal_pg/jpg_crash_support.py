"""Server-crash helpers of the PostgreSQL crash and restore tests (spawned workers import this).

Workers loop the supervisor's pre-submit sequence (lease, marker, critical submit) and, since
they never send HTTP, prove REQUEST_NOT_STARTED at once (``request_not_started_retry``), so one
operation climbs through many ordinals. Every grant is reported *after* it returned: that is the
moment a real worker would start its POST. The test kills the server under them and checks, via
the port, that no ordinal was ever granted twice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from jpg_support import publish_marker, submit_request

from certification.procfs import children_of
from sink.contracts.state import ExecutionState
from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalRejection, JournalUnavailable, RejectionReason
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.cluster import Cluster
from sink.journal.records import LeaseKind, LeaseRequest, TransitionRequest

# An operation whose next ordinal is blocked by one of these waits for an operator: skip it.
_BLOCKING = frozenset({RejectionReason.ORPHAN_MARKER, RejectionReason.MARKER_MISMATCH})


def _open_when_up(dsn: str, schema: str, marker_root: str, durability: str, stop: Any) -> DeliveryJournalPort:
    """Open the journal, waiting (bounded) while the test has the server down."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return open_postgres_journal(dsn, schema=schema, markers=FileMarkerStore(Path(marker_root)),
                                         durability=Durability(durability), max_connections=1, connect_timeout_s=2)
        except JournalUnavailable:
            if stop.is_set() or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def crash_worker(worker_id: int, dsn: str, schema: str, marker_root: str, durability: str,
                 op_ids: list[str], stop: Any, results: Any) -> None:
    owner = f"crash-worker-{worker_id}"
    try:
        journal = _open_when_up(dsn, schema, marker_root, durability, stop)
    except Exception as exc:
        results.put(("crashed", op_ids[0], f"open: {type(exc).__name__}: {exc}"))
        raise
    markers = FileMarkerStore(Path(marker_root))
    blocked: set[str] = set()
    try:
        while not stop.is_set():
            for op_id in op_ids:
                if stop.is_set() or op_id in blocked:
                    continue
                try:
                    _one_submit(journal, markers, op_id, owner, results)
                except JournalUnavailable as exc:
                    results.put(("unavailable", op_id, exc.code.value))
                    time.sleep(0.05)
                except JournalRejection as exc:
                    if exc.reason in _BLOCKING:
                        blocked.add(op_id)
                    results.put(("rejected", op_id, exc.reason.value))
    except Exception as exc:  # reported so the test shows it (a spawned child's stderr is not kept)
        results.put(("crashed", op_ids[0], f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
        raise
    finally:
        journal.close()


def _one_submit(journal: DeliveryJournalPort, markers: FileMarkerStore, op_id: str, owner: str,
                results: Any) -> None:
    op = journal.get_operation(op_id)
    assert op is not None
    journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op_id, owner, timedelta(minutes=5)))
    if op.axes.execution_state is ExecutionState.SUBMITTING:
        # A grant whose proof of non-start was lost (or never written): this worker sent nothing.
        journal.transition(TransitionRequest(op_id, op.revision, "request_not_started_retry", lease_owner=owner))
        return
    grant = journal.reserve_and_mark_submitting(submit_request(op, publish_marker(journal, markers, op), owner))
    results.put(("grant", op_id, grant.attempt.attempt_ordinal, grant.attempt.attempt_id))
    journal.transition(TransitionRequest(op_id, grant.operation.revision, "request_not_started_retry",
                                         lease_owner=owner))


# ----- killing the server ---------------------------------------------------------------------
def _postmaster_pid(cluster: Cluster) -> int:
    return int((cluster.data_dir / "postmaster.pid").read_text().split()[0])


def kill_all_server_processes(cluster: Cluster) -> None:
    """SIGKILL the postmaster and every backend at once (power-cut-like for the processes)."""
    master = _postmaster_pid(cluster)
    for pid in [master, *children_of(master)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # Until the kernel has dropped it (reaped, not only exited): a restart checks the old pid.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{master}").exists():
        time.sleep(0.02)
    cluster.running = False


def kill_one_backend(cluster: Cluster) -> None:
    """SIGKILL one client backend: the postmaster then resets every backend (crash recovery)."""
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
                            "AND pid <> pg_backend_pid() ORDER BY pid").fetchall()
    if rows:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(rows[0][0]), signal.SIGKILL)


def wait_accepting(cluster: Cluster, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(cluster.dsn(), autocommit=True, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def set_server_setting(cluster: Cluster, name: str, value: str | None, *, expected: str | None = None) -> None:
    """ALTER SYSTEM SET (RESET when value is None) + reload; wait until a new session shows
    ``expected`` (default: value)."""
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM RESET {name}" if value is None else f"ALTER SYSTEM SET {name} = {value}")
        conn.execute("SELECT pg_reload_conf()")
    wanted = expected if expected is not None else value
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            row = conn.execute(f"SHOW {name}").fetchone()
        if row is not None and row[0] == wanted:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} did not become {wanted}")


def crash(cluster: Cluster, mode: str) -> None:
    """Crash the server one way and bring it back (crash recovery replays what was durable)."""
    if mode == "sigkill_all":
        kill_all_server_processes(cluster)
        cluster.start()
    elif mode == "sigkill_backend":
        kill_one_backend(cluster)
    elif mode == "immediate":
        cluster.stop("immediate")
        cluster.start()
    else:
        raise ValueError(mode)
    wait_accepting(cluster)


# ----- invariants, read through the port -------------------------------------------------------
def check_invariants(journal: DeliveryJournalPort, markers: FileMarkerStore, op_ids: list[str],
                     grants: list[tuple[str, int, str]], capacity_scope: str) -> dict[str, int]:
    """Raise AssertionError on any violation; return counts for the test's report line."""
    keys = [(op_id, ordinal) for op_id, ordinal, _ in grants]
    assert len(keys) == len(set(keys)), f"an ordinal was granted twice: {sorted(keys)}"
    orphans = {(o.operation_id, o.attempt_ordinal): o for o in journal.find_orphan_markers()}
    submitting: set[str] = set()
    journal_attempts: set[tuple[str, int]] = set()
    for op_id in op_ids:
        op = journal.get_operation(op_id)
        assert op is not None
        attempts = journal.list_attempts(op_id)
        journal_attempts |= {(op_id, a.attempt_ordinal) for a in attempts}
        if op.axes.execution_state is ExecutionState.SUBMITTING:
            last = attempts[-1]
            assert last.attempt_ordinal == op.attempt_count, f"{op_id}: SUBMITTING without its attempt"
            stored = markers.get(op.operation_namespace, op_id, last.attempt_ordinal)
            assert stored is not None and stored.digest == last.marker_digest, f"{op_id}: attempt without marker"
            assert markers.grant_claimed(op.operation_namespace, op_id, last.attempt_ordinal)
            submitting.add(last.attempt_id)
    held = set(journal.capacity_status(capacity_scope).held_by_attempts)
    assert held == submitting, f"held capacity {sorted(held)} != SUBMITTING attempts {sorted(submitting)}"
    lost = [key for key in keys if key not in journal_attempts]
    for key in lost:  # a grant the journal lost is reported as possible remote effect
        assert key in orphans and "possible remote effect" in orphans[key].reason, f"lost grant {key} unreported"
    for key, orphan in orphans.items():
        assert "possible remote effect" in orphan.reason or orphan.reason == "marker unreadable", (key, orphan)
    return {"grants": len(keys), "lost_grants": len(lost), "orphans": len(orphans), "submitting": len(submitting)}
