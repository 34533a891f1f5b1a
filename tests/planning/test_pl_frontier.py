"""Planned children under every completion order: the promotable frontier never jumps a gap.

Uses the journal's pure ``contiguous_frontier`` (the rule the journal promotes with) over the
planner's children in frontier order = ordinal = scope order. For each completion order, after
every completion (and after a simulated restart that recomputes from the stored frontier), the
promoted date range must be exactly the union of completed children and contain no incomplete one.
"""

from __future__ import annotations

import itertools
import random
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pl_builders import START, buckets_from, limits

from sink.contracts.planning import ChildWindow
from sink.journal.frontier import contiguous_frontier
from sink.planning import plan_children

pytestmark = pytest.mark.timeout(300)


def plan(volumes: list[tuple[int, int]]) -> tuple[ChildWindow, ...]:
    return plan_children(START, START + timedelta(days=len(volumes)), buckets_from(volumes), limits())


def day_span(child: ChildWindow) -> tuple[int, int]:
    return (child.scope_from - START).days, (child.scope_to - START).days


def promoted_until(children: tuple[ChildWindow, ...], frontier: int | None) -> date:
    return children[0].scope_from if frontier is None else children[frontier].scope_to


def replay(children: tuple[ChildWindow, ...], order: list[int], failed: frozenset[int], restart_at: int) -> None:
    completed: set[int] = set()
    stored: int | None = None
    for step, ordinal in enumerate(order):
        if ordinal in failed:
            continue
        completed.add(ordinal)
        flags = [(c.ordinal, c.ordinal in completed) for c in children]
        frontier = contiguous_frontier(flags, stored)
        if step == restart_at:  # a restarted worker recomputes from the journal's stored frontier
            assert contiguous_frontier(flags, frontier) == frontier
        assert stored is None or (frontier is not None and frontier >= stored)  # monotonic
        prefix = set(range(frontier + 1)) if frontier is not None else set()
        assert prefix <= completed  # never past an incomplete child
        next_order = 0 if frontier is None else frontier + 1
        assert next_order == len(children) or next_order not in completed  # as far as allowed
        promoted = {day for o in prefix for day in range(*day_span(children[o]))}
        until = (promoted_until(children, frontier) - START).days
        assert promoted == set(range(until))  # the promoted scope is gap-free from the parent start
        stored = frontier


def test_every_completion_order_of_a_skewed_plan_keeps_the_frontier_contiguous() -> None:
    volumes = [(10, 100)] * 4 + [(900, 9000)] + [(0, 0)] * 6 + [(400, 4000)] * 3 + [(5, 5)] * 5
    children = plan(volumes)
    assert 5 <= len(children) <= 7
    orders = itertools.permutations(range(len(children)))
    for count, order in enumerate(orders):
        failed = frozenset({count % len(children)}) if count % 3 == 0 else frozenset()
        replay(children, list(order), failed, restart_at=count % len(children))
        if count > 6000:
            break


def test_the_seed_example_three_weekly_children_middle_failed_frontier_stays_at_the_first() -> None:
    volumes = [(5, 50)] * 21
    children = plan_children(START, START + timedelta(days=21), buckets_from(volumes),
                             limits(preferred_window_days=7, max_window_days=7))
    assert [day_span(c) for c in children] == [(0, 7), (7, 14), (14, 21)]
    frontier = contiguous_frontier([(0, True), (1, False), (2, True)])
    assert frontier == 0
    assert promoted_until(children, frontier) == START + timedelta(days=7)
    replay(children, [2, 0, 1], frozenset({1}), restart_at=1)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 600), st.integers(0, 5000)), min_size=1, max_size=80),
    st.randoms(use_true_random=False),
)
def test_sampled_completion_orders_of_random_plans_keep_the_frontier_contiguous(
    raw: list[tuple[int, int]], rng: random.Random
) -> None:
    volumes = [(rows, size if rows else 0) for rows, size in raw]
    children = plan([(min(r, 1000), min(s, 10_000)) for r, s in volumes])
    order = list(range(len(children)))
    rng.shuffle(order)
    failed = frozenset(o for o in order if rng.random() < 0.1)
    replay(children, order, failed, restart_at=len(order) // 2)
