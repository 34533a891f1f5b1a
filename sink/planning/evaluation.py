"""Audit a plan against the limits and build the fixed-width baselines it is compared with.

Used by the tests and by ``benchmarks/bench_planning.py``; nothing here is on the delivery path.

Baselines (seed "Industrial differentiation targets", adaptive-frontier axis: "fixed-width files"):

* ``fixed_width_children``: windows of exactly ``preferred_window_days`` from ``scope_from`` (the
  last may be shorter), blind to volume. Audited as is, a window over a hard limit counts as a
  violation: that request would be refused or fail.
* ``bisect_until_within``: the same windows, each one that a measurement shows over a hard limit
  or a target halved by days (repeatedly) until it fits, with the planner's own acceptance rule
  (a window whose data lies on one day is accepted over a target, refused over a hard limit). This
  is the fair "fixed width plus naive repair" comparison: it meets the same limits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from sink.contracts.planning import ChildMeasurement, ChildWindow, DayBucket, PlanningLimits
from sink.planning.days import DayTable
from sink.planning.errors import InvalidPlanningInput
from sink.planning.planner import check_limits, plan_children, windows_to_children
from sink.planning.refine import hard_violation, refine, target_violation

Measure = Callable[[ChildWindow], ChildMeasurement]


@dataclass(frozen=True, slots=True)
class PlanAudit:
    requests: int
    hard_violations: int
    """Children whose measurement breaks a hard limit (rows, decoded, wire, window width)."""
    target_misses: int
    """Children over a planning target (allowed only when their data lies on one day)."""
    gaps: int
    overlaps: int


def audit_plan(
    children: Sequence[ChildWindow], *, scope_from: date, scope_to: date, total_rows: int,
    limits: PlanningLimits, measure: Measure,
) -> PlanAudit:
    """Count every defect instead of stopping at the first, so a benchmark can report them."""
    gaps = overlaps = 0
    cursor_day, cursor_row = scope_from, 0
    for child in sorted(children, key=lambda c: c.ordinal):
        gaps += (child.scope_from > cursor_day) + (child.row_start > cursor_row)
        overlaps += (child.scope_from < cursor_day) + (child.row_start < cursor_row)
        cursor_day, cursor_row = child.scope_to, child.row_end
    gaps += (cursor_day < scope_to) + (cursor_row < total_rows)
    overlaps += (cursor_day > scope_to) + (cursor_row > total_rows)
    measured = [(child, measure(child)) for child in children]
    return PlanAudit(
        requests=len(children),
        hard_violations=sum(hard_violation(c, m, limits) is not None for c, m in measured),
        target_misses=sum(target_violation(m, limits) for _, m in measured),
        gaps=gaps,
        overlaps=overlaps,
    )


def plan_until_within_limits(
    scope_from: date, scope_to: date, buckets: Sequence[DayBucket], limits: PlanningLimits, measure: Measure
) -> tuple[tuple[ChildWindow, ...], int]:
    """plan_children, then measure and refine until refine has nothing to split; (plan, rounds)."""
    children = plan_children(scope_from, scope_to, buckets, limits)
    for rounds in range((scope_to - scope_from).days):
        refined = refine(children, {c.ordinal: measure(c) for c in children}, buckets, limits)
        if refined is None:
            return children, rounds
        children = refined
    raise AssertionError("refine split more often than the scope has days")  # unreachable: see refine


def fixed_width_children(
    scope_from: date, scope_to: date, buckets: Sequence[DayBucket], limits: PlanningLimits
) -> tuple[ChildWindow, ...]:
    check_limits(limits)
    table = DayTable.build(scope_from, scope_to, buckets)
    width = limits.preferred_window_days
    windows = [(lo, min(lo + width, table.n_days)) for lo in range(0, table.n_days, width)]
    return windows_to_children(table, windows, limits)


def bisect_until_within(
    children: Sequence[ChildWindow], buckets: Sequence[DayBucket], limits: PlanningLimits, measure: Measure
) -> tuple[ChildWindow, ...]:
    if not children:
        raise InvalidPlanningInput("nothing to repair")
    table = DayTable.build(children[0].scope_from, children[-1].scope_to, buckets)
    pending = [(table.index(c.scope_from), table.index(c.scope_to)) for c in children]
    accepted: list[tuple[int, int]] = []
    while pending:
        lo, hi = pending.pop(0)
        child = windows_to_children(table, [(lo, hi)], limits)[0]
        measured = measure(child)
        over = hard_violation(child, measured, limits) is not None or target_violation(measured, limits)
        if not over or table.data_days(lo, hi) <= 1:
            accepted.append((lo, hi))
            continue
        middle = (lo + hi) // 2
        pending[:0] = [(lo, middle), (middle, hi)]
    return windows_to_children(table, accepted, limits)

