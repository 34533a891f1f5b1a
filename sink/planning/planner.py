"""Initial adaptive plan of a frozen parent (seed: "Frozen source boundary and adaptive planning").

Rules, in order:

1. every business date whose rows exceed ``max_rows``, or whose decoded bytes plus the fixed
   per-body overhead exceed ``max_decoded_bytes``, fails the whole plan with
   REST_DELIVERY_SCOPE_EXCEEDS_LIMIT (first such day in scope order): a day is receiver-atomic;
2. the scope is tiled by the fewest windows that are at most ``max_window_days`` wide, hold at
   most ``max_rows`` rows and whose estimated decoded bytes stay within ``planning_decoded_bytes``
   (the target), except that a window may exceed the target when its data lies on one day.
   ``preferred_window_days`` is a target, not a cap: low-volume days merge past it up to
   ``max_window_days``; high-volume windows end earlier. Wire bytes are unknown before sealing;
   ``refine`` enforces them from measurements.
3. empty days are covered like any other day (they join the window next to them); a scope with
   zero rows still yields windows tiling it, all with zero rows: see ``EMPTY_BOUNDARY_RULE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from sink.contracts.planning import ChildWindow, DayBucket, PlanningLimits
from sink.planning.days import DayTable
from sink.planning.errors import InvalidPlanningInput, ScopeExceedsLimit
from sink.planning.windows import Caps, greedy_windows

# Bump when any rule above changes the output for some input. An admitted parent pins the version
# it was planned with and is never re-planned (seed: "must not invoke the planner again").
PLANNER_ALGORITHM_VERSION = "restproof.planner.greedy_day_windows.v1"

EMPTY_BOUNDARY_RULE = (
    "A parent with zero rows is planned like any other: windows of max_window_days tile the scope, "
    "each with the empty row interval [0, 0). The coverage proof then carries empty_boundary=true. "
    "The planner never decides what an empty boundary means: the sealer applies the profile's "
    "empty-input policy (promote only from a complete frozen read and an explicit policy; "
    "otherwise skip without checkpoint or fail)."
)


def check_limits(limits: PlanningLimits) -> None:
    """Refuse limits no plan can satisfy or that contradict each other."""
    positive = {
        "max_rows": limits.max_rows,
        "max_decoded_bytes": limits.max_decoded_bytes,
        "planning_decoded_bytes": limits.planning_decoded_bytes,
        "max_wire_bytes": limits.max_wire_bytes,
        "planning_wire_bytes": limits.planning_wire_bytes,
        "preferred_window_days": limits.preferred_window_days,
        "max_window_days": limits.max_window_days,
    }
    for name, value in positive.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidPlanningInput(f"{name} must be a positive integer")
    if limits.planning_decoded_bytes > limits.max_decoded_bytes:
        raise InvalidPlanningInput("planning_decoded_bytes exceeds max_decoded_bytes")
    if limits.planning_wire_bytes > limits.max_wire_bytes:
        raise InvalidPlanningInput("planning_wire_bytes exceeds max_wire_bytes")
    if limits.preferred_window_days > limits.max_window_days:
        raise InvalidPlanningInput("preferred_window_days exceeds max_window_days")
    if not 0 <= limits.fixed_overhead_bytes < limits.max_decoded_bytes:
        raise InvalidPlanningInput("fixed_overhead_bytes must be >= 0 and below max_decoded_bytes")


def reject_oversized_days(table: DayTable, limits: PlanningLimits, lo: int, hi: int) -> None:
    """Rule 1 over day indices ``[lo, hi)``: the first day that no single request can hold."""
    for index in range(lo, hi):
        rows = table.rows(index, index + 1)
        if rows > limits.max_rows:
            raise ScopeExceedsLimit(day=table.day(index), limit="max_rows", limit_value=limits.max_rows, actual=rows)
        decoded = limits.fixed_overhead_bytes + table.decoded(index, index + 1)
        if decoded > limits.max_decoded_bytes:
            raise ScopeExceedsLimit(
                day=table.day(index), limit="max_decoded_bytes", limit_value=limits.max_decoded_bytes, actual=decoded
            )


def initial_caps(limits: PlanningLimits) -> Caps:
    return Caps(
        width_days=limits.max_window_days,
        rows=limits.max_rows,
        estimated_decoded_bytes=limits.planning_decoded_bytes,
        fixed_overhead_bytes=limits.fixed_overhead_bytes,
    )


def windows_to_children(
    table: DayTable, windows: Sequence[tuple[int, int]], limits: PlanningLimits
) -> tuple[ChildWindow, ...]:
    return tuple(
        ChildWindow(
            ordinal=ordinal,
            scope_from=table.day(lo),
            scope_to=table.day(hi),
            row_start=table.row_prefix[lo],
            row_end=table.row_prefix[hi],
            estimated_decoded_bytes=limits.fixed_overhead_bytes + table.decoded(lo, hi),
        )
        for ordinal, (lo, hi) in enumerate(windows)
    )


def plan_children(
    scope_from: date, scope_to: date, buckets: Sequence[DayBucket], limits: PlanningLimits
) -> tuple[ChildWindow, ...]:
    """Child windows tiling ``[scope_from, scope_to)`` and rows ``[0, total_rows)``, in scope order."""
    check_limits(limits)
    table = DayTable.build(scope_from, scope_to, buckets)
    reject_oversized_days(table, limits, 0, table.n_days)
    windows = greedy_windows(table, 0, table.n_days, initial_caps(limits))
    return windows_to_children(table, windows, limits)
