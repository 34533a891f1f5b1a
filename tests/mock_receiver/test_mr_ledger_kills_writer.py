"""The ledger's group-commit writer, through ``Ledger.run`` / ``enqueue`` / ``close``: one writer thread
for every event loop, one writer task per loop (replaced when its loop or the task is gone), batches
capped at 256 items, a failed COMMIT answered to every item of its batch, a caller that gives up does
not stop the others, a failing fire-and-forget item is dropped quietly, and ``close`` waits for the batch
being written."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mock_receiver.ledger import Ledger, RequestRecord, Txn

pytestmark = pytest.mark.timeout(60)

BATCH_CAP = 256
"""The writer's batch size limit (mock_receiver/ledger.py): a burst above it needs a second commit."""


def _ledger(path: Path) -> Ledger:
    return Ledger(path / "ledger.sqlite3", durability="normal")


def _record(key: str) -> Any:
    def work(txn: Txn) -> str:
        txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key=key), 1.0)
        return key
    return work


def _stored_keys(path: Path) -> list[str]:
    reopened = _ledger(path)
    try:
        return [row[0] for row in reopened.conn.execute("SELECT mutation_key FROM requests ORDER BY request_id")]
    finally:
        reopened.close()


@pytest.mark.parametrize(("burst", "commits"), [(BATCH_CAP, 1), (BATCH_CAP + 1, 2)])
def test_a_burst_is_committed_in_batches_of_at_most_the_cap(tmp_path: Path, burst: int, commits: int) -> None:
    ledger = _ledger(tmp_path)

    async def burst_then_wait() -> None:
        for number in range(burst - 1):  # queued before the writer task first runs: one pending burst
            ledger.enqueue(_record(f"k{number}"))
        await ledger.run(_record("last"))

    try:
        asyncio.run(burst_then_wait())
        assert ledger.group_commits == commits
    finally:
        ledger.close()
    assert len(_stored_keys(tmp_path)) == burst


def test_work_runs_on_the_one_writer_thread_never_on_the_event_loop(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    seen: list[str] = []

    def where(txn: Txn) -> str:
        seen.append(threading.current_thread().name)
        return threading.current_thread().name

    async def many() -> str:
        await asyncio.gather(*(ledger.run(where) for _ in range(5)))
        await ledger.run(where)
        return threading.current_thread().name

    try:
        loop_thread = asyncio.run(many())
    finally:
        ledger.close()
    assert len(set(seen)) == 1 and len(seen) == 6
    assert seen[0] != loop_thread and seen[0].startswith("ledger-writer")


def test_two_event_loops_share_the_one_writer(tmp_path: Path) -> None:
    """Two loops on one ledger (two TestClients on one receiver do this): a batch of the second loop
    waits for the first loop's batch to commit; a second writer thread on the same connection would
    begin a transaction inside the running one and fail."""
    ledger = _ledger(tmp_path)
    started, release = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def slow(txn: Txn) -> str:
        txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="first"), 1.0)
        started.set()
        release.wait(10)
        return "first"

    def first_loop() -> None:
        results["first"] = asyncio.run(ledger.run(slow))

    other = threading.Thread(target=first_loop)
    other.start()
    try:
        assert started.wait(10)
        timer = threading.Timer(0.3, release.set)
        timer.start()
        results["second"] = asyncio.run(asyncio.wait_for(ledger.run(_record("second")), 10))
        timer.join(10)
        other.join(10)
    finally:
        release.set()
        other.join(10)
        ledger.close()
    assert results == {"first": "first", "second": "second"}
    assert _stored_keys(tmp_path) == ["first", "second"]


