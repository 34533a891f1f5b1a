"""Row <-> record conversion for the SQLite journal (no SQL beyond column names)."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime

from sink.contracts.errors import ErrorCode
from sink.contracts.state import (
    AcknowledgementState,
)
from sink.journal.records import (
    Attempt,
    AxesState,
    ChildDescriptor,
    Decision,
    GenerationKey,
    Lease,
    LeaseKind,
    MutationKind,
    Observation,
    OperationRow,
    ParentRecord,
    ResultFacts,
    ScopeRange,
)

ADMISSION_COLUMNS = (
    "operation_id, parent_id, operation_namespace, delivery_key, ordinal, scope_start, scope_end, "
    "mutation_intent_digest, payload_ref, payload_digest, generation_end, correction_revision, "
    "frontier_order, coverage_proof_digest, effect_conflict_domain, mutation_kind, execution_state, "
    "remote_effect, acknowledgement_state, verification_state, checkpoint_state, revision, "
    "attempt_count, observation_count, last_reconciliation_id"
)
"""The columns an admission writes (the outcome columns keep their defaults)."""
OPERATION_COLUMNS = (
    ADMISSION_COLUMNS + ", decided_error_code, decided_exit_class, decided_reason, accepted_rows, rejected_rows, "
    "rejection_proven, receiver_reported_partial, next_check_at, abandoned"
)


_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def encode_time(value: datetime) -> str:
    # Fixed width, always UTC with microseconds, so text order is time order.
    if value.tzinfo is None:
        raise ValueError("journal clock must return timezone-aware datetimes")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def decode_time(value: str) -> datetime:
    # The one shape encode_time writes, checked here; the calendar by the C parser (strptime did
    # both at about twenty times the CPU, on every timestamp of every row read).
    if not _STORED_TIME.fullmatch(value):
        raise ValueError("journal time is not 'YYYY-MM-DDTHH:MM:SS.ffffffZ'")
    return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)


def descriptor_params(child: ChildDescriptor) -> tuple[object, ...]:
    return (
        child.ordinal,
        child.scope.start,
        child.scope.end,
        child.mutation_intent_digest,
        child.payload_ref,
        child.payload_digest,
        child.generation.scheduled_interval_end_utc,
        child.generation.correction_revision,
        child.frontier_order,
        child.coverage_proof_digest,
        child.effect_conflict_domain,
        child.mutation_kind.value,
    )


_DECODED_LIMIT = 256
_decoded: dict[tuple[tuple[str, ...], tuple[object, ...]], OperationRow] = {}
"""Operation rows already decoded, by their stored column values. A delivery step reads the same
row version several times (the step's own read, the transaction's re-check, the next step's
read): about 18 reads of 7 versions per child. The record is a pure function of those values and
deeply immutable, so the same values give the same record; the SQL read itself is never skipped.
The column names are part of the key, so rows of another column list can never be confused."""


def operation_from_row(row: sqlite3.Row) -> OperationRow:
    key = (tuple(row.keys()), tuple(row))
    found = _decoded.get(key)
    if found is None:
        found = _decode_operation(row)
        if len(_decoded) >= _DECODED_LIMIT:
            # Bounded memory in a long worker. clear() is one atomic step under concurrent
            # children (evicting the oldest would iterate a dict another thread may be filling).
            _decoded.clear()
        _decoded[key] = found
    return found


def _decode_operation(row: sqlite3.Row) -> OperationRow:
    descriptor = ChildDescriptor(
        ordinal=row["ordinal"],
        scope=ScopeRange(row["scope_start"], row["scope_end"]),
        delivery_key=row["delivery_key"],
        mutation_intent_digest=row["mutation_intent_digest"],
        payload_ref=row["payload_ref"],
        payload_digest=row["payload_digest"],
        generation=GenerationKey(row["generation_end"], row["correction_revision"]),
        frontier_order=row["frontier_order"],
        coverage_proof_digest=row["coverage_proof_digest"],
        effect_conflict_domain=row["effect_conflict_domain"],
        mutation_kind=MutationKind(row["mutation_kind"]),
    )
    axes = AxesState.from_mapping(row)
    return OperationRow(
        operation_id=row["operation_id"],
        parent_id=row["parent_id"],
        operation_namespace=row["operation_namespace"],
        descriptor=descriptor,
        axes=axes,
        revision=row["revision"],
        attempt_count=row["attempt_count"],
        observation_count=row["observation_count"],
        last_reconciliation_id=row["last_reconciliation_id"],
        decision=decision_from_row(row),
        facts=ResultFacts(row["accepted_rows"], row["rejected_rows"], bool(row["rejection_proven"]),
                          bool(row["receiver_reported_partial"])),
        next_check_at=None if row["next_check_at"] is None else decode_time(row["next_check_at"]),
        abandoned=bool(row["abandoned"]),
    )


def decision_from_row(row: sqlite3.Row) -> Decision:
    code = row["decided_error_code"]
    return Decision(None if code is None else ErrorCode(code), row["decided_exit_class"], row["decided_reason"])


def decision_params(decision: Decision) -> tuple[str | None, int | None, str | None]:
    code = None if decision.error_code is None else decision.error_code.value
    return code, decision.exit_class, decision.reason


def facts_params(facts: ResultFacts) -> tuple[int | None, int | None, int, int]:
    return facts.accepted_rows, facts.rejected_rows, int(facts.rejection_proven), int(facts.receiver_reported_partial)


def parent_from_row(row: sqlite3.Row) -> ParentRecord:
    return ParentRecord(
        parent_id=row["parent_id"],
        operation_namespace=row["operation_namespace"],
        parent_delivery_key=row["parent_delivery_key"],
        parent_plan_digest=row["parent_plan_digest"],
        plan_ref=row["plan_ref"],
        profile_contract_digest=row["profile_contract_digest"],
        child_count=row["child_count"],
        frontier_order=row["frontier_order"],
        frontier_scope_end=row["frontier_scope_end"],
    )


def attempt_from_row(row: sqlite3.Row) -> Attempt:
    return Attempt(
        operation_id=row["operation_id"],
        attempt_ordinal=row["attempt_ordinal"],
        attempt_id=row["attempt_id"],
        marker_digest=row["marker_digest"],
        expected_revision=row["expected_revision"],
        journal_epoch=row["journal_epoch"],
        capacity_scope=row["capacity_scope"],
        created_at=decode_time(row["created_at"]),
        capacity_released=bool(row["capacity_released"]),
    )


def observation_from_row(row: sqlite3.Row) -> Observation:
    return Observation(
        operation_id=row["operation_id"],
        observation_ordinal=row["observation_ordinal"],
        acknowledgement_state=AcknowledgementState(row["acknowledgement_state"]),
        evidence_digest=row["evidence_digest"],
        observed_at=decode_time(row["observed_at"]),
    )


def lease_from_row(row: sqlite3.Row) -> Lease:
    return Lease(
        kind=LeaseKind(row["kind"]),
        subject_id=row["subject_id"],
        owner=row["owner"],
        expires_at=decode_time(row["expires_at"]),
        fencing_token=row["fencing_token"],
    )
