"""plan_children: the window rules, one test per rule, each failing when that rule alone breaks."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, timedelta

import pytest
from pl_builders import START, buckets_from, limits

from sink.contracts.errors import DeliveryError, ErrorCode, ExitClass
from sink.contracts.planning import ChildWindow, DayBucket
from sink.planning import (
    EMPTY_BOUNDARY_RULE,
    PLANNER_ALGORITHM_VERSION,
    InvalidPlanningInput,
    ScopeExceedsLimit,
    coverage_proof,
    plan_children,
)


def widths(children: tuple[ChildWindow, ...]) -> list[int]:
    return [(c.scope_to - c.scope_from).days for c in children]


def plan(volumes: list[tuple[int, int]], **overrides: int) -> tuple[ChildWindow, ...]:
    end = START + timedelta(days=len(volumes))
    return plan_children(START, end, buckets_from(volumes), limits(**overrides))


def test_low_volume_days_merge_past_the_preferred_width_up_to_the_max_width() -> None:
    children = plan([(1, 10)] * 8, preferred_window_days=3, max_window_days=4)
    assert widths(children) == [4, 4]


def test_window_width_never_exceeds_max_window_days() -> None:
    children = plan([(1, 10)] * 10, preferred_window_days=1, max_window_days=3)
    assert widths(children) == [3, 3, 3, 1]


def test_high_volume_windows_split_to_stay_within_the_decoded_target() -> None:
    # 3000 bytes a day: two days (6000) fit the 8000 target, three (9000) do not.
    children = plan([(10, 3000)] * 6)
    assert widths(children) == [2, 2, 2]
    assert all(c.estimated_decoded_bytes <= 8000 for c in children)


def test_a_window_exactly_at_the_decoded_target_is_kept_whole() -> None:
    children = plan([(10, 4000)] * 4)
    assert widths(children) == [2, 2]
    assert [c.estimated_decoded_bytes for c in children] == [8000, 8000]


def test_rows_never_exceed_max_rows_and_exactly_max_rows_fits() -> None:
    children = plan([(500, 10)] * 5)
    assert [c.rows for c in children] == [1000, 1000, 500]


def test_fixed_overhead_counts_in_every_child_estimate() -> None:
    # 3 x 2500 = 7500 fits 8000 without overhead; with 600 bytes of header it does not.
    assert widths(plan([(10, 2500)] * 3)) == [3]
    children = plan([(10, 2500)] * 3, fixed_overhead_bytes=600)
    assert widths(children) == [2, 1]
    assert [c.estimated_decoded_bytes for c in children] == [5600, 3100]


def test_a_day_above_the_soft_target_but_within_hard_limits_gets_its_own_window() -> None:
    children = plan([(10, 100), (10, 9000), (10, 100)])
    assert widths(children) == [1, 1, 1]
    assert children[1].estimated_decoded_bytes == 9000


def test_empty_days_join_a_lone_oversized_day_instead_of_costing_a_request() -> None:
    children = plan([(0, 0), (0, 0), (10, 9000), (0, 0), (10, 100)])
    assert widths(children) == [4, 1]
    assert [c.rows for c in children] == [10, 10]


def test_empty_days_absent_from_the_buckets_are_covered_and_rows_tile_in_order() -> None:
    volumes = [(3, 30), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (2, 20)]
    children = plan(volumes)
    assert [(c.scope_from, c.scope_to) for c in children] == [
        (START, START + timedelta(days=4)),
        (START + timedelta(days=4), START + timedelta(days=7)),
    ]
    assert [(c.row_start, c.row_end) for c in children] == [(0, 3), (3, 5)]
    assert [c.ordinal for c in children] == [0, 1]


def test_a_zero_row_scope_is_tiled_by_empty_max_width_windows_and_marked_empty() -> None:
    children = plan_children(START, START + timedelta(days=10), [], limits(max_window_days=4))
    assert widths(children) == [4, 4, 2]
    assert all(c.rows == 0 and c.row_start == 0 for c in children)
    proof = coverage_proof(children, START, START + timedelta(days=10), 0)
    assert proof.empty_boundary
    assert "empty-input policy" in EMPTY_BOUNDARY_RULE


def test_a_day_over_max_rows_fails_with_the_catalog_code_and_names_day_and_limit() -> None:
    with pytest.raises(ScopeExceedsLimit) as caught:
        plan([(10, 10), (1001, 10), (2000, 10)])
    error = caught.value
    assert isinstance(error, DeliveryError)
    assert error.code is ErrorCode.SCOPE_EXCEEDS_LIMIT
    assert error.exit_class is ExitClass.INVALID_INPUT
    assert (error.day, error.limit, error.limit_value) == (START + timedelta(days=1), "max_rows", 1000)
    assert error.actual == 1001
    assert "2026-01-02" in str(error)


def test_a_day_over_max_decoded_bytes_including_overhead_fails() -> None:
    assert len(plan([(10, 9900)], fixed_overhead_bytes=100)) == 1  # exactly at the hard limit
    with pytest.raises(ScopeExceedsLimit) as caught:
        plan([(10, 9901)], fixed_overhead_bytes=100)
    assert (caught.value.limit, caught.value.limit_value, caught.value.actual) == ("max_decoded_bytes", 10_000, 10_001)


def test_the_same_input_gives_the_same_plan_and_the_version_is_named() -> None:
    volumes = [(i * 37 % 400, (i * 37 % 400) * 11) for i in range(60)]
    assert plan(volumes) == plan(volumes)
    assert PLANNER_ALGORITHM_VERSION.startswith("restproof.planner.")


@pytest.mark.parametrize(
    ("buckets", "message"),
    [
        ([DayBucket(START + timedelta(days=1), 1, 1, 0), DayBucket(START, 1, 1, 1)], "out of order"),
        ([DayBucket(START, 1, 1, 0), DayBucket(START, 1, 1, 1)], "out of order"),
        ([DayBucket(START + timedelta(days=5), 1, 1, 0)], "outside"),
        ([DayBucket(START - timedelta(days=1), 1, 1, 0)], "outside"),
        ([DayBucket(START, 1, 1, 1)], "expected 0"),
        ([DayBucket(START, 2, 1, 0), DayBucket(START + timedelta(days=1), 1, 1, 3)], "expected 2"),
        ([DayBucket(START, 0, 5, 0)], "bytes but no rows"),
    ],
)
def test_inconsistent_buckets_are_refused(buckets: list[DayBucket], message: str) -> None:
    with pytest.raises(InvalidPlanningInput, match=message):
        plan_children(START, START + timedelta(days=5), buckets, limits())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_rows": 0}, "max_rows"),
        ({"max_window_days": 0}, "max_window_days"),
        ({"planning_decoded_bytes": 10_001}, "planning_decoded_bytes exceeds"),
        ({"planning_wire_bytes": 4_001}, "planning_wire_bytes exceeds"),
        ({"preferred_window_days": 5}, "preferred_window_days exceeds"),
        ({"fixed_overhead_bytes": 10_000}, "fixed_overhead_bytes"),
        ({"fixed_overhead_bytes": -1}, "fixed_overhead_bytes"),
    ],
)
def test_contradictory_limits_are_refused(overrides: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidPlanningInput, match=message):
        plan_children(START, START + timedelta(days=2), [], limits(**overrides))


@pytest.mark.parametrize(("scope_from", "scope_to"), [(START, START), (START, START - timedelta(days=1)),
                                                      (date(1900, 1, 1), date(2100, 1, 1))])
def test_an_empty_inverted_or_absurdly_long_scope_is_refused(scope_from: date, scope_to: date) -> None:
    with pytest.raises(InvalidPlanningInput, match="scope"):
        plan_children(scope_from, scope_to, [], limits())


def test_the_plan_is_identical_across_processes_and_hash_seeds() -> None:
    program = (
        "from sink.planning import coverage_proof, plan_children\n"
        "from sink.planning.limits import planning_limits\n"
        "from sink.planning.skewed_source import skewed_source\n"
        "from sink.contracts.profile import Limits, WindowLimit\n"
        "limits = planning_limits(Limits(max_rows=100000, max_decoded_bytes=64000000, planning_decoded_bytes=56000000,"
        " max_wire_bytes=16000000, planning_wire_bytes=14000000,"
        " preferred_window_days=WindowLimit(default=3, min=1, max=4)), None)\n"
        "s = skewed_source(5, 730, limits, median_rows=12000)\n"
        "c = plan_children(s.scope_from, s.scope_to, s.buckets(), limits)\n"
        "print(len(c), coverage_proof(c, s.scope_from, s.scope_to, s.total_rows).digest)\n"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", program], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True, timeout=120).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outputs) == 1
    count, digest = outputs.pop().split()
    assert int(count) > 100 and digest.startswith("sha256:")
