"""The parent scope as a dense day table with prefix sums, built once from the sparse buckets.

Every window sum the planner asks (rows, decoded bytes, days that carry data) is then O(1), so a
plan over ten years of days is a single linear pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import accumulate

from sink.contracts.planning import DayBucket
from sink.planning.errors import InvalidPlanningInput

# A scope longer than this is refused rather than allocated: 100 years of days.
MAX_SCOPE_DAYS = 36_525


@dataclass(frozen=True, slots=True)
class DayTable:
    """Days ``scope_from + i`` for ``i in range(n_days)``; prefix arrays have ``n_days + 1`` entries."""

    scope_from: date
    n_days: int
    row_prefix: tuple[int, ...]
    byte_prefix: tuple[int, ...]
    data_day_prefix: tuple[int, ...]
    """Number of days with at least one row before each index."""

    @classmethod
    def build(cls, scope_from: date, scope_to: date, buckets: Sequence[DayBucket]) -> DayTable:
        n_days = (scope_to - scope_from).days
        if n_days < 1:
            raise InvalidPlanningInput("the parent scope is empty: scope_from must be before scope_to")
        if n_days > MAX_SCOPE_DAYS:
            raise InvalidPlanningInput(f"the parent scope spans {n_days} days, above {MAX_SCOPE_DAYS}")
        rows = [0] * n_days
        sizes = [0] * n_days
        expected_row_start = 0
        previous: date | None = None
        for bucket in buckets:
            if previous is not None and bucket.day <= previous:
                raise InvalidPlanningInput(f"buckets out of order or repeated at {bucket.day.isoformat()}")
            if not scope_from <= bucket.day < scope_to:
                raise InvalidPlanningInput(f"bucket {bucket.day.isoformat()} lies outside the parent scope")
            if bucket.row_start != expected_row_start:
                raise InvalidPlanningInput(
                    f"bucket {bucket.day.isoformat()} starts at row {bucket.row_start}, "
                    f"expected {expected_row_start}: day row ranges must tile the parent rows"
                )
            if bucket.rows == 0 and bucket.decoded_bytes != 0:
                raise InvalidPlanningInput(f"bucket {bucket.day.isoformat()} has bytes but no rows")
            index = (bucket.day - scope_from).days
            rows[index] = bucket.rows
            sizes[index] = bucket.decoded_bytes
            expected_row_start += bucket.rows
            previous = bucket.day
        return cls(
            scope_from=scope_from,
            n_days=n_days,
            row_prefix=tuple(accumulate(rows, initial=0)),
            byte_prefix=tuple(accumulate(sizes, initial=0)),
            data_day_prefix=tuple(accumulate((1 if r else 0 for r in rows), initial=0)),
        )

    @property
    def total_rows(self) -> int:
        return self.row_prefix[-1]

    def day(self, index: int) -> date:
        return self.scope_from + timedelta(days=index)

    def index(self, day: date) -> int:
        return (day - self.scope_from).days

    def rows(self, lo: int, hi: int) -> int:
        return self.row_prefix[hi] - self.row_prefix[lo]

    def decoded(self, lo: int, hi: int) -> int:
        return self.byte_prefix[hi] - self.byte_prefix[lo]

    def data_days(self, lo: int, hi: int) -> int:
        return self.data_day_prefix[hi] - self.data_day_prefix[lo]

    def data_day_indices(self, lo: int, hi: int) -> list[int]:
        return [i for i in range(lo, hi) if self.row_prefix[i + 1] > self.row_prefix[i]]
