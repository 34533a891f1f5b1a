"""The catalogs of bare-409's async job endpoint (``scenarios/matrix/async-bare-409*.yaml``): each loads on the
bare-409 receiver with its own async profile (no fence; the summary variant adds only the read-only summary,
the short-timeout variant only shorter timeouts), every row id is ``async.bare409.*``, each row covers the
cell its fault names, and together they leave no ``async_bulk_job/bare-409`` cell of either journal
uncovered (computed from the rows, whatever ``scenarios/fault-space.yaml`` still says). Expectations follow
the fence: no fence and no read-only summary, so a row whose upload may have reached the receiver without a
durable receipt ends blocked, with a why."""

from __future__ import annotations

import pytest

from certification.cli import _rows_for_journal
from certification.coverage import RECEIVER_FACING_WRITES, Cell, _excluded, fault_space, load_exclusions, row_cells
from certification.documents import load_yaml
from certification.history import Ending
from certification.journal_backend import parse_journal_choice
from certification.scenarios import BUNDLED, SERVER_FAULTS, Row, bundled_rows, failpoints_of, load_catalog
from sink.compiler import load_document
from sink.contracts.profile import OperationProfile

PROFILES = BUNDLED.parent / "profiles"
PERSONALITY, FAMILY, PREFIX = "bare-409", "async_bulk_job", "async.bare409."
# catalog: (operation profile of its workload, rows)
CATALOGS = {"async-bare-409.yaml": ("mock.bare-409-async@1", 19),
            "async-bare-409-crash.yaml": ("mock.bare-409-async@1", 28),
            "async-bare-409-wire.yaml": ("mock.bare-409-async-short-timeouts@1", 20),
            "async-bare-409-summary.yaml": ("mock.bare-409-async-summary@1", 8),
            "async-bare-409-journal.yaml": ("mock.bare-409-async@1", 24)}
MODES = ("sigkill", "immediate")
JOURNAL_POINTS = tuple(point for point in failpoints_of(("journal",), FAMILY)
                       if point.split(".")[1] in RECEIVER_FACING_WRITES)
SUMMARY_POINTS = (*failpoints_of(("summary",), FAMILY), "journal.record_verification.before",
                  "journal.record_verification.after")
# Crash points of the crash catalog: the upload reserved, sent, answered, recorded; the job's continuation,
# polls, observations and poll results. Blocked from the reservation's commit until the receipt is durable.
CRASH_POINTS = tuple(point for point in failpoints_of(("journal", "submit", "poll"), FAMILY)
                     if point.startswith("http.") or (point in JOURNAL_POINTS and point not in SUMMARY_POINTS))
BLOCKED_POINTS = ("journal.reserve_submitting.after", *failpoints_of(("submit",), FAMILY),
                  "journal.record_submit_result.before")
JOURNAL_BLOCKED = ("journal.reserve_submitting.after", "journal.record_submit_result.before")
ROWS = bundled_rows()


def _rows(name: str) -> list[Row]:
    return load_catalog(BUNDLED / name)


def _profile(ref: str) -> OperationProfile:
    return load_document(PROFILES / f"{ref}.yaml", OperationProfile)


def _mine(journal: str) -> set[Cell]:
    """The personality's meaningful cells (fault-space.yaml leaves out receipt expiry: no receipt TTL)."""
    exclusions = [rule for rule in load_exclusions() if rule.kind == "not_meaningful"]
    return {cell for cell in fault_space() if cell.journal == journal and cell.family == FAMILY
            and cell.personality == PERSONALITY and _excluded(cell, exclusions) is None}


def test_receipt_expiry_alone_is_not_meaningful_for_bare_409_jobs() -> None:
    every = {cell for cell in fault_space() if cell.family == FAMILY and cell.personality == PERSONALITY}
    left_out = every - _mine("sqlite") - _mine("postgres")
    assert {(cell.dimension, cell.key) for cell in left_out} == {("receiver", ("receipt_expiry",))}
    assert not [row for row in ROWS if row.row_id.startswith("async.bare409.") and row.fault.type == "receiver_clock"]