def test_a_new_loop_is_served_after_the_old_one_closed_with_its_writer_task_pending(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    old = asyncio.new_event_loop()
    try:
        assert old.run_until_complete(ledger.run(_record("old"))) == "old"
    finally:
        old.close()  # closed without cancelling: its writer task stays pending on a dead loop
    try:
        assert asyncio.run(asyncio.wait_for(ledger.run(_record("new")), 5)) == "new"
    finally:
        ledger.close()
    assert _stored_keys(tmp_path) == ["old", "new"]


def test_a_writer_task_cancelled_by_a_shutdown_sweep_is_replaced(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)

    async def sweep_then_write() -> str:
        await ledger.run(_record("before"))
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        return await asyncio.wait_for(ledger.run(_record("after")), 5)

    try:
        assert asyncio.run(sweep_then_write()) == "after"
    finally:
        ledger.close()
    assert _stored_keys(tmp_path) == ["before", "after"]


def test_one_loop_keeps_one_writer_task_however_many_requests(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)

    async def sequential() -> int:
        for number in range(20):
            await ledger.run(_record(f"k{number}"))
        return len(asyncio.all_tasks())

    try:
        assert asyncio.run(sequential()) == 2  # this coroutine's task and the one writer task
    finally:
        ledger.close()


def test_a_failed_commit_is_the_answer_of_every_item_of_its_batch(tmp_path: Path) -> None:
    """Another process holds the write lock past the busy timeout: each item of the batch gets the error
    (none is left waiting forever), and the writer commits the next batch once the lock is gone."""
    ledger = _ledger(tmp_path)
    holder = _ledger(tmp_path)
    ledger.conn.execute("PRAGMA busy_timeout = 100")  # the 30 s production wait, shortened for the test

    async def locked_then_free() -> tuple[list[object], str]:
        with holder.write():
            failed = await asyncio.wait_for(asyncio.gather(
                *(ledger.run(_record(f"k{n}")) for n in range(3)), return_exceptions=True), 10)
        return list(failed), await asyncio.wait_for(ledger.run(_record("free")), 10)

    try:
        failed, free = asyncio.run(locked_then_free())
    finally:
        ledger.close()
        holder.close()
    assert [type(error).__name__ for error in failed] == ["OperationalError"] * 3
    assert all("locked" in str(error) for error in failed)
    assert free == "free" and _stored_keys(tmp_path) == ["free"]


def test_a_caller_that_gives_up_does_not_stop_the_others_of_its_batch(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    started, release = threading.Event(), threading.Event()

    def slow(txn: Txn) -> str:
        txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="abandoned"), 1.0)
        started.set()
        release.wait(10)
        return "abandoned"

    async def abandon_the_first() -> list[str]:
        first = asyncio.ensure_future(ledger.run(slow))
        rest = [asyncio.ensure_future(ledger.run(_record(key))) for key in ("second", "third")]
        while not started.is_set():
            await asyncio.sleep(0.01)
        first.cancel()
        await asyncio.sleep(0)
        release.set()
        return list(await asyncio.wait_for(asyncio.gather(*rest), 5))

    try:
        assert asyncio.run(abandon_the_first()) == ["second", "third"]
    finally:
        release.set()
        ledger.close()
    assert _stored_keys(tmp_path) == ["abandoned", "second", "third"]  # a cancelled wait undoes nothing


def test_a_failing_fire_and_forget_item_is_dropped_quietly(tmp_path: Path) -> None:
    """enqueue retrieves the failure: asyncio never reports an exception that was never retrieved."""
    ledger = _ledger(tmp_path)
    reported: list[dict[str, Any]] = []

    def failing(txn: Txn) -> None:
        raise RuntimeError("this fire-and-forget item fails")

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        ledger.enqueue(failing)
        ledger.enqueue(_record("kept"))
        for number in range(3):  # later batches: the writer lets go of the failed item's future
            await ledger.run(_record(f"later{number}"))
        gc.collect()
        await asyncio.sleep(0)

    try:
        asyncio.run(scenario())
        gc.collect()
    finally:
        ledger.close()
    assert [context.get("message") for context in reported] == []
    assert _stored_keys(tmp_path) == ["kept", "later0", "later1", "later2"]


def test_close_waits_for_the_batch_being_written(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    started = threading.Event()
    results: dict[str, object] = {}

    def slow(txn: Txn) -> str:
        started.set()
        time.sleep(0.3)  # close() is called meanwhile
        txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="in-flight"), 1.0)
        return "in-flight"

    def serve() -> None:
        try:
            results["answer"] = asyncio.run(ledger.run(slow))
        except Exception as error:
            results["answer"] = error

    server = threading.Thread(target=serve)
    server.start()
    assert started.wait(10)
    ledger.close()
    server.join(10)
    assert results == {"answer": "in-flight"}
    assert _stored_keys(tmp_path) == ["in-flight"]
