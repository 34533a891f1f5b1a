"""The catalogs of the dataset-jobs personality's synchronous endpoint (``scenarios/matrix/sync-dataset-jobs*.yaml``):
each loads on the dataset-jobs receiver with its own sync profile (``mock.dataset-jobs-sync@1``, or its
short-timeout variant for the wire rows), keeps the ``dsjsync.`` prefix, names the cells its faults are
meant for, and together they leave no ``sync_batch/dataset-jobs`` cell of either journal uncovered (the
exclusions file aside: a stale ``not_yet`` entry there is the reviewer's to remove)."""

from __future__ import annotations

import pytest

from certification.cli import _rows_for_journal
from certification.coverage import RECEIVER_FACING_WRITES, Cell, fault_space, row_cells
from certification.documents import load_yaml
from certification.history import Ending
from certification.journal_backend import parse_journal_choice
from certification.scenarios import BUNDLED, SERVER_FAULTS, Row, bundled_rows, failpoints_of, load_catalog
from sink.compiler import load_document
from sink.contracts.profile import OperationProfile

PERSONALITY = "dataset-jobs"
PREFIX = "sync.dsjsync."
PROFILES = BUNDLED.parent / "profiles"
CATALOGS = {"sync-dataset-jobs": "mock.dataset-jobs-sync@1", "sync-dataset-jobs-crash": "mock.dataset-jobs-sync@1",
            "sync-dataset-jobs-summary": "mock.dataset-jobs-sync@1",
            "sync-dataset-jobs-wire": "mock.dataset-jobs-sync-short-timeouts@1",
            "sync-dataset-jobs-journal": "mock.dataset-jobs-sync@1"}
"""Catalog -> the operation profile its workload names."""
ONE_DAY = ("2026-03-01", "2026-03-02")
MODES = ("sigkill", "immediate")
SUBMIT_POINTS = ("journal.reserve_submitting.before", "journal.reserve_submitting.after",
                 *failpoints_of(("submit",), "sync_batch"),
                 "journal.record_submit_result.before", "journal.record_submit_result.after")
SUMMARY_POINTS = (*failpoints_of(("summary",), "sync_batch"), "journal.record_verification.before",
                  "journal.record_verification.after")
JOURNAL_POINTS = tuple(point for point in failpoints_of(("journal",), "sync_batch")
                       if point.split(".")[1] in RECEIVER_FACING_WRITES)
NOT_PLAIN = {"sync.dsjsync.status.409.bare": (Ending.FIRST_RUN, Ending.RECOVERY, Ending.OPERATOR),
             "sync.dsjsync.receiver.miscount": (Ending.FIRST_RUN, Ending.RECOVERY, Ending.OPERATOR),
             "sync.dsjsync.receiver.partial": (Ending.BLOCKED,)}
"""The rows that accept an operator step or a blocked delivery (each says why)."""
ROWS = bundled_rows()


def _catalog(name: str) -> list[Row]:
    return load_catalog(BUNDLED / f"{name}.yaml")


def _mine() -> list[Row]:
    return [row for name in CATALOGS for row in _catalog(name)]


def _cells(row: Row, journal: str) -> list[str]:
    return [f"{cell.dimension}:{'.'.join(cell.key)}" for cell in row_cells(row, journal)]


@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_a_catalog_loads_on_the_dataset_jobs_receiver_with_its_sync_profile(name: str) -> None:
    rows = _catalog(name)
    assert rows
    assert {row.contract.name for row in rows if row.contract is not None} == {PERSONALITY}
    assert all(row.family == "sync_batch" and row.row_id.startswith(PREFIX) for row in rows)
    assert {row.receiver.name for row in rows} == {"dataset-jobs.yaml"}
    workload = load_yaml(rows[0].workload)
    ref = CATALOGS[name]
    assert workload["sink"]["operation_profile_ref"] == ref
    profile = load_document(PROFILES / f"{ref}.yaml", OperationProfile)
    assert profile.ref == ref and profile.protocol_family == "sync_batch"
    # The receiver's sync fence: an Idempotency-Key header, the key as it is, a read-only summary to verify.
    assert (profile.mutation_fence.type, profile.mutation_fence.header_name) == ("idempotency_key_header",
                                                                                 "Idempotency-Key")
    assert profile.verification is not None and profile.verification.summary is not None
    if name != "sync-dataset-jobs":  # one child in flight: the row's fault reaches the child it names
        assert {(row.scope_from, row.scope_to) for row in rows} == {ONE_DAY}


def test_the_short_timeout_profile_is_the_sync_profile_with_short_timeouts() -> None:
    bundled = load_document(PROFILES / "mock.dataset-jobs-sync@1.yaml", OperationProfile)
    short = load_document(PROFILES / "mock.dataset-jobs-sync-short-timeouts@1.yaml", OperationProfile)
    changed = {"id", "version", "description", "timeouts"}
    assert short.model_dump(exclude=changed) == bundled.model_dump(exclude=changed)
    assert short.timeouts.read_ms < bundled.timeouts.read_ms


