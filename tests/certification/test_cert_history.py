"""A history's ending (first run, recovery, operator, blocked), what counts as completed, and its
canonical form and digest: stable for equal histories, moved by any change, blind to float noise
and to the order the sink listed its claims in."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from cert_history_support import DAY1, DAY2, day, history, request, run, snap

from certification.canonical_json import canonical_bytes
from certification.history import Completeness, DayState, Ending, FaultEvidence, RunKind, Snapshot


def test_a_first_run_that_delivered_everything_ends_first_run() -> None:
    h = history()
    assert h.completed() and h.ending() is Ending.FIRST_RUN


def test_recovery_runs_without_an_operator_end_recovery() -> None:
    h = history(runs=(run(1, -9), run(2, 4), run(3, 0)), snapshots=(snap(1), snap(2), snap(3), snap(0)))
    assert h.ending() is Ending.RECOVERY
    assert history(runs=(run(1, 4), run(2, 0)), snapshots=(snap(2),)).ending() is Ending.RECOVERY


def test_an_operator_step_anywhere_ends_operator() -> None:
    runs = (run(1, 4), run(2, 0, kind=RunKind.OPERATOR), run(3, 0))
    assert history(runs=runs, snapshots=(snap(3),)).ending() is Ending.OPERATOR
    operator_last = (run(1, 4), run(2, 0, kind=RunKind.OPERATOR))
    assert history(runs=operator_last, snapshots=(snap(2),)).ending() is Ending.OPERATOR


@pytest.mark.parametrize("code", [4, 3, 5, 1, -9])
def test_a_last_run_that_did_not_exit_zero_is_blocked(code: int) -> None:
    h = history(runs=(run(1, 0), run(2, code)), snapshots=(snap(1), snap(2)))
    assert not h.completed() and h.ending() is Ending.BLOCKED


def test_exit_zero_without_the_content_in_place_is_blocked() -> None:
    for state in (day(DAY2, missing=1), day(DAY2, surplus=1), day(DAY2, foreign=1)):
        h = history(snapshots=(snap(1, day(DAY1), state), snap(0)))
        assert not h.completed() and h.ending() is Ending.BLOCKED


def test_completion_is_read_right_after_the_last_run_not_once_settled() -> None:
    # The jobs the harness settled afterwards do not complete a delivery the sink left unfinished ...
    unfinished = history(snapshots=(snap(1, day(DAY1, missing=3), day(DAY2)), snap(0)))
    assert unfinished.ending() is Ending.BLOCKED
    # ... and a later surplus once settled is the duplicates checker's business, not the ending's.
    assert history(snapshots=(snap(1), snap(0, day(DAY1, surplus=1)))).ending() is Ending.FIRST_RUN


def test_without_runs_or_a_snapshot_after_the_last_run_nothing_completed() -> None:
    assert history(runs=()).ending() is Ending.BLOCKED
    assert history(snapshots=(snap(0),)).ending() is Ending.BLOCKED
    assert history(runs=(run(1, 0), run(2, 0)), snapshots=(snap(1), snap(0))).ending() is Ending.BLOCKED


def test_a_scope_of_empty_days_is_complete_when_they_stay_empty() -> None:
    empty = snap(1, day(DAY1, expected=0), day(DAY2, expected=0))
    assert history(snapshots=(empty,)).ending() is Ending.FIRST_RUN


def test_day_state_is_correct_only_without_missing_surplus_or_foreign_rows() -> None:
    assert DayState(DAY1, 3, 3, 0, 0, 0, "d").correct
    for changed in ({"missing": 1}, {"surplus": 1}, {"foreign": 1}):
        assert not replace(DayState(DAY1, 3, 3, 0, 0, 0, "d"), **changed).correct


def test_snapshots_are_found_by_run_and_days_by_name() -> None:
    first, settled = snap(1), snap(0, day(DAY1, missing=1))
    h = history(snapshots=(first, settled))
    assert h.snapshot_after(1) is first and h.settled is settled and h.snapshot_after(2) is None
    assert history(snapshots=(first,)).settled is None
    assert settled.day(DAY1) == day(DAY1, missing=1) and settled.day(DAY2) is None
    assert Snapshot(1, (), 0, 0).day(DAY1) is None


# --- canonical form and digest ----------------------------------------------------------------------------


def test_the_canonical_form_is_json_with_the_ending_and_sorted_claims() -> None:
    h = history(runs=(run(1, 0, claims={DAY2: "completed", DAY1: "unknown"}),))
    document = h.canonical()
    assert json.loads(canonical_bytes(document)) == document  # plain JSON values only
    assert document["ending"] == "first_run"
    assert list(document["runs"][0]["claims"]) == [DAY1, DAY2]
    assert document["requests"][0]["targets"] == [DAY1]
    assert document["fault"] == {"kind": "none", "fired": None, "detail": "no fault to fire", "target_day": None}
    assert document["completeness"] == {"proxy_log_dropped": 0, "tap_overflow": False, "ledger_read": True,
                                        "unmatched_proxy_entries": 0, "receiver_in_flight": 0}
    assert set(document) == {"row_id", "sink", "universe", "expected_digest", "mutation_kind", "fence_deduplicates",
                             "requests", "effects", "snapshots", "runs", "fault", "completeness", "ending"}


def test_the_digest_is_stable_and_blind_to_claim_order() -> None:
    one = history(runs=(run(1, 0, claims={DAY1: "completed", DAY2: "completed"}),))
    other = history(runs=(run(1, 0, claims={DAY2: "completed", DAY1: "completed"}),))
    assert one.digest() == other.digest() == one.digest()
    assert one.digest().startswith("sha256:") and len(one.digest()) == len("sha256:") + 64


def test_floats_are_rounded_to_microseconds_everywhere() -> None:
    base = history(requests=(request(1, at=100.0000001),))
    assert base.digest() == history(requests=(request(1, at=100.0),)).digest()
    assert base.digest() != history(requests=(request(1, at=100.00001),)).digest()
    assert base.canonical()["requests"][0]["at"] == 100.0
    started = replace(run(1, 0), started_at=1.23456789)
    assert history(runs=(started,)).canonical()["runs"][0]["started_at"] == 1.234568


@pytest.mark.parametrize("change", [
    {"row_id": "sync.other"}, {"sink": "other"}, {"universe": (DAY1,)}, {"expected_digest": "sha256:other"},
    {"mutation_kind": "append"}, {"fence_deduplicates": False}, {"requests": ()}, {"effects": ()},
    {"snapshots": (snap(1, day(DAY1, foreign=1), day(DAY2)), snap(0))}, {"runs": (run(1, 4),)},
    {"runs": (replace(run(1, 0), checkpoint=DAY2),)}, {"runs": (run(1, 0, problem="no result"),)},
    {"fault": FaultEvidence("proxy", True, "fired once", DAY1)},
    {"completeness": Completeness(proxy_log_dropped=1)},
])
def test_any_change_moves_the_digest(change: dict[str, object]) -> None:
    assert history(**change).digest() != history().digest()
