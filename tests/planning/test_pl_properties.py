"""Hypothesis properties of the planner over random day distributions.

Heavy skew, empty days, zero-row scopes and single days beyond a hard limit all come from one
strategy. Every property is checked against an oracle written here from the volumes alone (not
from the planner's day table): limits hold, coverage is exact, the plan is the fewest windows the
window rule allows, the same input gives the same plan, and plan/measure/refine terminates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pl_builders import START, buckets_from, measure

from sink.contracts.planning import ChildWindow, DayBucket, PlanningLimits
from sink.planning import ScopeExceedsLimit, plan_children, refine, verify_coverage

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def limits_strategy(draw: st.DrawFn) -> PlanningLimits:
    planning_decoded = draw(st.integers(1, 3000))
    max_decoded = draw(st.integers(planning_decoded, planning_decoded * 2))
    planning_wire = draw(st.integers(1, 3000))
    max_window = draw(st.integers(1, 7))
    return PlanningLimits(
        max_rows=draw(st.integers(1, 300)),
        max_decoded_bytes=max_decoded,
        planning_decoded_bytes=planning_decoded,
        max_wire_bytes=draw(st.integers(planning_wire, planning_wire * 2)),
        planning_wire_bytes=planning_wire,
        preferred_window_days=draw(st.integers(1, max_window)),
        max_window_days=max_window,
        fixed_overhead_bytes=draw(st.integers(0, min(40, max_decoded - 1))),
    )


day_volume = st.one_of(
    st.just((0, 0)),  # empty day
    st.tuples(st.integers(1, 30), st.integers(0, 300)),  # ordinary day
    st.tuples(st.integers(1, 400), st.integers(0, 7000)),  # heavy day, sometimes beyond a hard limit
)
volumes_strategy = st.lists(day_volume, min_size=1, max_size=60)
ratios_strategy = st.lists(st.integers(0, 1500), min_size=60, max_size=60)  # wire per 1000 decoded


@dataclass(frozen=True)
class Oracle:
    """The window rule restated over plain per-day volumes."""

    volumes: list[tuple[int, int]]
    limits: PlanningLimits

    def estimate(self, lo: int, hi: int) -> int:
        return self.limits.fixed_overhead_bytes + sum(b for _, b in self.volumes[lo:hi])

    def feasible(self, lo: int, hi: int) -> bool:
        window = self.volumes[lo:hi]
        if len(window) > self.limits.max_window_days:
            return False
        if sum(1 for rows, _ in window if rows) <= 1:
            return True
        rows = sum(r for r, _ in window)
        return rows <= self.limits.max_rows and self.estimate(lo, hi) <= self.limits.planning_decoded_bytes

    def fewest_windows(self) -> int:
        n = len(self.volumes)
        best = [0] + [n + 1] * n
        for hi in range(1, n + 1):
            for lo in range(max(0, hi - self.limits.max_window_days), hi):
                if self.feasible(lo, hi):
                    best[hi] = min(best[hi], best[lo] + 1)
        return best[n]

    def first_oversized_day(self) -> tuple[int, str] | None:
        for index, (rows, size) in enumerate(self.volumes):
            if rows > self.limits.max_rows:
                return index, "max_rows"
            if self.limits.fixed_overhead_bytes + size > self.limits.max_decoded_bytes:
                return index, "max_decoded_bytes"
        return None


def span(child: ChildWindow) -> tuple[int, int]:
    return (child.scope_from - START).days, (child.scope_to - START).days


def data_days(volumes: list[tuple[int, int]], child: ChildWindow) -> int:
    lo, hi = span(child)
    return sum(1 for rows, _ in volumes[lo:hi] if rows)


def with_explicit_empty_days(volumes: list[tuple[int, int]]) -> list[DayBucket]:
    buckets, row = [], 0
    for offset, (rows, size) in enumerate(volumes):
        buckets.append(DayBucket(START + timedelta(days=offset), rows, size, row))
        row += rows
    return buckets


@SETTINGS
@given(volumes_strategy, limits_strategy())
def test_plans_meet_the_limits_cover_exactly_and_use_the_fewest_windows(
    volumes: list[tuple[int, int]], limits: PlanningLimits
) -> None:
    oracle = Oracle(volumes, limits)
    end = START + timedelta(days=len(volumes))
    oversized = oracle.first_oversized_day()
    if oversized is not None:
        with pytest.raises(ScopeExceedsLimit) as caught:
            plan_children(START, end, buckets_from(volumes), limits)
        assert (caught.value.day, caught.value.limit) == (START + timedelta(days=oversized[0]), oversized[1])
        return
    children = plan_children(START, end, buckets_from(volumes), limits)
    total_rows = sum(r for r, _ in volumes)
    verify_coverage(children, START, end, total_rows, buckets=buckets_from(volumes))
    covered = [day for child in children for day in range(*span(child))]
    assert covered == list(range(len(volumes)))  # every day once, in order
    row = 0
    for child in children:
        lo, hi = span(child)
        assert (child.row_start, child.row_end) == (row, row + sum(r for r, _ in volumes[lo:hi]))
        row = child.row_end
        assert hi - lo <= limits.max_window_days
        assert child.rows <= limits.max_rows
        assert child.estimated_decoded_bytes == oracle.estimate(lo, hi)
        assert child.estimated_decoded_bytes <= limits.max_decoded_bytes
        assert child.estimated_decoded_bytes <= limits.planning_decoded_bytes or data_days(volumes, child) <= 1
    assert len(children) == oracle.fewest_windows()
    if total_rows == 0:
        assert len(children) == -(-len(volumes) // limits.max_window_days)
    assert plan_children(START, end, buckets_from(volumes), limits) == children
    assert plan_children(START, end, with_explicit_empty_days(volumes), limits) == children


@SETTINGS
@given(volumes_strategy, ratios_strategy, limits_strategy())
def test_plan_measure_refine_terminates_with_every_hard_limit_met(
    volumes: list[tuple[int, int]], ratios: list[int], limits: PlanningLimits
) -> None:
    end = START + timedelta(days=len(volumes))
    buckets = buckets_from(volumes)
    overhead = limits.fixed_overhead_bytes
    try:
        children = plan_children(START, end, buckets, limits)
        rounds = 0
        while True:
            measured = measure(children, volumes, ratios, overhead)
            refined = refine(children, measured, buckets, limits)
            if refined is None:
                break
            assert len(refined) > len(children)  # each round strictly splits: termination
            verify_coverage(refined, START, end, sum(r for r, _ in volumes))
            kept = {(c.scope_from, c.scope_to) for c in refined}
            for child in children:
                m = measured[child.ordinal]
                within = (m.rows <= limits.max_rows and m.decoded_bytes <= limits.planning_decoded_bytes
                          and m.wire_bytes <= limits.planning_wire_bytes)
                assert not within or (child.scope_from, child.scope_to) in kept
            children, rounds = refined, rounds + 1
            assert rounds < len(volumes)
    except ScopeExceedsLimit as error:
        offset = (error.day - START).days
        alone = ChildWindow(0, error.day, error.day + timedelta(days=1), 0, volumes[offset][0], 0)
        one_day = measure([alone], volumes[offset:offset + 1], ratios[offset:offset + 1], overhead, error.day)[0]
        actual = {"max_rows": one_day.rows, "max_decoded_bytes": one_day.decoded_bytes,
                  "max_wire_bytes": one_day.wire_bytes}[error.limit]
        assert actual == error.actual > error.limit_value  # the day alone breaks the named limit
        return
    for child, m in zip(children, measure(children, volumes, ratios, overhead).values(), strict=True):
        assert m.rows <= limits.max_rows
        assert m.decoded_bytes <= limits.max_decoded_bytes
        assert m.wire_bytes <= limits.max_wire_bytes
        assert (child.scope_to - child.scope_from).days <= limits.max_window_days
        on_target = m.decoded_bytes <= limits.planning_decoded_bytes and m.wire_bytes <= limits.planning_wire_bytes
        assert on_target or data_days(volumes, child) <= 1
