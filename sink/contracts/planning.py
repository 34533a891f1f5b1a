"""Planning interface: the frozen parent's per-day histogram in, child windows out.

Seed: "Frozen source boundary and adaptive planning". The planner (``sink/planning``) is pure: it
sees only what the frozen parent artifact recorded about each business date (rows and the
decoded size they take in the profile's payload format) and the profile limits, and returns
child windows that tile the parent scope exactly. The sealer measures each child's real decoded
and wire bytes and hands the measurements back; the planner refines (splits) deterministically
until every hard limit holds. A receiver-atomic unit (one business date for partition_replace)
that cannot fit fails with REST_DELIVERY_SCOPE_EXCEEDS_LIMIT; it is never divided.

Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True, slots=True)
class DayBucket:
    """One business date of the frozen parent, in parent sort order."""

    day: date
    rows: int
    decoded_bytes: int
    """Bytes these rows take in the profile's payload format before compression (header excluded)."""
    row_start: int
    """Index of the day's first row in the parent's sorted row order."""

    def __post_init__(self) -> None:
        if self.rows < 0 or self.decoded_bytes < 0 or self.row_start < 0:
            raise ValueError("rows, decoded_bytes and row_start are >= 0")


@dataclass(frozen=True, slots=True)
class PlanningLimits:
    """The profile's limits: ``planning_*`` are targets, ``max_*`` are hard."""

    max_rows: int
    max_decoded_bytes: int
    planning_decoded_bytes: int
    max_wire_bytes: int
    planning_wire_bytes: int
    preferred_window_days: int
    max_window_days: int
    fixed_overhead_bytes: int = 0
    """Bytes every child body carries whatever its rows (CSV header, JSON brackets)."""


@dataclass(frozen=True, slots=True)
class ChildWindow:
    """One planned child: the half-open date window [scope_from, scope_to) and its row interval."""

    ordinal: int
    scope_from: date
    scope_to: date
    row_start: int
    row_end: int
    """Exclusive."""
    estimated_decoded_bytes: int

    def __post_init__(self) -> None:
        if self.scope_from >= self.scope_to:
            raise ValueError("a child window is non-empty: scope_from < scope_to")
        if not 0 <= self.row_start <= self.row_end:
            raise ValueError("row interval must satisfy 0 <= row_start <= row_end")

    @property
    def rows(self) -> int:
        return self.row_end - self.row_start


@dataclass(frozen=True, slots=True)
class ChildMeasurement:
    """What sealing measured for one child (exact, over the complete emitted body)."""

    rows: int
    decoded_bytes: int
    wire_bytes: int
