"""Refinement from sealing measurements: split every child whose measured body breaks a limit.

The sealer measures each child's exact decoded and wire bytes (over the whole emitted body) and
hands them back. A measured child *violates* when it exceeds a hard limit (``max_rows``,
``max_decoded_bytes``, ``max_wire_bytes``, ``max_window_days``) or a planning target
(``planning_decoded_bytes``, ``planning_wire_bytes``). A violating child whose data lies on two or
more days is split by days: its days are re-planned with the decoded-bytes cap scaled by what the
measurement showed (bytes measured per byte estimated, for decoded and for wire), so one round
usually lands under the targets; if that still yields one window, it is cut after the middle data
day. A violating child with data on at most one day cannot be split: a hard violation raises
REST_DELIVERY_SCOPE_EXCEEDS_LIMIT, a target-only violation is accepted as it is.

Termination: each round that returns a plan has strictly more children than its input, and no
plan has more children than the scope has days, so a plan/measure/refine loop stops after at most
``days - 1`` refinements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sink.contracts.planning import ChildMeasurement, ChildWindow, DayBucket, PlanningLimits
from sink.planning.coverage import verify_coverage
from sink.planning.days import DayTable
from sink.planning.errors import InvalidPlanningInput, ScopeExceedsLimit
from sink.planning.planner import check_limits, windows_to_children
from sink.planning.windows import Caps, greedy_windows


def hard_violation(
    child: ChildWindow, measured: ChildMeasurement, limits: PlanningLimits
) -> tuple[str, int, int] | None:
    """The first hard limit the measured child breaks, as (name, limit, actual)."""
    checks = (
        ("max_rows", limits.max_rows, measured.rows),
        ("max_decoded_bytes", limits.max_decoded_bytes, measured.decoded_bytes),
        ("max_wire_bytes", limits.max_wire_bytes, measured.wire_bytes),
        ("max_window_days", limits.max_window_days, (child.scope_to - child.scope_from).days),
    )
    for name, limit, actual in checks:
        if actual > limit:
            return name, limit, actual
    return None


def target_violation(measured: ChildMeasurement, limits: PlanningLimits) -> bool:
    return (
        measured.decoded_bytes > limits.planning_decoded_bytes
        or measured.wire_bytes > limits.planning_wire_bytes
    )


def _scaled_cap(limits: PlanningLimits, estimate: int, measured: ChildMeasurement) -> int:
    """Cap on a piece's *estimated* decoded bytes so its predicted measurements meet the targets."""
    cap = limits.planning_decoded_bytes
    if measured.decoded_bytes > 0:
        cap = min(cap, limits.planning_decoded_bytes * estimate // measured.decoded_bytes)
    if measured.wire_bytes > 0:
        cap = min(cap, limits.planning_wire_bytes * estimate // measured.wire_bytes)
    return cap


def _split(
    table: DayTable, window: tuple[int, int], measured: ChildMeasurement, estimate: int, limits: PlanningLimits
) -> list[tuple[int, int]]:
    lo, hi = window
    caps = Caps(
        width_days=limits.max_window_days,
        rows=limits.max_rows,
        estimated_decoded_bytes=_scaled_cap(limits, estimate, measured),
        fixed_overhead_bytes=limits.fixed_overhead_bytes,
    )
    pieces = greedy_windows(table, lo, hi, caps)
    if len(pieces) > 1:
        return pieces
    data = table.data_day_indices(lo, hi)
    cut = data[len(data) // 2]  # at least two data days here, so lo < cut < hi
    return [(lo, cut), (cut, hi)]


def refine(
    children: Sequence[ChildWindow],
    measurements: Mapping[int, ChildMeasurement],
    buckets: Sequence[DayBucket],
    limits: PlanningLimits,
) -> tuple[ChildWindow, ...] | None:
    """None when no measured child violates a limit it could be split for; otherwise the new plan."""
    check_limits(limits)
    if not children:
        raise InvalidPlanningInput("refine needs the plan it refines")
    table = DayTable.build(children[0].scope_from, children[-1].scope_to, buckets)
    verify_coverage(children, children[0].scope_from, children[-1].scope_to, table.total_rows, buckets=buckets)
    unknown = set(measurements) - {child.ordinal for child in children}
    if unknown:
        raise InvalidPlanningInput(f"measurements for unknown child ordinals {sorted(unknown)}")
    windows: list[tuple[int, int]] = []
    changed = False
    for child in children:
        lo, hi = table.index(child.scope_from), table.index(child.scope_to)
        estimate = limits.fixed_overhead_bytes + table.decoded(lo, hi)
        if child.estimated_decoded_bytes != estimate:
            raise InvalidPlanningInput(f"child {child.ordinal} was not planned from these buckets and limits")
        measured = measurements.get(child.ordinal)
        if measured is None:
            windows.append((lo, hi))
            continue
        if measured.rows != child.rows:
            raise InvalidPlanningInput(f"child {child.ordinal} measured {measured.rows} rows, planned {child.rows}")
        hard = hard_violation(child, measured, limits)
        if hard is None and not target_violation(measured, limits):
            windows.append((lo, hi))
            continue
        if table.data_days(lo, hi) <= 1 and (hard is None or hard[0] != "max_window_days"):
            if hard is not None:
                data = table.data_day_indices(lo, hi)
                name, limit, actual = hard
                raise ScopeExceedsLimit(
                    day=table.day(data[0] if data else lo), limit=name, limit_value=limit, actual=actual
                )
            windows.append((lo, hi))  # a lone day over a soft target: accepted, never divided
            continue
        windows.extend(_split(table, (lo, hi), measured, estimate, limits))
        changed = True
    if not changed:
        return None
    return windows_to_children(table, windows, limits)
