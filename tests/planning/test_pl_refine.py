"""refine: split only what a measurement shows is over a limit, at the point the ratio suggests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pl_builders import START, buckets_from, limits, measure

from sink.contracts.errors import ErrorCode
from sink.contracts.planning import ChildMeasurement, ChildWindow
from sink.planning import InvalidPlanningInput, ScopeExceedsLimit, plan_children, refine


def planned(volumes: list[tuple[int, int]], **overrides: int) -> tuple[ChildWindow, ...]:
    return plan_children(START, START + timedelta(days=len(volumes)), buckets_from(volumes), limits(**overrides))


def widths(children: tuple[ChildWindow, ...]) -> list[int]:
    return [(c.scope_to - c.scope_from).days for c in children]


def test_nothing_to_refine_when_every_measurement_is_within_limits() -> None:
    volumes = [(10, 1000)] * 8
    children = planned(volumes)
    assert refine(children, measure(children, volumes, [500] * 8), buckets_from(volumes), limits()) is None


def test_unmeasured_children_are_kept_as_planned() -> None:
    volumes = [(10, 1000)] * 8
    children = planned(volumes)
    assert refine(children, {}, buckets_from(volumes), limits()) is None


def test_a_wire_target_violation_splits_where_the_measured_ratio_points_and_keeps_the_rest() -> None:
    volumes = [(10, 1000)] * 8
    children = planned(volumes)  # two 4-day children of 4000 estimated bytes
    ratios = [950] * 4 + [100] * 4  # first child measures 3800 wire bytes: over the 3500 target
    refined = refine(children, measure(children, volumes, ratios), buckets_from(volumes), limits())
    assert refined is not None
    # cap = 3500 * 4000 // 3800 = 3684 estimated bytes: three days fit, not four; a blind halving gives 2+2.
    assert widths(refined) == [3, 1, 4]
    assert [c.ordinal for c in refined] == [0, 1, 2]
    assert (refined[2].scope_from, refined[2].scope_to) == (children[1].scope_from, children[1].scope_to)
    assert [(c.row_start, c.row_end) for c in refined] == [(0, 30), (30, 40), (40, 80)]


def test_a_hard_wire_violation_splits_too() -> None:
    volumes = [(10, 1000)] * 4
    children = planned(volumes)
    refined = refine(children, measure(children, volumes, [1100] * 4), buckets_from(volumes), limits())
    assert refined is not None and len(refined) > 1


def test_a_decoded_target_violation_from_an_underestimate_splits() -> None:
    volumes = [(10, 1000)] * 4
    children = planned(volumes)
    measured = {0: ChildMeasurement(rows=40, decoded_bytes=8500, wire_bytes=100)}
    refined = refine(children, measured, buckets_from(volumes), limits())
    assert refined is not None and widths(refined) == [3, 1]


def test_a_one_day_child_over_a_hard_limit_fails_and_is_never_divided() -> None:
    volumes = [(10, 100), (10, 3000), (10, 100)]
    children = planned(volumes, planning_decoded_bytes=3000)
    assert widths(children) == [1, 1, 1]
    with pytest.raises(ScopeExceedsLimit) as caught:
        refine(children, measure(children, volumes, [100, 1500, 100]), buckets_from(volumes),
               limits(planning_decoded_bytes=3000))
    assert caught.value.code is ErrorCode.SCOPE_EXCEEDS_LIMIT
    error = caught.value
    assert (error.day, error.limit, error.actual) == (START + timedelta(days=1), "max_wire_bytes", 4500)


def test_one_data_day_with_empty_neighbours_over_a_hard_limit_fails_instead_of_shedding_empty_days() -> None:
    volumes = [(0, 0), (10, 3000), (0, 0)]
    children = planned(volumes)
    assert widths(children) == [3]
    with pytest.raises(ScopeExceedsLimit) as caught:
        refine(children, measure(children, volumes, [0, 1500, 0]), buckets_from(volumes), limits())
    assert caught.value.day == START + timedelta(days=1)


def test_a_one_day_child_over_only_a_soft_target_is_accepted() -> None:
    volumes = [(10, 3000)]
    children = planned(volumes)
    assert refine(children, measure(children, volumes, [1200]), buckets_from(volumes), limits()) is None


def test_a_lone_day_over_only_a_soft_target_keeps_its_empty_neighbours() -> None:
    volumes = [(0, 0), (10, 3000), (0, 0), (0, 0)] + [(10, 1000)] * 4
    children = planned(volumes)
    assert widths(children) == [4, 4]
    ratios = [0, 1200, 0, 0] + [950] * 4  # child 0: wire 3600 over the target only; child 1: split
    refined = refine(children, measure(children, volumes, ratios), buckets_from(volumes), limits())
    assert refined is not None
    assert widths(refined) == [4, 3, 1]


def test_a_lone_day_exactly_at_the_hard_wire_limit_is_accepted_one_byte_more_is_refused() -> None:
    volumes = [(10, 3000)]
    children = planned(volumes)
    at_limit = {0: ChildMeasurement(rows=10, decoded_bytes=3000, wire_bytes=4000)}
    assert refine(children, at_limit, buckets_from(volumes), limits()) is None
    with pytest.raises(ScopeExceedsLimit) as caught:
        refine(children, {0: ChildMeasurement(rows=10, decoded_bytes=3000, wire_bytes=4001)}, buckets_from(volumes),
               limits())
    assert (caught.value.limit, caught.value.limit_value, caught.value.actual) == ("max_wire_bytes", 4000, 4001)


def test_when_the_ratio_gives_no_cut_the_child_is_halved_by_data_days() -> None:
    # Rows with zero estimated bytes: the scaled cap is 0 and cannot separate the days.
    volumes = [(10, 0)] * 4
    children = planned(volumes)
    measured = {0: ChildMeasurement(rows=40, decoded_bytes=9000, wire_bytes=100)}
    refined = refine(children, measured, buckets_from(volumes), limits())
    assert refined is not None and widths(refined) == [2, 2]


def test_measurements_that_contradict_the_plan_are_refused() -> None:
    volumes = [(10, 1000)] * 4
    children = planned(volumes)
    buckets = buckets_from(volumes)
    with pytest.raises(InvalidPlanningInput, match="rows"):
        refine(children, {0: ChildMeasurement(rows=39, decoded_bytes=1, wire_bytes=1)}, buckets, limits())
    with pytest.raises(InvalidPlanningInput, match="unknown"):
        refine(children, {7: ChildMeasurement(rows=40, decoded_bytes=1, wire_bytes=1)}, buckets, limits())
    with pytest.raises(InvalidPlanningInput, match="not planned from"):
        refine(children, {}, buckets, limits(fixed_overhead_bytes=5))
    with pytest.raises(InvalidPlanningInput, match="needs the plan"):
        refine((), {}, buckets, limits())


def test_a_plan_measure_refine_loop_ends_with_every_hard_limit_met() -> None:
    volumes = [(10 + i % 7, 800 + (i * 131) % 1600) for i in range(40)]
    ratios = [100 + (i * 223) % 900 for i in range(40)]
    buckets = buckets_from(volumes)
    children = planned(volumes)
    rounds = 0
    while (nxt := refine(children, measure(children, volumes, ratios), buckets, limits())) is not None:
        assert len(nxt) > len(children)
        children, rounds = nxt, rounds + 1
        assert rounds < 40
    assert rounds >= 1
    for child in children:
        m = measure([child], volumes, ratios)[child.ordinal]
        assert m.wire_bytes <= 4000 and m.decoded_bytes <= 10_000 and m.rows <= 1000
