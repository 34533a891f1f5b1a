"""The per-personality journal-server catalogs (``scenarios/matrix/sync-<personality>-journal.yaml``): each
kills the PostgreSQL journal server, both ways, at the journal writes where its receiver's answers shape the
recovery, on the personality's bundled profile and the one-child scope of its crash catalog; together with
``sync-json-batches-journal.yaml`` they cover every ``journal_server`` cell of the PostgreSQL space for the
five personalities, and none of their rows is a cell of the SQLite space (a SQLite run leaves them out)."""

from __future__ import annotations

import fnmatch

import pytest

from certification.cli import _rows_for_journal
from certification.coverage import (
    RECEIVER_FACING_WRITES,
    Cell,
    coverage,
    fault_space,
    load_exclusions,
    row_cells,
)
from certification.journal_backend import parse_journal_choice
from certification.scenarios import BUNDLED, SERVER_FAULTS, Row, bundled_rows, failpoints_of, load_catalog

# personality: row prefix (the one of its crash catalog)
PERSONALITIES = {"stripe-like": "stripe", "ietf-idempotency-draft": "ietf", "aip-155-request-id": "aip155",
                 "fingerprint-ledger": "fingerprint", "bare-409": "bare409"}
MODES = ("sigkill", "immediate")
POINTS = tuple(point for point in failpoints_of(("journal",), "sync_batch")
               if point.split(".")[1] in RECEIVER_FACING_WRITES)
# bare-409 has no fence and no read-only summary: once SUBMITTING is acknowledged and while the answer is
# not durable, nothing proves the request absent or applied (seed, "Safe retry and remote fencing").
BARE_409_BLOCKED = ("journal.reserve_submitting.after", "journal.record_submit_result.before")
ROWS = bundled_rows()


def _catalog(personality: str) -> list[Row]:
    return load_catalog(BUNDLED / f"sync-{personality}-journal.yaml")


def test_the_receiver_facing_journal_points_of_the_sync_family() -> None:
    # A new receiver-facing write would add cells these catalogs must list: the test names them all.
    assert POINTS == ("journal.reserve_submitting.before", "journal.reserve_submitting.after",
                      "journal.record_submit_result.before", "journal.record_submit_result.after",
                      "journal.record_verification.before", "journal.record_verification.after")


@pytest.mark.parametrize("personality", sorted(PERSONALITIES))
def test_a_journal_catalog_kills_the_server_at_each_receiver_facing_write_both_ways(personality: str) -> None:
    prefix = PERSONALITIES[personality]
    rows = _catalog(personality)
    assert [row.row_id for row in rows] == [f"sync.{prefix}.journal_kill.{mode}.{point}"
                                            for point in POINTS for mode in MODES]
    assert all(row.fault.type == "journal_kill" and row.family == "sync_batch" for row in rows)
    assert {row.contract.name for row in rows if row.contract is not None} == {personality}
    crash = load_catalog(BUNDLED / f"sync-{personality}-crash.yaml")[0]
    # The personality's bundled profile and the one-day scope (one child in flight) of its crash catalog.
    assert {(row.workload, row.receiver, row.binding, row.scope_from, row.scope_to) for row in rows} == {
        (crash.workload, crash.receiver, crash.binding, crash.scope_from, crash.scope_to)}
    assert all(row.dataset is not None and len(row.dataset.universe) == 1 for row in rows)


@pytest.mark.parametrize("personality", sorted(PERSONALITIES))
def test_the_expectations_follow_the_fence(personality: str) -> None:
    for row in _catalog(personality):
        point = str(row.fault.point)
        if personality == "bare-409" and point in BARE_409_BLOCKED:
            assert row.expect.end == ("blocked",) and row.expect.why, row.row_id
        else:
            assert row.expect.end == ("recovery",), row.row_id


def test_every_journal_server_cell_of_the_five_personalities_is_covered_on_postgres() -> None:
    # (the async bare-409 and sync dataset-jobs journal cells: test_cert_bare_409_async_catalogs.py and
    # test_cert_dataset_jobs_sync_catalogs.py)
    wanted = {cell for cell in fault_space() if cell.journal == "postgres" and cell.dimension == "journal_server"
              and cell.family == "sync_batch" and cell.personality in PERSONALITIES}
    assert len(wanted) == len(PERSONALITIES) * len(POINTS) * len(MODES)
    assert {cell.key[0] for cell in wanted} == set(POINTS)
    covered = {cell for row in ROWS for cell in row_cells(row, "postgres")}
    assert wanted <= covered, sorted(cell.name() for cell in wanted - covered)[:5]
    result = coverage(ROWS, "postgres")
    assert result.unexplained_count == 0, result.unexplained[:5]


def test_no_exclusion_names_a_journal_server_cell_a_bundled_row_covers() -> None:
    # A stale exclusion would keep its reason in the report for cells that are covered.
    covered = {cell for row in ROWS for cell in row_cells(row, "postgres") if cell.dimension == "journal_server"}
    for rule in load_exclusions():
        stale = sorted(cell.name() for cell in covered if fnmatch.fnmatchcase(cell.name(), rule.cells))
        assert not stale, (rule.cells, stale[:5])


def test_the_journal_server_rows_leave_nothing_out_of_a_sqlite_runs_figure() -> None:
    server_rows = [row for row in ROWS if row.fault.type in SERVER_FAULTS]
    mine = [row for personality in PERSONALITIES for row in _catalog(personality)]
    assert {row.row_id for row in mine} <= {row.row_id for row in server_rows}
    # A SQLite run leaves every journal-server row out; none of them names a cell of the SQLite space,
    # so its figure is the one of every bundled row.
    kept = _rows_for_journal(ROWS, parse_journal_choice("sqlite"), named=False)
    assert {row.row_id for row in kept} == {row.row_id for row in ROWS} - {row.row_id for row in server_rows}
    space = set(fault_space())
    assert not [row.row_id for row in server_rows if set(row_cells(row, "sqlite")) & space]
    assert coverage(kept, "sqlite").covered == coverage(ROWS, "sqlite").covered
    # ... and on PostgreSQL every one of them is a cell of the space (none silently dropped from the figure).
    assert all(set(row_cells(row, "postgres")) <= space for row in server_rows)
    assert all(cell == Cell("journal_server", (str(row.fault.point), str(row.fault.mode)), "sync_batch",
                            row.contract.name if row.contract is not None else "", "postgres")
               for row in mine for cell in row_cells(row, "postgres"))
