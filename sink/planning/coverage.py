"""Coverage proof: the plan tiles the parent scope and its rows exactly, in order.

``verify_coverage`` checks, child by child in ordinal order, that ordinals are 0..n-1, that each
window starts where the previous ended (the first at ``scope_from``, the last ending at
``scope_to``: no gap, no overlap) and that row intervals do the same over ``[0, total_rows)``;
given the parent's buckets it also checks each child holds exactly the rows of its days.
``coverage_proof`` runs that check and returns a frozen value whose ``canonical()`` form is the
``complete_coverage_proof`` input of ``sink.identity.parent_plan_digest``; a proof cannot be built
for a plan that fails the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from sink.canonical import CanonicalValue, hash_fields
from sink.contracts.planning import ChildWindow, DayBucket
from sink.planning.days import DayTable
from sink.planning.errors import CoverageError, InvalidPlanningInput

COVERAGE_PROOF_VERSION = "restproof.coverage_proof.v1"


def verify_coverage(
    children: Sequence[ChildWindow],
    scope_from: date,
    scope_to: date,
    total_rows: int,
    *,
    buckets: Sequence[DayBucket] | None = None,
) -> None:
    """Raise CoverageError on the first gap, overlap, misorder or row mismatch.

    With the parent's ``buckets``, each child's row interval must also be exactly the rows of its
    days (kind ``row_mismatch``), so a plan cannot tile the rows while pairing them with the
    wrong dates.
    """
    _verify_tiling(children, scope_from, scope_to, total_rows)
    if buckets is None:
        return
    try:
        table = DayTable.build(scope_from, scope_to, buckets)
    except InvalidPlanningInput as error:
        raise CoverageError("row_mismatch", f"the buckets do not describe this scope: {error}") from None
    for child in children:
        lo, hi = table.index(child.scope_from), table.index(child.scope_to)
        if (child.row_start, child.row_end) != (table.row_prefix[lo], table.row_prefix[hi]):
            raise CoverageError(
                "row_mismatch",
                f"child {child.ordinal} holds rows [{child.row_start}, {child.row_end}), its days hold "
                f"[{table.row_prefix[lo]}, {table.row_prefix[hi]})",
            )


def _verify_tiling(children: Sequence[ChildWindow], scope_from: date, scope_to: date, total_rows: int) -> None:
    if not children:
        raise CoverageError("empty_plan", "a plan has at least one child")
    cursor_day, cursor_row = scope_from, 0
    for position, child in enumerate(children):
        if child.ordinal != position:
            raise CoverageError("ordinal", f"child at position {position} has ordinal {child.ordinal}")
        if child.scope_from > cursor_day:
            kind = "scope_start" if position == 0 else "gap"
            raise CoverageError(kind, f"days [{cursor_day}, {child.scope_from}) are covered by no child")
        if child.scope_from < cursor_day:
            raise CoverageError("overlap", f"child {position} starts at {child.scope_from}, before {cursor_day}")
        if child.row_start > cursor_row:
            raise CoverageError("row_gap", f"rows [{cursor_row}, {child.row_start}) are in no child")
        if child.row_start < cursor_row:
            raise CoverageError("row_overlap", f"child {position} starts at row {child.row_start}, before {cursor_row}")
        cursor_day, cursor_row = child.scope_to, child.row_end
    if cursor_day != scope_to:
        raise CoverageError("scope_end", f"the plan ends at {cursor_day}, the scope at {scope_to}")
    if cursor_row != total_rows:
        raise CoverageError("row_total", f"the plan covers {cursor_row} rows, the parent has {total_rows}")


def child_descriptor(child: ChildWindow) -> CanonicalValue:
    """The planner's part of one child's descriptor: ordinal, date window, row interval.

    Estimates are left out on purpose: the sealer's measured bytes and payload digest are the
    authority and belong beside these fields in ``ordered_child_descriptors``.
    """
    return {
        "ordinal": child.ordinal,
        "scope_from": child.scope_from.isoformat(),
        "scope_to": child.scope_to.isoformat(),
        "row_start": child.row_start,
        "row_end": child.row_end,
    }


@dataclass(frozen=True, slots=True)
class CoverageProof:
    scope_from: date
    scope_to: date
    total_rows: int
    windows: tuple[tuple[date, date, int, int], ...]
    """(scope_from, scope_to, row_start, row_end) of each child, in ordinal order."""

    @property
    def empty_boundary(self) -> bool:
        """True when the frozen parent has no rows: the profile's empty-input policy decides."""
        return self.total_rows == 0

    def canonical(self) -> CanonicalValue:
        return {
            "version": COVERAGE_PROOF_VERSION,
            "scope_from": self.scope_from.isoformat(),
            "scope_to": self.scope_to.isoformat(),
            "total_rows": self.total_rows,
            "empty_boundary": self.empty_boundary,
            "windows": [[lo.isoformat(), hi.isoformat(), start, end] for lo, hi, start, end in self.windows],
        }

    @property
    def digest(self) -> str:
        return hash_fields("coverage_proof", {"proof": self.canonical()})


def coverage_proof(
    children: Sequence[ChildWindow],
    scope_from: date,
    scope_to: date,
    total_rows: int,
    *,
    buckets: Sequence[DayBucket] | None = None,
) -> CoverageProof:
    """The proof of a plan that passes ``verify_coverage`` (with ``buckets``, against the parent's days)."""
    verify_coverage(children, scope_from, scope_to, total_rows, buckets=buckets)
    return CoverageProof(
        scope_from=scope_from,
        scope_to=scope_to,
        total_rows=total_rows,
        windows=tuple((c.scope_from, c.scope_to, c.row_start, c.row_end) for c in children),
    )
