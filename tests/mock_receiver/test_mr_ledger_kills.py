"""The ledger's own decisions, through its public API (``Ledger``, ``Txn``): a failed transaction
leaves nothing, range reads keep to their bounds and their resource, a delivery mark lands on its
request only, list cursors page and never restart, a file that is not a database is refused, a state-dir
path with URI-special characters still works, the admin clock stops at its documented total cap."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from mr_support import bundled, client_for

from mock_receiver.ledger import Ledger, LedgerRefused, RequestRecord, Txn

pytestmark = pytest.mark.timeout(60)


def _ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite3", durability="normal")


def _rows(txn: Txn, resource: str, dates: list[str]) -> None:
    for index, day in enumerate(dates):
        txn.conn.execute("INSERT INTO rows (resource, row_date, encoded, effect_id) VALUES (?, ?, ?, 1)",
                         (resource, day, f"{resource}:{day}:{index}".encode()))


def _job(txn: Txn, job_id: str) -> None:
    txn.conn.execute(
        "INSERT INTO jobs (job_id, request_id, resource, payload_digest, created_at, state, accepted_rows, "
        "rejected_rows, records) VALUES (?, 1, 'r', 'sha256:0', 0, 'queued', 0, 0, '[]')", (job_id,))


def test_a_failed_write_transaction_is_rolled_back_and_its_error_raised(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        with pytest.raises(ValueError, match="boom"), ledger.write() as txn:
            txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0)
            raise ValueError("boom")
        with ledger.write() as txn:  # the failed transaction is closed: a new one can begin
            assert txn.conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
    finally:
        ledger.close()


def test_applied_rows_keep_to_the_range_and_the_resource(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        with ledger.write() as txn:
            _rows(txn, "a", ["2026-03-01", "2026-03-02", "2026-03-03"])
            _rows(txn, "b", ["2026-03-02"])

            def days(start: str | None, end: str | None) -> list[str]:
                return sorted(row.split(b":")[1].decode() for row in txn.applied_rows("a", start, end))

            assert days("2026-03-02", "2026-03-03") == ["2026-03-02"]
            assert days(None, "2026-03-03") == ["2026-03-01", "2026-03-02"]
            assert days("2026-03-02", None) == ["2026-03-02", "2026-03-03"]
            assert days(None, None) == ["2026-03-01", "2026-03-02", "2026-03-03"]
            assert [bytes(r) for r in txn.applied_rows("b", None, None)] == [b"b:2026-03-02:0"]
    finally:
        ledger.close()


def test_a_delivery_mark_lands_on_its_own_request_only(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        with ledger.write() as txn:
            first = txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0)
            second = txn.record_request(RequestRecord(endpoint="batches", method="POST"), 2.0)
            txn.set_delivery(second, "true")
            marks = dict(txn.conn.execute("SELECT request_id, response_delivered FROM requests").fetchall())
        assert marks == {first: "unknown", second: "true"}
    finally:
        ledger.close()


def test_lists_without_filters_page_by_cursor_and_an_unknown_cursor_is_the_end(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        with ledger.write() as txn:
            for number in range(3):
                txn.record_request(RequestRecord(endpoint="batches", method="POST"), float(number))
            for job_id in ("job-a", "job-b", "job-c"):
                _job(txn, job_id)
            everything = txn.select("requests", {}, order="request_id", after=None, limit=10)
            assert [r["request_id"] for r in everything] == [1, 2, 3]
            assert [r["request_id"] for r in txn.select("requests", {}, order="request_id", after=1, limit=1)] == [2]
            assert [j["job_id"] for j in txn.select_jobs({}, after_job=None, limit=10)] == ["job-a", "job-b", "job-c"]
            assert [j["job_id"] for j in txn.select_jobs({}, after_job="job-a", limit=10)] == ["job-b", "job-c"]
            assert [j["job_id"] for j in txn.select_jobs({}, after_job="job-a", limit=1)] == ["job-b"]
            assert txn.select_jobs({}, after_job="no-such-job", limit=10) == []
            assert [j["job_id"] for j in txn.select_jobs({"job_id": "job-c"}, after_job=None, limit=10)] == ["job-c"]
    finally:
        ledger.close()


def test_a_path_that_cannot_be_opened_read_only_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(LedgerRefused, match="cannot be opened read-only"):
        Ledger(directory)


def test_one_failing_work_item_of_a_group_commit_leaves_the_others(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)

    def good(txn: Txn) -> int:
        return txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0)

    def bad(txn: Txn) -> int:
        txn.record_request(RequestRecord(endpoint="batches", method="POST"), 2.0)
        raise RuntimeError("this item fails")

    async def both() -> list[object]:
        return list(await asyncio.gather(ledger.run(good), ledger.run(bad), ledger.run(good),
                                         return_exceptions=True))

    try:
        first, failed, third = asyncio.run(both())
        assert isinstance(failed, RuntimeError)
        assert isinstance(first, int) and isinstance(third, int) and first != third
        with ledger.write() as txn:
            assert txn.conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 2
    finally:
        ledger.close()


def test_a_request_recorded_with_defaults_keeps_the_documented_defaults(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        with ledger.write() as txn:
            request_id = txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0)
            (stored,) = txn.select("requests", {"request_id": request_id}, order="request_id", after=None, limit=1)
    finally:
        ledger.close()
    assert (stored["body_bytes"], stored["status"], stored["outcome"], stored["response_delivered"]) == \
        (0, 0, "received", "unknown")


@pytest.mark.parametrize(("durability", "synchronous"), [("full", 2), ("normal", 1)])
def test_durability_full_means_synchronous_full(tmp_path: Path, durability: str, synchronous: int) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3", durability=durability)
    try:
        assert ledger.conn.execute("PRAGMA synchronous").fetchone()[0] == synchronous
    finally:
        ledger.close()
    default = Ledger(tmp_path / "default.sqlite3")
    try:
        assert default.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # full unless told otherwise
    finally:
        default.close()


def test_a_ledger_written_before_the_newer_columns_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = Ledger(path, durability="normal")
    with ledger.write() as txn:
        txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0)
    ledger.close()
    old = sqlite3.connect(path)
    old.execute("ALTER TABLE requests DROP COLUMN response_delivered")
    old.execute("ALTER TABLE effects DROP COLUMN content_sum")
    old.commit()
    old.close()
    reopened = Ledger(path, durability="normal")
    try:
        columns = {row[1] for row in reopened.conn.execute("PRAGMA table_info(requests)")}
        effect_columns = {row[1] for row in reopened.conn.execute("PRAGMA table_info(effects)")}
        kept = reopened.conn.execute("SELECT response_delivered FROM requests").fetchall()
    finally:
        reopened.close()
    assert "response_delivered" in columns and "content_sum" in effect_columns
    assert [tuple(row) for row in kept] == [("unknown",)]


def test_each_group_commit_is_counted_once(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)

    async def one() -> int:
        return await ledger.run(lambda txn: txn.record_request(RequestRecord(endpoint="batches", method="POST"), 1.0))

    try:
        asyncio.run(one())
        assert ledger.group_commits == 1
    finally:
        ledger.close()


DOCUMENTED_CLOCK_CAP = 3_162_240_000
"""docs/mock-receiver.md, admin API: the TOTAL clock offset is capped at 100 years (3,162,240,000 s)."""


def test_the_clock_offset_reaches_the_documented_cap_and_not_one_second_more(tmp_path: Path) -> None:
    step = 10 * 365 * 86_400  # the most one call may move it
    with client_for(bundled("stripe-like"), tmp_path) as client:
        offset = 0
        while offset + step <= DOCUMENTED_CLOCK_CAP:
            assert client.post("/_admin/clock/advance", json={"seconds": step}).status_code == 200
            offset += step
        last = client.post("/_admin/clock/advance", json={"seconds": DOCUMENTED_CLOCK_CAP - offset})
        assert last.status_code == 200 and last.json()["offset_seconds"] == DOCUMENTED_CLOCK_CAP
        refused = client.post("/_admin/clock/advance", json={"seconds": 1})
        assert refused.status_code == 422 and refused.json()["type"].endswith("clock_out_of_range")
        assert client.get("/_admin/clock").json()["offset_seconds"] == DOCUMENTED_CLOCK_CAP


@pytest.mark.parametrize("name", ["state?mode=rw", "state#1", "state%20dir", "state dir&x=1"])
def test_a_state_dir_with_uri_special_characters_reopens_and_still_refuses_a_foreign_file(
        tmp_path: Path, name: str) -> None:
    """The read-only probe opens the file by URI: the path's '?', '#', '%' must stay part of the name."""
    state = tmp_path / name
    state.mkdir()
    ledger = Ledger(state / "ledger.sqlite3", durability="normal")
    with ledger.write() as txn:
        txn.record_request(RequestRecord(endpoint="batches", method="POST", mutation_key="kept"), 1.0)
    ledger.close()
    reopened = Ledger(state / "ledger.sqlite3", durability="normal")
    try:
        assert [row[0] for row in reopened.conn.execute("SELECT mutation_key FROM requests")] == ["kept"]
    finally:
        reopened.close()
    foreign = sqlite3.connect(state / "other.sqlite3")
    foreign.execute("CREATE TABLE invoices (id INTEGER)")
    foreign.commit()
    foreign.close()
    with pytest.raises(LedgerRefused, match="not a mock-receiver ledger"):
        Ledger(state / "other.sqlite3")
    assert sorted(path.name for path in state.iterdir()) == ["ledger.sqlite3", "other.sqlite3"]
