"""A seeded synthetic day histogram with heavy-tailed daily volume, bounded by a profile's limits.

The seed's adaptive-frontier benchmark scenario: "synthetic variable-volume source bounded by the
selected mock profile". Daily rows follow a Pareto tail (most days small, a few near the row
limit), some days are empty, bytes per row vary by day, and each day has a compression ratio (wire
bytes per decoded byte) so a model sealer can report wire bytes. Every single day fits every hard
limit on its own: the planner's job here is packing, not refusing. Pure and deterministic for a
seed (``random.Random`` is specified to be reproducible across platforms for the same seed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

from sink.contracts.planning import ChildMeasurement, ChildWindow, DayBucket, PlanningLimits


@dataclass(frozen=True, slots=True)
class SkewedDay:
    day: date
    rows: int
    decoded_bytes: int
    wire_per_mille: int
    """Wire bytes per 1000 decoded bytes once compressed and framed."""


@dataclass(frozen=True, slots=True)
class SkewedSource:
    scope_from: date
    scope_to: date
    days: tuple[SkewedDay, ...]
    """Every day of the scope, empty ones included."""

    def buckets(self) -> list[DayBucket]:
        result: list[DayBucket] = []
        row = 0
        for day in self.days:
            if day.rows:
                result.append(DayBucket(day.day, day.rows, day.decoded_bytes, row))
                row += day.rows
        return result

    @property
    def total_rows(self) -> int:
        return sum(day.rows for day in self.days)

    def measure(self, child: ChildWindow, fixed_overhead_bytes: int = 0) -> ChildMeasurement:
        """What an exact sealer would measure for ``child`` under this source's compression model."""
        lo = (child.scope_from - self.scope_from).days
        hi = (child.scope_to - self.scope_from).days
        window = self.days[lo:hi]
        decoded = fixed_overhead_bytes + sum(d.decoded_bytes for d in window)
        wire = fixed_overhead_bytes + sum(d.decoded_bytes * d.wire_per_mille // 1000 for d in window)
        return ChildMeasurement(rows=sum(d.rows for d in window), decoded_bytes=decoded, wire_bytes=wire)


def skewed_source(
    seed: int,
    n_days: int,
    limits: PlanningLimits,
    *,
    start: date = date(2025, 1, 1),
    median_rows: int = 4_000,
    pareto_alpha: float = 1.1,
    empty_share: float = 0.1,
) -> SkewedSource:
    rng = random.Random(seed)
    # Every day alone stays within 90% of each hard limit, so no day is a receiver-atomic refusal.
    row_cap = limits.max_rows * 9 // 10
    days: list[SkewedDay] = []
    for offset in range(n_days):
        day = start + timedelta(days=offset)
        if rng.random() < empty_share:
            days.append(SkewedDay(day, 0, 0, 0))
            continue
        rows = min(row_cap, max(1, int(median_rows * rng.paretovariate(pareto_alpha) / 2 ** (1 / pareto_alpha))))
        bytes_per_row = rng.randint(120, 480)
        decoded = min(rows * bytes_per_row, (limits.max_decoded_bytes - limits.fixed_overhead_bytes) * 9 // 10)
        per_mille = rng.choice((150, 200, 250, 300, 400, 950))  # 950: an incompressible day
        wire_cap = (limits.max_wire_bytes - limits.fixed_overhead_bytes) * 9 // 10
        if decoded * per_mille // 1000 > wire_cap:
            per_mille = wire_cap * 1000 // decoded
        days.append(SkewedDay(day, rows, decoded, per_mille))
    return SkewedSource(start, start + timedelta(days=n_days), tuple(days))
