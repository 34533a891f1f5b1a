"""SQLite under real multi-process contention: exactly one winner per race, every round.

Eight spawned processes share one journal file and, round after round, race to (1) admit the same
parent, (2) CAS the same child PLANNED -> SEALED, (3) move it to SUBMITTING through the critical
transaction, and (4) admit and submit eight overlapping generations of one effect scope.
"""

from __future__ import annotations

import multiprocessing
from datetime import timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jn_builders import CAPACITY, admission, child, day, seal, submit, week_parent

from sink.contracts.errors import DeliveryError
from sink.contracts.state import ExecutionState
from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalRejection
from sink.journal.records import GenerationKey, LeaseKind, LeaseRequest, TransitionRequest
from sink.journal.sqlite.adapter import open_sqlite_journal

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

WORKERS = 8
ROUNDS = 6


def _outcome(call: Any, *args: Any, **kwargs: Any) -> str:
    try:
        call(*args, **kwargs)
    except DeliveryError as exc:
        return exc.code.value
    except JournalRejection as exc:
        return exc.reason.value
    return "won"


def _admit_and_submit(journal: Any, plan: Any, owner: str) -> None:
    op = seal(journal, journal.admit_parent(plan).children[0])
    submit(journal, journal.markers, op, owner=owner)


def _race_worker(db: str, markers: str, index: int, barrier: Barrier, out: Any) -> None:
    journal = open_sqlite_journal(db, markers=FileMarkerStore(Path(markers)), busy_timeout_s=60)
    for rnd in range(ROUNDS):
        plan = week_parent(f"round-{rnd}", domain=f"round-domain-{rnd}")
        barrier.wait(timeout=60)
        created = journal.admit_parent(plan).created
        target = journal.admit_parent(plan).children[0]

        barrier.wait(timeout=60)
        sealed = _outcome(journal.transition, TransitionRequest(target.operation_id, 0, "plan_sealed"))

        barrier.wait(timeout=60)
        current = journal.get_operation(target.operation_id)
        assert current is not None
        # A shared lease owner isolates the revision CAS as the only arbiter of this race.
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, target.operation_id, "shared", timedelta(minutes=5)))
        submitted = _outcome(submit, journal, journal.markers, current, owner="shared", take_lease=False)

        barrier.wait(timeout=60)
        mine = admission(f"gen-{rnd}-{index}", [child(
            0, day(1 + index % 3), day(10), key=f"gen-{rnd}-{index}.c0", domain=f"gen-domain-{rnd}",
            generation=GenerationKey("2026-09-01T00:00:00Z", index),
        )])

        generation = _outcome(_admit_and_submit, journal, mine, f"worker-{index}")
        out.put((rnd, index, created, sealed, submitted, generation))
    journal.close()


def test_exactly_one_winner_per_race_over_many_rounds(tmp_path: Path) -> None:
    db, markers = tmp_path / "journal.sqlite3", tmp_path / "markers"
    setup = open_sqlite_journal(db, markers=FileMarkerStore(markers))
    setup.configure_capacity(CAPACITY, 1000)
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(str(db), str(markers), i, barrier, out)) for i in range(WORKERS)]
    for proc in procs:
        proc.start()
    results = []
    try:
        for _ in range(WORKERS * ROUNDS):
            results.append(out.get(timeout=60))
    except Empty:
        pytest.fail(f"workers stalled after {len(results)} results")
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs)

    for rnd in range(ROUNDS):
        rows = [r for r in results if r[0] == rnd]
        assert len(rows) == WORKERS
        assert sum(r[2] for r in rows) == 1, "exactly one admission writes"
        assert [r[3] for r in rows].count("won") == 1, [r[3] for r in rows]
        assert {r[3] for r in rows} <= {"won", "stale_revision"}
        assert [r[4] for r in rows].count("won") == 1, [r[4] for r in rows]
        assert {r[4] for r in rows} <= {"won", "stale_revision", "submit_not_permitted_from_state"}
        assert [r[5] for r in rows].count("won") == 1, [r[5] for r in rows]
        assert {r[5] for r in rows} <= {"won", "REST_DELIVERY_STALE_GENERATION",
                                        "REST_DELIVERY_OVERLAPPING_EFFECT_IN_FLIGHT"}
        parent = setup.load_parent(week_parent(f"round-{rnd}").parent_id)
        assert parent.children[0].axes.execution_state is ExecutionState.SUBMITTING
        assert len(setup.list_attempts(parent.children[0].operation_id)) == 1
        in_flight = [o for o in setup.operations_in_domain(f"gen-domain-{rnd}")
                     if o.axes.execution_state is ExecutionState.SUBMITTING]
        assert len(in_flight) == 1
    setup.close()