@pytest.mark.parametrize("name", sorted(CATALOGS))
def test_a_catalog_loads_on_the_bare_409_receiver_with_its_async_profile(name: str) -> None:
    ref, count = CATALOGS[name]
    rows = _rows(name)
    assert len(rows) == count
    assert all(row.family == FAMILY and row.row_id.startswith(PREFIX) for row in rows)
    assert {row.contract.name for row in rows if row.contract is not None} == {PERSONALITY}
    assert load_yaml(rows[0].workload)["sink"]["operation_profile_ref"] == ref
    profile = _profile(ref)
    assert profile.ref == ref and profile.protocol_family == FAMILY and profile.mutation_fence.type == "none"
    assert profile.limits.max_in_flight_children == 1
    for row in rows:
        if {Ending.OPERATOR, Ending.BLOCKED} & set(row.expect.end):
            assert row.expect.why, row.row_id
        assert row.caught_duplicating == (), row.row_id  # the receiver's bare 409 never applies a resend


def test_the_variants_change_only_what_their_names_say() -> None:
    bundled = _profile("mock.bare-409-async@1")
    assert bundled.verification is None or bundled.verification.summary is None
    fixed = {"id", "version", "description"}
    summary = _profile("mock.bare-409-async-summary@1")
    assert summary.verification == _profile("mock.dataset-jobs@1").verification
    assert summary.model_dump(exclude={*fixed, "verification"}) == bundled.model_dump(exclude={*fixed, "verification"})
    short = _profile("mock.bare-409-async-short-timeouts@1")
    assert (short.timeouts.connect_ms, short.timeouts.read_ms, short.timeouts.request_total_ms) == (1000, 2000, 6000)
    assert short.model_dump(exclude={*fixed, "timeouts"}) == bundled.model_dump(exclude={*fixed, "timeouts"})


def test_the_bundled_async_profile_matches_the_receivers_job_route() -> None:
    profile, dataset_jobs = _profile("mock.bare-409-async@1"), _profile("mock.dataset-jobs@1")
    behaviour = load_yaml(BUNDLED.parent / "receivers" / f"{PERSONALITY}.yaml")
    assert behaviour["async_jobs"]["fence"]["type"] == "bare_409"
    assert (profile.request.method, profile.request.path) == (dataset_jobs.request.method, dataset_jobs.request.path)
    assert profile.acknowledgement.poll == dataset_jobs.acknowledgement.poll
    assert profile.acknowledgement.duplicate is not None
    assert profile.acknowledgement.duplicate.requires_receipt_for_same_delivery_key


def test_the_crash_summary_and_journal_catalogs_list_every_receiver_facing_point() -> None:
    crash = [row for row in _rows("async-bare-409-crash.yaml") if row.fault.type == "failpoint"]
    assert {str(row.fault.point) for row in crash} == set(CRASH_POINTS)
    for row in crash:
        blocked = str(row.fault.point) in BLOCKED_POINTS
        assert row.expect.end == ((Ending.BLOCKED,) if blocked else (Ending.RECOVERY,)), row.row_id
    summary = _rows("async-bare-409-summary.yaml")
    assert [row.row_id for row in summary] == [f"{PREFIX}failpoint.{point}" for point in SUMMARY_POINTS]
    assert all(row.expect.end == (Ending.RECOVERY,) for row in summary)
    journal = _rows("async-bare-409-journal.yaml")
    assert [row.row_id for row in journal] == [f"{PREFIX}journal_kill.{mode}.{point}"
                                               for point in JOURNAL_POINTS for mode in MODES]
    for row in journal:
        blocked = str(row.fault.point) in JOURNAL_BLOCKED
        assert row.expect.end == ((Ending.BLOCKED,) if blocked else (Ending.RECOVERY,)), row.row_id
    # One day in scope: one child, one job, the one the point names.
    for name in ("async-bare-409-crash.yaml", "async-bare-409-summary.yaml", "async-bare-409-journal.yaml",
                 "async-bare-409-wire.yaml"):
        assert all(row.dataset is not None and len(row.dataset.universe) == 1 for row in _rows(name)), name


