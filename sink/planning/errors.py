"""Errors of the planner: one catalog error for a scope that cannot fit, two invariant errors.

``ScopeExceedsLimit`` is the seed's REST_DELIVERY_SCOPE_EXCEEDS_LIMIT: a receiver-atomic unit (one
business date) that a hard one-request limit cannot hold. It names the day, the limit and the two
numbers, never a payload row. ``InvalidPlanningInput`` and ``CoverageError`` are invariant
failures of the caller's histogram or of a plan; they are ValueErrors, not catalog codes, because
they mean a bug in the sealer or a corrupted plan, never a property of the user's data.
"""

from __future__ import annotations

from datetime import date

from sink.contracts.errors import DeliveryError, ErrorCode


class ScopeExceedsLimit(DeliveryError):
    """One business date exceeds a hard limit; it is never divided."""

    def __init__(self, *, day: date, limit: str, limit_value: int, actual: int) -> None:
        super().__init__(
            ErrorCode.SCOPE_EXCEEDS_LIMIT,
            f"business date {day.isoformat()} needs {limit}={actual} in one request, "
            f"above the profile's {limit}={limit_value}; a receiver-atomic day is never divided",
        )
        self.day = day
        self.limit = limit
        self.limit_value = limit_value
        self.actual = actual


class InvalidPlanningInput(ValueError):
    """The day histogram, limits or measurements handed to the planner are inconsistent."""


class CoverageError(ValueError):
    """A plan does not tile its scope and row range exactly.

    ``kind`` is one of: ``empty_plan``, ``ordinal``, ``scope_start``, ``gap``, ``overlap``,
    ``scope_end``, ``row_gap``, ``row_overlap``, ``row_total``, ``row_mismatch``.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
