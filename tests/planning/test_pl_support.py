"""Limits from a compiled plan, the seeded skewed source, the plan audit and the fixed-width baselines."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from pl_builders import START, buckets_from, limits

from sink.compiler import compile_files, default_paths
from sink.compiler.loading import load_document
from sink.contracts.planning import ChildMeasurement, ChildWindow
from sink.contracts.profile import Limits, OperationProfile, WindowLimit
from sink.planning import plan_children, verify_coverage
from sink.planning.evaluation import (
    PlanAudit,
    audit_plan,
    bisect_until_within,
    fixed_width_children,
    plan_until_within_limits,
)
from sink.planning.limits import UNBOUNDED_WINDOW_DAYS, planning_limits, planning_limits_from_plan
from sink.planning.skewed_source import skewed_source

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def profile_limits() -> Limits:
    return load_document(SCENARIOS / "profiles" / "mock.dataset-jobs@1.yaml", OperationProfile).limits


def test_limits_of_the_bundled_async_workload_come_from_its_profile_and_override() -> None:
    plan = compile_files(default_paths(SCENARIOS / "workloads" / "measurements-async.yaml"))
    planning = planning_limits_from_plan(plan, fixed_overhead_bytes=42)
    source = plan.operation.limits
    assert (planning.max_rows, planning.max_decoded_bytes, planning.planning_decoded_bytes) == (
        source.max_rows, source.max_decoded_bytes, source.planning_decoded_bytes)
    assert planning.max_wire_bytes == source.max_wire_bytes
    assert planning.planning_wire_bytes == source.planning_wire_bytes
    assert source.preferred_window_days is not None
    assert planning.max_window_days == source.preferred_window_days.max
    assert planning.preferred_window_days == plan.workload.preferred_window_days
    assert planning.fixed_overhead_bytes == 42


def test_window_defaults_without_an_override_or_without_a_profile_window() -> None:
    base = profile_limits()
    windowed = base.model_copy(update={"preferred_window_days": WindowLimit(default=2, min=1, max=5)})
    defaulted = planning_limits(windowed, None)
    assert (defaulted.preferred_window_days, defaulted.max_window_days) == (2, 5)
    assert planning_limits(windowed, 4).preferred_window_days == 4
    unbounded = base.model_copy(update={"preferred_window_days": None})
    assert planning_limits(unbounded, None).max_window_days == UNBOUNDED_WINDOW_DAYS
    assert planning_limits(unbounded, None).preferred_window_days == UNBOUNDED_WINDOW_DAYS


def test_the_skewed_source_is_seeded_bounded_by_the_profile_and_skewed() -> None:
    bounds = planning_limits(profile_limits(), None)
    source = skewed_source(7, 365, bounds, median_rows=12_000)
    assert source == skewed_source(7, 365, bounds, median_rows=12_000)
    assert source != skewed_source(8, 365, bounds, median_rows=12_000)
    rows = sorted(day.rows for day in source.days)
    assert rows[0] == 0 and rows[-1] > 5 * rows[len(rows) // 2]  # empty days and a heavy tail
    for day in source.days:
        alone = ChildWindow(0, day.day, day.day + timedelta(days=1), 0, day.rows, day.decoded_bytes)
        measured = source.measure(alone)
        assert measured.rows <= bounds.max_rows and measured.decoded_bytes <= bounds.max_decoded_bytes
        assert measured.wire_bytes <= bounds.max_wire_bytes


def audits(median_rows: int, seed: int) -> tuple[PlanAudit, PlanAudit, PlanAudit]:
    """(adaptive, fixed-width as is, fixed-width bisected until within limits) on one skewed source."""
    bounds = planning_limits(profile_limits(), None)
    source = skewed_source(seed, 365, bounds, median_rows=median_rows)
    buckets = source.buckets()
    adaptive, _ = plan_until_within_limits(source.scope_from, source.scope_to, buckets, bounds, source.measure)
    fixed = fixed_width_children(source.scope_from, source.scope_to, buckets, bounds)
    repaired = bisect_until_within(fixed, buckets, bounds, source.measure)
    return tuple(  # type: ignore[return-value]
        audit_plan(p, scope_from=source.scope_from, scope_to=source.scope_to, total_rows=source.total_rows,
                   limits=bounds, measure=source.measure)
        for p in (adaptive, fixed, repaired)
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_on_a_skewed_source_adaptive_beats_fixed_width_that_meets_the_same_limits(seed: int) -> None:
    adaptive, fixed, repaired = audits(12_000, seed)
    assert (adaptive.hard_violations, adaptive.gaps, adaptive.overlaps) == (0, 0, 0)
    assert (repaired.hard_violations, repaired.gaps, repaired.overlaps) == (0, 0, 0)
    assert adaptive.requests < repaired.requests
    # Volume-blind fixed windows are no alternative here: they break hard limits.
    assert fixed.hard_violations > 0 and fixed.gaps == fixed.overlaps == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_on_a_low_volume_source_adaptive_beats_even_volume_blind_fixed_width(seed: int) -> None:
    adaptive, fixed, _ = audits(2_000, seed)
    assert (adaptive.hard_violations, adaptive.gaps, adaptive.overlaps) == (0, 0, 0)
    assert adaptive.requests < fixed.requests


def test_fixed_width_windows_are_exactly_the_preferred_width() -> None:
    children = fixed_width_children(START, START + timedelta(days=10), [], limits(preferred_window_days=3))
    assert [(c.scope_to - c.scope_from).days for c in children] == [3, 3, 3, 1]
    verify_coverage(children, START, START + timedelta(days=10), 0)


def test_bisection_repairs_only_what_is_over_and_keeps_a_lone_day() -> None:
    volumes = [(10, 3000)] * 3 + [(1, 1)] * 3
    buckets = buckets_from(volumes)
    fixed = fixed_width_children(START, START + timedelta(days=6), buckets, limits())

    def exact(child: ChildWindow) -> ChildMeasurement:
        return ChildMeasurement(child.rows, child.estimated_decoded_bytes, child.estimated_decoded_bytes // 10)

    repaired = bisect_until_within(fixed, buckets, limits(), exact)
    assert [(c.scope_to - c.scope_from).days for c in repaired] == [1, 2, 3]  # 9000 halved at day 1
    with pytest.raises(ValueError, match="nothing"):
        bisect_until_within((), buckets, limits(), exact)


def test_the_audit_counts_every_gap_overlap_and_violation() -> None:
    def d(offset: int) -> date:
        return START + timedelta(days=offset)

    children = (ChildWindow(0, d(0), d(2), 0, 5, 0), ChildWindow(1, d(3), d(5), 6, 9, 0),
                ChildWindow(2, d(4), d(6), 8, 2000, 0))
    measured = {0: ChildMeasurement(5, 10, 10), 1: ChildMeasurement(3, 10, 3600), 2: ChildMeasurement(1992, 10, 10)}
    audit = audit_plan(children, scope_from=d(0), scope_to=d(7), total_rows=2001, limits=limits(),
                       measure=lambda c: measured[c.ordinal])
    assert (audit.requests, audit.gaps, audit.overlaps) == (3, 4, 2)  # day 2, row 5, day 6, row 2000; day 4, row 8
    assert (audit.hard_violations, audit.target_misses) == (1, 1)  # child 2 rows; child 1 wire target


def test_plan_until_within_limits_reports_its_rounds() -> None:
    volumes = [(10, 1000)] * 8
    buckets = buckets_from(volumes)
    end = START + timedelta(days=8)

    def heavy_wire(child: ChildWindow) -> ChildMeasurement:
        return ChildMeasurement(child.rows, child.estimated_decoded_bytes, child.estimated_decoded_bytes)

    children, rounds = plan_until_within_limits(START, end, buckets, limits(), heavy_wire)
    assert rounds == 1 and len(children) > len(plan_children(START, end, buckets, limits()))
    assert all(heavy_wire(c).wire_bytes <= 3500 for c in children)
