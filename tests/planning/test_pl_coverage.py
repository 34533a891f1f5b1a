"""Coverage proof: every way a plan can fail to tile its scope is caught, and the proof is stable."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from pl_builders import START

from sink.canonical import is_digest
from sink.contracts.planning import ChildWindow, DayBucket
from sink.identity import parent_plan_digest
from sink.planning import CoverageError, child_descriptor, coverage_proof, verify_coverage


def d(offset: int) -> date:
    return START + timedelta(days=offset)


def child(ordinal: int, lo: int, hi: int, row_start: int, row_end: int) -> ChildWindow:
    return ChildWindow(ordinal, d(lo), d(hi), row_start, row_end, 0)


GOOD = (child(0, 0, 3, 0, 10), child(1, 3, 5, 10, 10), child(2, 5, 9, 10, 25))


def test_a_tiling_plan_verifies() -> None:
    verify_coverage(GOOD, d(0), d(9), 25)


@pytest.mark.parametrize(
    ("children", "scope_to", "total", "kind"),
    [
        ((), 9, 25, "empty_plan"),
        ((child(0, 0, 3, 0, 10), child(2, 3, 5, 10, 10), child(1, 5, 9, 10, 25)), 9, 25, "ordinal"),
        ((child(0, 1, 3, 0, 10), child(1, 3, 5, 10, 10), child(2, 5, 9, 10, 25)), 9, 25, "scope_start"),
        ((child(0, 0, 3, 0, 10), child(1, 4, 5, 10, 10), child(2, 5, 9, 10, 25)), 9, 25, "gap"),
        ((child(0, 0, 3, 0, 10), child(1, 2, 5, 10, 10), child(2, 5, 9, 10, 25)), 9, 25, "overlap"),
        (GOOD, 10, 25, "scope_end"),
        ((child(0, 0, 3, 0, 10), child(1, 3, 5, 11, 11), child(2, 5, 9, 11, 25)), 9, 25, "row_gap"),
        ((child(0, 0, 3, 0, 10), child(1, 3, 5, 9, 10), child(2, 5, 9, 10, 25)), 9, 25, "row_overlap"),
        ((child(0, 0, 3, 1, 10), child(1, 3, 5, 10, 10), child(2, 5, 9, 10, 25)), 9, 25, "row_gap"),
        (GOOD, 9, 26, "row_total"),
    ],
)
def test_every_coverage_defect_is_named(
    children: tuple[ChildWindow, ...], scope_to: int, total: int, kind: str
) -> None:
    with pytest.raises(CoverageError) as caught:
        verify_coverage(children, d(0), d(scope_to), total)
    assert caught.value.kind == kind
    with pytest.raises(CoverageError):
        coverage_proof(children, d(0), d(scope_to), total)


def test_rows_paired_with_the_wrong_days_are_a_mismatch_against_the_parent_buckets() -> None:
    buckets = [DayBucket(d(0), 5, 50, 0), DayBucket(d(1), 5, 50, 5)]
    right = (child(0, 0, 1, 0, 5), child(1, 1, 2, 5, 10))
    verify_coverage(right, d(0), d(2), 10, buckets=buckets)
    assert coverage_proof(right, d(0), d(2), 10, buckets=buckets) == coverage_proof(right, d(0), d(2), 10)
    shifted = (child(0, 0, 1, 0, 3), child(1, 1, 2, 3, 10))
    verify_coverage(shifted, d(0), d(2), 10)  # tiles the rows...
    with pytest.raises(CoverageError) as caught:
        verify_coverage(shifted, d(0), d(2), 10, buckets=buckets)  # ...but not the rows of those days
    assert caught.value.kind == "row_mismatch"
    with pytest.raises(CoverageError) as caught:
        coverage_proof(right, d(0), d(2), 10, buckets=[DayBucket(d(5), 10, 1, 0)])
    assert caught.value.kind == "row_mismatch"


def test_the_proof_feeds_the_parent_plan_digest_and_moves_with_any_window() -> None:
    proof = coverage_proof(GOOD, d(0), d(9), 25)
    assert not proof.empty_boundary
    assert not coverage_proof((child(0, 0, 9, 0, 1),), d(0), d(9), 1).empty_boundary
    assert coverage_proof((child(0, 0, 9, 0, 0),), d(0), d(9), 0).empty_boundary
    assert is_digest(proof.digest)
    assert coverage_proof(list(GOOD), d(0), d(9), 25) == proof
    moved = (child(0, 0, 4, 0, 10), child(1, 4, 5, 10, 10), child(2, 5, 9, 10, 25))
    assert coverage_proof(moved, d(0), d(9), 25).digest != proof.digest

    def digest(children: tuple[ChildWindow, ...]) -> str:
        p = coverage_proof(children, d(0), d(9), 25)
        return parent_plan_digest(
            frozen_parent_digest="sha256:" + "1" * 64,
            compiled_plan_digest="sha256:" + "2" * 64,
            profile_contract_digest="sha256:" + "3" * 64,
            planner_algorithm_version="v",
            ordered_child_descriptors=[child_descriptor(c) for c in children],
            complete_coverage_proof=p.canonical(),
        )

    assert digest(GOOD) == digest(GOOD)
    assert digest(GOOD) != digest(moved)


def test_child_descriptor_names_window_and_rows_not_estimates() -> None:
    first = child_descriptor(ChildWindow(0, d(0), d(3), 0, 10, 999))
    assert first == {"ordinal": 0, "scope_from": "2026-01-01", "scope_to": "2026-01-04", "row_start": 0, "row_end": 10}
    assert first == child_descriptor(ChildWindow(0, d(0), d(3), 0, 10, 1))
