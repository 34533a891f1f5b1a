"""Conversions between PostgreSQL rows and the journal records (sink.journal.records)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg.types.range import Range

from sink.contracts.errors import ErrorCode
from sink.journal.records import (
    NO_DECISION,
    AxesState,
    ChildDescriptor,
    Decision,
    GenerationKey,
    MutationKind,
    OperationRow,
    ResultFacts,
    ScopeRange,
)

_INSTANT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

Row = dict[str, Any]

OPERATION_COLUMNS = (
    "operation_id, parent_id, operation_namespace, delivery_key, child_ordinal, mutation_intent_digest, "
    "payload_ref, payload_digest, frontier_order, coverage_proof_digest, effect_conflict_domain, "
    "mutation_kind, scope_range, generation_interval_end, generation_correction_revision, "
    "execution_state, remote_effect, acknowledgement_state, verification_state, checkpoint_state, "
    "revision, attempt_count, observation_count, last_reconciliation_id, decided_error_code, "
    "decided_exit_class, decided_reason, accepted_rows, rejected_rows, rejection_proven, "
    "receiver_reported_partial, next_check_at, abandoned"
)


def to_timestamp(instant: str) -> datetime:
    """'YYYY-MM-DDTHH:MM:SSZ' -> aware UTC datetime."""
    return datetime.strptime(instant, _INSTANT_FORMAT).replace(tzinfo=UTC)


def to_instant(value: datetime) -> str:
    return value.astimezone(UTC).strftime(_INSTANT_FORMAT)


def scope_to_range(scope: ScopeRange) -> Range[datetime]:
    return Range(to_timestamp(scope.start), to_timestamp(scope.end), "[)")


def range_to_scope(value: Range[datetime]) -> ScopeRange:
    if value.lower is None or value.upper is None:
        raise ValueError("effect scopes are bounded ranges")
    return ScopeRange(to_instant(value.lower), to_instant(value.upper))


def generation_params(generation: GenerationKey) -> tuple[datetime, int]:
    return to_timestamp(generation.scheduled_interval_end_utc), generation.correction_revision


def generation_of(row: Row) -> GenerationKey:
    return GenerationKey(to_instant(row["generation_interval_end"]), int(row["generation_correction_revision"]))


def axes_of(row: Row) -> AxesState:
    return AxesState.from_mapping(row)


def descriptor_of(row: Row) -> ChildDescriptor:
    return ChildDescriptor(
        ordinal=int(row["child_ordinal"]),
        scope=range_to_scope(row["scope_range"]),
        delivery_key=row["delivery_key"],
        mutation_intent_digest=row["mutation_intent_digest"],
        payload_ref=row["payload_ref"],
        payload_digest=row["payload_digest"],
        generation=generation_of(row),
        frontier_order=int(row["frontier_order"]),
        coverage_proof_digest=row["coverage_proof_digest"],
        effect_conflict_domain=row["effect_conflict_domain"],
        mutation_kind=MutationKind(row["mutation_kind"]),
    )


def operation_of(row: Row) -> OperationRow:
    return OperationRow(
        operation_id=row["operation_id"],
        parent_id=row["parent_id"],
        operation_namespace=row["operation_namespace"],
        descriptor=descriptor_of(row),
        axes=axes_of(row),
        revision=int(row["revision"]),
        attempt_count=int(row["attempt_count"]),
        observation_count=int(row["observation_count"]),
        last_reconciliation_id=row["last_reconciliation_id"],
        decision=Decision(None if row["decided_error_code"] is None else ErrorCode(row["decided_error_code"]),
                          None if row["decided_exit_class"] is None else int(row["decided_exit_class"]),
                          row["decided_reason"]),
        facts=ResultFacts(_optional_int(row["accepted_rows"]), _optional_int(row["rejected_rows"]),
                          bool(row["rejection_proven"]), bool(row["receiver_reported_partial"])),
        next_check_at=row["next_check_at"],
        abandoned=bool(row["abandoned"]),
    )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def decision_params(decision: Decision) -> dict[str, object]:
    return {"code": None if decision.error_code is None else decision.error_code.value,
            "exit": decision.exit_class, "reason": decision.reason}


def facts_params(facts: ResultFacts) -> dict[str, object]:
    return {"accepted": facts.accepted_rows, "rejected": facts.rejected_rows, "refused": facts.rejection_proven,
            "partial": facts.receiver_reported_partial}


def child_params(
    child: ChildDescriptor, *, operation_id: str, parent_id: str, namespace: str, axes: AxesState, epoch: int
) -> tuple[object, ...]:
    """Parameters in OPERATION_INSERT order."""
    gen_end, gen_rev = generation_params(child.generation)
    return (
        operation_id, parent_id, namespace, child.delivery_key, child.ordinal,
        child.mutation_intent_digest, child.payload_ref, child.payload_digest, child.frontier_order,
        child.coverage_proof_digest, child.effect_conflict_domain, child.mutation_kind.value,
        scope_to_range(child.scope), gen_end, gen_rev,
        axes.execution_state.value, axes.remote_effect.value, axes.acknowledgement_state.value,
        axes.verification_state.value, axes.checkpoint_state.value, epoch,
    )


OPERATION_INSERT = (
    "INSERT INTO operations (operation_id, parent_id, operation_namespace, delivery_key, child_ordinal, "
    "mutation_intent_digest, payload_ref, payload_digest, frontier_order, coverage_proof_digest, "
    "effect_conflict_domain, mutation_kind, scope_range, generation_interval_end, "
    "generation_correction_revision, execution_state, remote_effect, acknowledgement_state, "
    "verification_state, checkpoint_state, admitted_epoch) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def cas_axes_params(row: OperationRow, target: AxesState, *, transition_id: str, actor_kind: str, actor_id: str,
                    reconciliation_id: str | None, evidence_digest: str | None, extra_attempt: bool = False,
                    decision: Decision = NO_DECISION, facts: ResultFacts | None = None,
                    next_check_after: timedelta | None = None) -> dict[str, object]:
    """The parameters of ``adapter.CAS_AXES_SQL`` (also used by the Airflow trigger's async client)."""
    return {"x": target.execution_state.value, "e": target.remote_effect.value,
            "a": target.acknowledgement_state.value, "v": target.verification_state.value,
            "c": target.checkpoint_state.value, "attempts": 1 if extra_attempt else 0, "rec": reconciliation_id,
            "op": row.operation_id, "rev": row.revision, "tid": transition_id, "ak": actor_kind, "aid": actor_id,
            "ev": evidence_digest, "next": next_check_after, **decision_params(decision),
            **facts_params(row.facts if facts is None else facts)}