@pytest.mark.parametrize(("row_id", "cell"), [
    ("async.bare409.none", ("none", ("none",))),
    ("async.bare409.cut.after_commit", ("http", ("close", "response"))),
    ("async.bare409.status.409.bare", ("http", ("status", "request"))),
    ("async.bare409.job.cancelled", ("receiver", ("external_cancel",))),
    ("async.bare409.job.failed", ("receiver", ("job_failure",))),
    ("async.bare409.hold.kill.release", ("http", ("hold", "request"))),
    ("async.bare409.receiver.crash_after_commit", ("receiver", ("crash",))),
    ("async.bare409.failpoint.http.poll.after_response_body", ("crash_point", ("http.poll.after_response_body",))),
    ("async.bare409.failpoint.http.summary.before_send", ("crash_point", ("http.summary.before_send",))),
    ("async.bare409.tcp.reset.before_commit", ("tcp", ("reset_peer", "upstream"))),
    ("async.bare409.timeout.connect", ("wire", ("connect_stall",))),
    ("async.bare409.receiver.delay.after_commit", ("receiver", ("delay",))),
])
@pytest.mark.parametrize("journal", ["sqlite", "postgres"])
def test_each_row_covers_its_cell_of_the_personality(row_id: str, cell: tuple[str, tuple[str, ...]],
                                                     journal: str) -> None:
    (row,) = [row for row in ROWS if row.row_id == row_id]
    assert row_cells(row, journal) == [Cell(cell[0], cell[1], FAMILY, PERSONALITY, journal)]


def test_a_journal_kill_row_covers_its_server_cell_on_postgres() -> None:
    for row in _rows("async-bare-409-journal.yaml"):
        assert row_cells(row, "postgres") == [Cell("journal_server", (str(row.fault.point), str(row.fault.mode)),
                                                   FAMILY, PERSONALITY, "postgres")]


@pytest.mark.parametrize(("journal", "cells"), [("sqlite", 67), ("postgres", 91)])
def test_no_async_bare_409_cell_of_either_journal_is_left_uncovered(journal: str, cells: int) -> None:
    wanted = _mine(journal)
    assert len(wanted) == cells
    covered = {cell for row in ROWS for cell in row_cells(row, journal)}
    assert wanted <= covered, sorted(cell.name() for cell in wanted - covered)[:5]
    # ... and the new catalogs cover them on their own, each a cell of the space.
    rows = [row for name in CATALOGS for row in _rows(name)]
    assert wanted <= {cell for row in rows for cell in row_cells(row, journal)}


def test_the_journal_server_rows_stay_out_of_a_sqlite_run() -> None:
    journal = _rows("async-bare-409-journal.yaml")
    assert all(row.fault.type in SERVER_FAULTS for row in journal)
    kept = {row.row_id for row in _rows_for_journal(ROWS, parse_journal_choice("sqlite"), named=False)}
    assert not kept & {row.row_id for row in journal}
    space = set(fault_space())
    assert not [row.row_id for row in journal if set(row_cells(row, "sqlite")) & space]


def test_the_catalogs_are_the_files_the_prefix_names() -> None:
    assert {path.name for path in BUNDLED.glob("async-bare-409*.yaml")} == set(CATALOGS)
    assert {path.name for path in PROFILES.glob("mock.bare-409-async*.yaml")} == {
        f"{ref}.yaml" for ref, _ in CATALOGS.values()}
    workloads = BUNDLED.parent / "workloads"
    assert {load_yaml(path)["sink"]["operation_profile_ref"] for path in workloads.glob(
        "measurements-async-bare-409*.yaml")} == {ref for ref, _ in CATALOGS.values()}
