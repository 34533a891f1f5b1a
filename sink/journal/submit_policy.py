"""Generation fence and append policy checked inside the critical submit transaction.

Seed ("Replacement generation and overlap fence"), with half-open scopes:
* a higher overlapping generation admitted, or applied in the interval map -> STALE_GENERATION;
* incremental_append over an overlapping scope already FULLY_APPLIED by an append -> APPEND_SCOPE_ALREADY_APPLIED;
* a lower-or-equal overlapping generation of another operation still in flight (SUBMITTING,
  accepted/running with UNDETERMINED effect, UNKNOWN, PARTIALLY_APPLIED) -> OVERLAPPING_EFFECT_IN_FLIGHT,
  unless an operator abandoned it (an audited decision that the newer generation supersedes it:
  without it a partial or unknown older generation would block its own correction forever).
The adapter calls this while holding the effect-domain lock, with the operations of the domain
whose scope overlaps the candidate's (selected by the database: PostgreSQL ``&&``, SQLite
``scope_start < end AND scope_end > start``) and the overlapping interval-map pieces. Passing
more rows is harmless: every check here filters by overlap itself, so the decision never depends
on how precisely an adapter pre-selected its candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.interval_map import Interval, highest_overlapping
from sink.journal.records import AxesState, ChildDescriptor, MutationKind, OperationRow

_UNRESOLVED_EFFECTS = frozenset({RemoteEffect.UNDETERMINED, RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED})


def in_flight(axes: AxesState) -> bool:
    return axes.execution_state is ExecutionState.SUBMITTING or axes.remote_effect in _UNRESOLVED_EFFECTS


def check_not_stale(
    candidate_id: str, candidate: ChildDescriptor, domain_operations: Sequence[OperationRow],
    intervals: Sequence[Interval],
) -> None:
    """Raise STALE_GENERATION when a higher overlapping generation is admitted or applied."""
    applied = highest_overlapping(intervals, candidate.scope)
    if applied is not None and applied > candidate.generation:
        raise DeliveryError(
            ErrorCode.STALE_GENERATION,
            f"operation {candidate_id}: a higher generation is already applied over an overlapping scope",
        )
    for other in domain_operations:
        if other.operation_id == candidate_id or not other.descriptor.scope.overlaps(candidate.scope):
            continue
        if other.descriptor.generation > candidate.generation:
            raise DeliveryError(
                ErrorCode.STALE_GENERATION,
                f"operation {candidate_id}: overlapping operation {other.operation_id} has a higher generation",
            )


def check_submit_permitted(
    candidate_id: str, candidate: ChildDescriptor, domain_operations: Sequence[OperationRow],
    intervals: Sequence[Interval],
) -> None:
    check_not_stale(candidate_id, candidate, domain_operations, intervals)
    overlapping = [
        other for other in domain_operations
        if other.operation_id != candidate_id and other.descriptor.scope.overlaps(candidate.scope)
    ]
    if candidate.mutation_kind is MutationKind.INCREMENTAL_APPEND:
        for other in overlapping:
            if (
                other.descriptor.mutation_kind is MutationKind.INCREMENTAL_APPEND
                and other.axes.remote_effect is RemoteEffect.FULLY_APPLIED
            ):
                raise DeliveryError(
                    ErrorCode.APPEND_SCOPE_ALREADY_APPLIED,
                    f"operation {candidate_id}: operation {other.operation_id} already appended an overlapping scope",
                )
    for other in overlapping:
        if in_flight(other.axes) and not other.abandoned:
            raise DeliveryError(
                ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT,
                f"operation {candidate_id}: overlapping operation {other.operation_id} is unresolved",
            )