def test_the_crash_summary_and_journal_catalogs_name_their_points() -> None:
    crash = [row for row in _catalog("sync-dataset-jobs-crash") if row.fault.type == "failpoint"]
    assert [row.row_id for row in crash] == [f"{PREFIX}failpoint.{point}" for point in SUBMIT_POINTS]
    summary = _catalog("sync-dataset-jobs-summary")
    assert [row.row_id for row in summary] == [f"{PREFIX}failpoint.{point}" for point in SUMMARY_POINTS]
    journal = _catalog("sync-dataset-jobs-journal")
    assert [row.row_id for row in journal] == [f"{PREFIX}journal_kill.{mode}.{point}"
                                               for point in JOURNAL_POINTS for mode in MODES]
    assert all(row.fault.type == "journal_kill" for row in journal)
    # A crash or a journal death recovers through the fence (or the summary): never an operator.
    assert all(row.expect.end == (Ending.RECOVERY,) for row in [*crash, *summary, *journal])


def test_expectations_other_than_recovery_say_why() -> None:
    rows = {row.row_id: row for row in _mine()}
    for row_id, ends in NOT_PLAIN.items():
        assert rows[row_id].expect.end == ends and rows[row_id].expect.why, row_id
    for row in rows.values():
        if row.row_id not in NOT_PLAIN:
            assert set(row.expect.end) <= {Ending.FIRST_RUN, Ending.RECOVERY}, row.row_id
    assert rows["sync.dsjsync.none"].expect.end == (Ending.FIRST_RUN,)


@pytest.mark.parametrize(("row_id", "cells"), [
    ("sync.dsjsync.none", ["none:none"]),
    ("sync.dsjsync.cut.connect", ["http:close.connect"]),
    ("sync.dsjsync.cut.request", ["http:close.request"]),
    ("sync.dsjsync.cut.after_commit", ["http:close.response"]),
    ("sync.dsjsync.status.503.retry_after", ["http:status.request"]),
    ("sync.dsjsync.receiver.500", ["receiver:status"]),
    ("sync.dsjsync.receiver.partial", ["receiver:reject_rows"]),
    ("sync.dsjsync.receiver.miscount", ["receiver:miscount"]),
    ("sync.dsjsync.kill.after_commit", ["http:kill.response"]),
    ("sync.dsjsync.kill.forwarded", ["http:kill.forwarded"]),
    ("sync.dsjsync.hold.kill.release", ["http:hold.request"]),
    ("sync.dsjsync.truncate.response", ["http:truncate.response"]),
    ("sync.dsjsync.receiver.crash_after_commit", ["receiver:crash"]),
    ("sync.dsjsync.failpoint.http.submit.after_body_sent", ["crash_point:http.submit.after_body_sent"]),
    ("sync.dsjsync.failpoint.http.summary.after_response_body", ["crash_point:http.summary.after_response_body"]),
    ("sync.dsjsync.tcp.reset.after_commit", ["tcp:reset_peer.downstream"]),
    ("sync.dsjsync.tcp.limit.request_body", ["tcp:limit_data.upstream"]),
    ("sync.dsjsync.delay.after_commit", ["http:delay.response"]),
    ("sync.dsjsync.hold.response.cut", ["http:hold.response"]),
    ("sync.dsjsync.timeout.connect", ["wire:connect_stall"]),
    ("sync.dsjsync.receiver.delay.after_commit", ["receiver:delay"]),
])
def test_each_row_covers_its_dataset_jobs_sync_cell_on_both_journals(row_id: str, cells: list[str]) -> None:
    row = {row.row_id: row for row in _mine()}[row_id]
    for journal in ("sqlite", "postgres"):
        assert _cells(row, journal) == cells
        assert all((cell.family, cell.personality) == ("sync_batch", PERSONALITY)
                   for cell in row_cells(row, journal))


def test_a_journal_kill_row_is_a_postgres_cell_only() -> None:
    space = set(fault_space())
    for row in _catalog("sync-dataset-jobs-journal"):
        assert row.fault.type in SERVER_FAULTS
        assert row_cells(row, "postgres") == [Cell("journal_server", (str(row.fault.point), str(row.fault.mode)),
                                                   "sync_batch", PERSONALITY, "postgres")]
        assert set(row_cells(row, "postgres")) <= space
        assert not set(row_cells(row, "sqlite")) & space
    kept = _rows_for_journal(_mine(), parse_journal_choice("sqlite"), named=False)
    assert not [row for row in kept if row.fault.type in SERVER_FAULTS]


def test_row_ids_are_unique_across_every_bundled_catalog() -> None:
    ids = [row.row_id for row in ROWS]  # bundled_rows() refuses a row id found in two catalogs
    assert len(ids) == len(set(ids))
    assert {row.row_id for row in _mine()} <= set(ids)


@pytest.mark.parametrize(("journal", "count"), [("sqlite", 53), ("postgres", 65)])
def test_no_dataset_jobs_sync_cell_is_left_uncovered(journal: str, count: int) -> None:
    wanted = {cell for cell in fault_space() if cell.journal == journal and cell.family == "sync_batch"
              and cell.personality == PERSONALITY}
    assert len(wanted) == count
    covered = {cell for row in ROWS for cell in row_cells(row, journal)}
    assert not wanted - covered, sorted(cell.name() for cell in wanted - covered)[:10]
    # ... and these catalogs alone cover them (no other catalog runs the dataset-jobs sync endpoint).
    mine = {cell for row in _mine() for cell in row_cells(row, journal)}
    assert wanted <= mine
