"""The adaptive-frontier bench: its checks pass on the real planner and frontier, and fail when
the frontier may jump a gap or a plan overlaps; every completion order is replayed."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certification.bench import adaptive
from sink.contracts.planning import ChildWindow
from sink.journal.frontier import contiguous_frontier


def _children(count: int) -> tuple[ChildWindow, ...]:
    start = date(2026, 1, 1)
    return tuple(ChildWindow(ordinal=index, scope_from=start + timedelta(days=index),
                             scope_to=start + timedelta(days=index + 1), row_start=10 * index, row_end=10 * index + 10,
                             estimated_decoded_bytes=100)
                 for index in range(count))


def _greedy_frontier(flags: list[tuple[int, bool]], stored: int | None) -> int | None:
    """A broken frontier: the highest completed child, gaps or not."""
    done = [ordinal for ordinal, complete in flags if complete]
    return max(done) if done else stored


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(6))), st.sets(st.integers(0, 5)), st.integers(0, 5))
def test_the_real_frontier_never_jumps_under_any_order(order: list[int], failed: set[int], restart: int) -> None:
    assert adaptive.invalid_jumps(_children(6), order, failed, restart_at=restart) == 0


def test_a_frontier_that_jumps_a_gap_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    children = _children(4)
    assert contiguous_frontier([(0, False), (1, True)], None) is None  # the real rule, for contrast
    monkeypatch.setattr(adaptive, "contiguous_frontier", _greedy_frontier)
    assert adaptive.invalid_jumps(children, [3, 0, 1, 2], set(), restart_at=9) > 0
    replayed, breaches = adaptive.frontier_breaches(children, samples=2, seed=1)
    assert replayed == 2 + 24 and breaches > 0  # every order of the 4 children plus the sampled ones


def test_the_bench_passes_on_the_real_planner_and_fails_on_an_overlapping_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    result = adaptive.run(days=60, seeds=[1], samples=2)
    assert result.passed, result.failed_checks
    totals = result.figures["total_requests"]
    assert result.ratios["adaptive_over_fixed_requests"]["value"] == round(
        totals["adaptive"] / totals["fixed_repaired"], 4)
    assert set(result.series["adaptive_requests"]["lines"]) == set(adaptive.PLANS)

    from sink.planning.evaluation import plan_until_within_limits as real

    def overlapping(*args: object, **kwargs: object) -> tuple[tuple[ChildWindow, ...], int]:
        children, rounds = real(*args, **kwargs)  # type: ignore[arg-type]
        return (*children, children[-1]), rounds

    monkeypatch.setattr(adaptive, "plan_until_within_limits", overlapping)
    broken = adaptive.run(days=60, seeds=[1], samples=1)
    assert not broken.passed
    assert any(name.endswith(".adaptive") for name in broken.failed_checks)
