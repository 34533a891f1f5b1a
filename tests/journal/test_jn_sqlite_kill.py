"""SIGKILL inside each critical SQLite transaction leaves no partial state.

A spawned victim runs one journal call with a fault hook that stops it at a named point inside the
open transaction (after some rows were already written); the test then SIGKILLs it and reopens
the journal: every row written by the killed transaction must be gone, and the file must accept
new writes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
from jn_builders import CAPACITY, apply_fully, publish_marker, seal, step, submit, week_parent

from sink.contracts.state import CheckpointState, ExecutionState
from sink.journal.markers import FileMarkerStore
from sink.journal.records import LeaseKind, LeaseRequest, SubmitRequest, TransitionRequest
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]

VICTIM = "victim"


def _victim(db: str, markers: str, action: str, pause_at: str, signal_file: str) -> None:
    def hook(point: str) -> None:
        if point == pause_at:
            Path(signal_file).write_text(point)
            time.sleep(120)  # killed here, inside the open transaction

    journal = open_sqlite_journal(db, markers=FileMarkerStore(Path(markers)), fault_hook=hook)
    if action == "admit":
        journal.admit_parent(week_parent("killed-parent", domain="killed-domain"))
    elif action == "transition":
        op = journal.load_parent(week_parent("p").parent_id).children[2]
        journal.transition(TransitionRequest(op.operation_id, op.revision, "request_not_started_retry",
                                             lease_owner=VICTIM))
    elif action == "submit":
        op = journal.load_parent(week_parent("p").parent_id).children[1]
        journal.reserve_and_mark_submitting(SubmitRequest(
            op.operation_id, op.revision, 1, Path(signal_file + ".marker").read_text(), VICTIM, CAPACITY))
    elif action == "frontier":
        journal.promote_frontier(week_parent("p").parent_id, lease_owner=VICTIM)


def _prepare(journal: SqliteJournal, tmp: Path) -> None:
    """Child 0 ELIGIBLE (promotable), child 1 SEALED with lease + marker, child 2 SUBMITTING (holds capacity)."""
    journal.configure_capacity(CAPACITY, 4)
    a, b, c = journal.admit_parent(week_parent("p")).children
    apply_fully(journal, journal.markers, a)
    submit(journal, journal.markers, seal(journal, c), owner=VICTIM)
    b = seal(journal, b)
    journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, b.operation_id, VICTIM, timedelta(hours=1)))
    (tmp / "signal.marker").write_text(publish_marker(journal, journal.markers, b))
    journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, week_parent("p").parent_id, VICTIM, timedelta(hours=1)))


def _snapshot(journal: SqliteJournal) -> tuple[object, ...]:
    admitted = journal.load_parent(week_parent("p").parent_id)
    ops = admitted.children
    return (
        admitted.parent,
        ops,
        tuple(journal.list_attempts(o.operation_id) for o in ops),
        journal.capacity_status(CAPACITY),
        journal.get_parent(week_parent("killed-parent").parent_id),
        tuple(journal.operations_in_domain("killed-domain")),
        journal.effect_intervals("domain-a"),
    )


CASES = [
    ("admit", "admit.parent_inserted"),
    ("admit", "admit.before_commit"),
    ("transition", "transition.updated"),
    ("transition", "transition.before_commit"),
    ("submit", "submit.attempt_appended"),
    ("submit", "submit.before_commit"),
    ("frontier", "frontier.before_commit"),
]


@pytest.mark.parametrize(("action", "pause_at"), CASES, ids=[c[1] for c in CASES])
def test_sigkill_inside_the_transaction_leaves_no_partial_state(tmp_path: Path, action: str, pause_at: str) -> None:
    db, markers, signal_file = tmp_path / "j.sqlite3", tmp_path / "markers", tmp_path / "signal"
    journal = open_sqlite_journal(db, markers=FileMarkerStore(markers))
    _prepare(journal, tmp_path)
    before = _snapshot(journal)
    journal.close()

    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_victim, args=(str(db), str(markers), action, pause_at, str(signal_file)))
    proc.start()
    deadline = time.monotonic() + 30
    while not signal_file.exists():
        assert proc.is_alive(), f"victim exited (code {proc.exitcode}) before reaching {pause_at}"
        assert time.monotonic() < deadline, f"victim never reached {pause_at}"
        time.sleep(0.02)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGKILL

    reopened = open_sqlite_journal(db, markers=FileMarkerStore(markers), busy_timeout_s=5)
    assert _snapshot(reopened) == before
    # The file is writable again and the interrupted work can simply be redone.
    assert before[1][0].axes.checkpoint_state is CheckpointState.ELIGIBLE  # type: ignore[index]
    if action == "frontier":
        result = reopened.promote_frontier(week_parent("p").parent_id, lease_owner=VICTIM)
        assert result.frontier_order == 0
    else:
        op = reopened.load_parent(week_parent("p").parent_id).children[2]
        assert step(reopened, op, "request_not_started_retry", lease_owner=VICTIM).axes.execution_state \
            is ExecutionState.RETRY_WAIT
    reopened.close()
