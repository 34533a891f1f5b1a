"""Builders shared by the planner tests: day histograms, limits, and a fake sealer's measurements."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

from sink.contracts.planning import ChildMeasurement, ChildWindow, DayBucket, PlanningLimits

START = date(2026, 1, 1)


def buckets_from(volumes: Sequence[tuple[int, int]], start: date = START) -> list[DayBucket]:
    """One bucket per day with rows, days with zero rows left out (as the sealer may)."""
    buckets: list[DayBucket] = []
    row = 0
    for offset, (rows, size) in enumerate(volumes):
        if rows == 0:
            continue
        buckets.append(DayBucket(day=start + timedelta(days=offset), rows=rows, decoded_bytes=size, row_start=row))
        row += rows
    return buckets


def limits(**overrides: int) -> PlanningLimits:
    values = {
        "max_rows": 1000,
        "max_decoded_bytes": 10_000,
        "planning_decoded_bytes": 8_000,
        "max_wire_bytes": 4_000,
        "planning_wire_bytes": 3_500,
        "preferred_window_days": 3,
        "max_window_days": 4,
        "fixed_overhead_bytes": 0,
    }
    values.update(overrides)
    return PlanningLimits(**values)


def day_span(child: ChildWindow, start: date = START) -> range:
    return range((child.scope_from - start).days, (child.scope_to - start).days)


def measure(
    children: Sequence[ChildWindow],
    volumes: Sequence[tuple[int, int]],
    wire_per_mille: Sequence[int],
    overhead: int = 0,
    start: date = START,
) -> dict[int, ChildMeasurement]:
    """What an exact sealer would measure: decoded = overhead + day bytes; wire = a per-day ratio."""
    result: dict[int, ChildMeasurement] = {}
    for child in children:
        span = day_span(child, start)
        rows = sum(volumes[i][0] for i in span)
        decoded = overhead + sum(volumes[i][1] for i in span)
        wire = overhead + sum(volumes[i][1] * wire_per_mille[i] // 1000 for i in span)
        result[child.ordinal] = ChildMeasurement(rows=rows, decoded_bytes=decoded, wire_bytes=wire)
    return result
