"""A busy ledger waits for the lock instead of failing: two receivers on one state directory take turns.

The wait must outlast SQLite's default busy timeout (5 s), so this file holds the lock for 7 s; it is
the last file of the ledger's mutation selection, so only mutants nothing else kills pay for it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mock_receiver.ledger import Ledger, RequestRecord

pytestmark = pytest.mark.timeout(60)

HOLD_SECONDS = 7.0
"""Longer than SQLite's 5 s default busy timeout, with margin for a loaded machine."""


def test_a_second_writer_on_the_same_state_dir_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    first, second = Ledger(path, durability="normal"), Ledger(path, durability="normal")
    holding = threading.Event()

    def hold_the_write_lock() -> None:
        with first.write() as txn:
            txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="first"), 1.0)
            holding.set()
            time.sleep(HOLD_SECONDS)

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    try:
        assert holding.wait(10)
        began = time.monotonic()
        with second.write() as txn:  # blocks until the first commits, then proceeds
            txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="second"), 2.0)
        waited = time.monotonic() - began
        holder.join(HOLD_SECONDS + 10)
        keys = [row[0] for row in second.conn.execute("SELECT mutation_key FROM requests ORDER BY request_id")]
    finally:
        holder.join(HOLD_SECONDS + 10)
        first.close()
        second.close()
    assert keys == ["first", "second"]
    assert waited > HOLD_SECONDS - 2  # it really waited for the other writer (the test is not vacuous)
