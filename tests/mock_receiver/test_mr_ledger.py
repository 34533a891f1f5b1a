"""Group commit of the ledger: ordered items in one transaction, per-item rollback, durable after reopen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mock_receiver.ledger import Ledger, RequestRecord, Txn

pytestmark = pytest.mark.timeout(60)


def _log(key: str) -> object:
    def work(txn: Txn) -> int:
        return txn.record_request(RequestRecord(endpoint="sync_submit", method="POST", mutation_key=key), 0.0)
    return work


def _count(txn: Txn) -> int:
    return int(txn.conn.execute("SELECT count(*) FROM requests").fetchone()[0])


def test_concurrent_items_run_in_order_and_see_each_other(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite3")

    async def scenario() -> list[int]:
        # Each item counts the rows before it inserts: strictly serial execution gives 0..n-1.
        def counting_insert(txn: Txn) -> int:
            seen = _count(txn)
            txn.record_request(RequestRecord(endpoint="sync_submit", method="POST"), 0.0)
            return seen

        return list(await asyncio.gather(*(ledger.run(counting_insert) for _ in range(50))))

    try:
        assert sorted(asyncio.run(scenario())) == list(range(50))
        # Items queued while the writer was busy shared a transaction (one fsync for many requests).
        assert 1 <= ledger.group_commits < 50
    finally:
        ledger.close()


def test_a_failing_item_is_rolled_back_alone(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite3")

    def failing(txn: Txn) -> None:
        txn.record_request(RequestRecord(endpoint="sync_submit", method="POST", mutation_key="doomed"), 0.0)
        raise RuntimeError("item failed")

    async def scenario() -> list[object]:
        return list(await asyncio.gather(ledger.run(_log("a")), ledger.run(failing), ledger.run(_log("b")),
                                         return_exceptions=True))

    try:
        first, second, third = asyncio.run(scenario())
        assert isinstance(second, RuntimeError)
        assert isinstance(first, int) and isinstance(third, int)
        keys = [row[0] for row in ledger.conn.execute("SELECT mutation_key FROM requests ORDER BY request_id")]
        assert keys == ["a", "b"]
    finally:
        ledger.close()


def test_committed_items_survive_a_reopen(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite3")
    try:
        asyncio.run(ledger.run(_log("kept")))
    finally:
        ledger.close()
    reopened = Ledger(tmp_path / "l.sqlite3")
    try:
        assert [row[0] for row in reopened.conn.execute("SELECT mutation_key FROM requests")] == ["kept"]
    finally:
        reopened.close()
