"""SQLite journal adapter: the embedded default for local development (not a production authority).

Implements DeliveryJournalPort. Every write is one ``BEGIN IMMEDIATE`` transaction, so the
whole database write lock is the effect-domain lock: admission, the critical submit transaction
and effect-index updates are serialised across processes. Zero RPO is not available here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import AcknowledgementState
from sink.design.query import TransitionKind
from sink.journal.decision_policy import refuse_if_abandoned
from sink.journal.frontier import plan_promotion
from sink.journal.ids import operation_id_for, require_digest
from sink.journal.interval_map import apply_generation, bounding_scope
from sink.journal.marker_policy import (
    check_marker_binds,
    check_marker_unclaimed,
    grant_claim_for,
    require_claim_created,
)
from sink.journal.markers import MarkerStore
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import (
    NO_DECISION,
    NO_FACTS,
    AdmittedParent,
    Attempt,
    AxesState,
    ChildDescriptor,
    Decision,
    FrontierResult,
    LeaseKind,
    Observation,
    OperationRow,
    ParentAdmission,
    ParentRecord,
    Receipt,
    ResultFacts,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
)
from sink.journal.sqlite.codec import (
    ADMISSION_COLUMNS,
    attempt_from_row,
    decision_params,
    descriptor_params,
    encode_time,
    facts_params,
    observation_from_row,
    parent_from_row,
)
from sink.journal.sqlite.decisions import SqliteDecisions
from sink.journal.sqlite.rate_limits import SqliteRateLimits
from sink.journal.sqlite.retirement import reconciliation_used
from sink.journal.submit_policy import check_not_stale, check_submit_permitted
from sink.journal.transition_policy import (
    check_revision,
    lease_subject,
    raises_effect_index,
    releases_capacity,
    require_lease_owner,
    required_leases,
    resolve_submit,
    resolve_transition,
)


class SqliteJournal(SqliteDecisions, SqliteRateLimits):
    """DeliveryJournalPort over one SQLite file (WAL, synchronous=FULL)."""

    def get_parent(self, parent_id: str) -> ParentRecord | None:
        with self._read() as conn:
            row = conn.execute("SELECT * FROM parents WHERE parent_id = ?", (parent_id,)).fetchone()
            return None if row is None else parent_from_row(row)

    def load_parent(self, parent_id: str) -> AdmittedParent:
        with self._read() as conn:
            found = self._admitted(conn, parent_id, created=False)
        if found is None:
            raise JournalRejection(RejectionReason.UNKNOWN_PARENT, f"no parent {parent_id}")
        return found

    def get_operation(self, operation_id: str) -> OperationRow | None:
        with self._read() as conn:
            return self._operation(conn, operation_id)

    def find_operation(self, operation_namespace: str, delivery_key: str) -> OperationRow | None:
        return self.get_operation(operation_id_for(operation_namespace, delivery_key))

    def operations_in_domain(self, effect_conflict_domain: str) -> Sequence[OperationRow]:
        with self._read() as conn:
            return sorted(self._domain_operations(conn, effect_conflict_domain), key=lambda o: o.operation_id)

    def list_attempts(self, operation_id: str) -> tuple[Attempt, ...]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM attempts WHERE operation_id = ? ORDER BY attempt_ordinal", (operation_id,)
            ).fetchall()
            return tuple(attempt_from_row(r) for r in rows)

    def list_observations(self, operation_id: str) -> tuple[Observation, ...]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM observations WHERE operation_id = ? ORDER BY observation_ordinal", (operation_id,)
            ).fetchall()
            return tuple(observation_from_row(r) for r in rows)

    def get_receipt(self, operation_id: str) -> Receipt | None:
        with self._read() as conn:
            row = conn.execute(
                "SELECT receipt_id, receipt_digest FROM receipts WHERE operation_id = ?", (operation_id,)
            ).fetchone()
            return None if row is None else Receipt(row[0], row[1])

    # ----- admission ---------------------------------------------------------------------------
    def admit_parent(self, admission: ParentAdmission) -> AdmittedParent:
        parent_id = admission.parent_id
        with self._write("admit") as (conn, now):
            existing = self._admitted(conn, parent_id, created=False)
            if existing is not None:
                _require_same_intent(existing, admission)
                return existing
            for child in admission.children:
                child_id = operation_id_for(admission.operation_namespace, child.delivery_key)
                if self._operation(conn, child_id) is not None:
                    raise DeliveryError(
                        ErrorCode.INTENT_CONFLICT,
                        f"delivery key of child {child.ordinal} is already admitted under another parent",
                    )
            self._check_admission_not_stale(conn, admission)
            conn.execute(
                "INSERT INTO parents (parent_id, operation_namespace, parent_delivery_key, parent_plan_digest, "
                "plan_ref, profile_contract_digest, child_count, admitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (parent_id, admission.operation_namespace, admission.parent_delivery_key,
                 admission.parent_plan_digest, admission.plan_ref, admission.profile_contract_digest,
                 len(admission.children), encode_time(now)),
            )
            self._fault("admit.parent_inserted")
            initial = self._contract.initial
            for child in admission.children:
                conn.execute(
                    f"INSERT INTO operations ({ADMISSION_COLUMNS}) VALUES ({', '.join('?' * 25)})",  # noqa: S608
                    (operation_id_for(admission.operation_namespace, child.delivery_key), parent_id,
                     admission.operation_namespace, child.delivery_key, *descriptor_params(child),
                     *_axes_params(initial), 0, 0, 0, None),
                )
            admitted = self._admitted(conn, parent_id, created=True)
            assert admitted is not None
            return admitted

    def _check_admission_not_stale(self, conn: sqlite3.Connection, admission: ParentAdmission) -> None:
        """STALE_GENERATION at admission: one overlap query per domain over the children's
        bounding scope (as the PostgreSQL adapter does), then the shared policy per child."""
        by_domain: dict[str, list[ChildDescriptor]] = {}
        for child in admission.children:
            by_domain.setdefault(child.effect_conflict_domain, []).append(child)
        for domain in sorted(by_domain):
            members = by_domain[domain]
            bound = bounding_scope(c.scope for c in members)
            others = self._overlapping_operations(conn, domain, bound)
            pieces = self._intervals_near(conn, domain, bound, touching=False)
            if not others and not pieces:
                continue
            for child in members:
                check_not_stale(
                    operation_id_for(admission.operation_namespace, child.delivery_key), child, others, pieces
                )

    # ----- transitions -------------------------------------------------------------------------
    def _cas_axes(
        self, conn: sqlite3.Connection, row: OperationRow, target: AxesState, *, transition_id: str,
        now: datetime, actor_kind: str, actor_id: str, reconciliation_id: str | None,
        evidence_digest: str | None, extra_attempt: bool = False, decision: Decision = NO_DECISION,
        facts: ResultFacts | None = None, next_check_at: datetime | None = None,
    ) -> None:
        kept = row.facts if facts is None else facts
        cursor = conn.execute(
            "UPDATE operations SET execution_state = ?, remote_effect = ?, acknowledgement_state = ?, "
            "verification_state = ?, checkpoint_state = ?, revision = revision + 1, "
            "attempt_count = attempt_count + ?, last_reconciliation_id = COALESCE(?, last_reconciliation_id), "
            "decided_error_code = ?, decided_exit_class = ?, decided_reason = ?, accepted_rows = ?, "
            "rejected_rows = ?, rejection_proven = ?, receiver_reported_partial = ?, next_check_at = ? "
            "WHERE operation_id = ? AND revision = ?",
            (*_axes_params(target), 1 if extra_attempt else 0, reconciliation_id, *decision_params(decision),
             *facts_params(kept), None if next_check_at is None else encode_time(next_check_at),
             row.operation_id, row.revision),
        )
        if cursor.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; kept as the CAS itself
            raise TransitionRejected(RejectionReason.STALE_REVISION, f"operation {row.operation_id} changed")
        code, exit_class, reason = decision_params(decision)
        conn.execute(
            "INSERT INTO transition_log (operation_id, revision, transition_id, actor_kind, actor_id, "
            "reconciliation_id, evidence_digest, recorded_at, error_code, exit_class, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.operation_id, row.revision + 1, transition_id, actor_kind, actor_id, reconciliation_id,
             evidence_digest, encode_time(now), code, exit_class, reason),
        )

    def transition(self, request: TransitionRequest) -> OperationRow:
        if request.evidence_digest is not None:
            require_digest(request.evidence_digest, "evidence_digest")
        with self._write("transition") as (conn, now):
            row = self._require_operation(conn, request.operation_id)
            check_revision(row.operation_id, row.revision, request.expected_revision)
            chosen = resolve_transition(self._contract, row.axes, request.transition_id, request.actor)
            if chosen.kind is TransitionKind.AUTOMATIC:
                refuse_if_abandoned(row)
            for kind in required_leases(chosen):
                owner = require_lease_owner(chosen, kind, request.lease_owner)
                self._require_lease(conn, now, kind, lease_subject(kind, row.operation_id, row.parent_id),
                                    owner, rejection=TransitionRejected)
            if request.actor.reconciliation_id is not None and reconciliation_used(
                conn, row.operation_id, request.actor.reconciliation_id
            ):
                raise TransitionRejected(
                    RejectionReason.INVALID_REQUEST, "a reconciliation id is never reused on one operation"
                )
            target = chosen.target
            if request.receipt is not None:
                self._store_receipt(conn, row.operation_id, request.receipt, now)
            self._cas_axes(
                conn, row, target, transition_id=chosen.id, now=now, actor_kind=request.actor.kind.value,
                actor_id=request.actor.actor_id, reconciliation_id=request.actor.reconciliation_id,
                evidence_digest=request.evidence_digest, decision=request.decision, facts=request.facts,
                next_check_at=None if request.next_check_after is None else now + request.next_check_after,
            )
            self._fault("transition.updated")
            if releases_capacity(target):
                self._release_capacity(conn, row.operation_id)
            if raises_effect_index(row.axes, target):
                self._raise_interval_map(conn, row)
            return self._require_operation(conn, row.operation_id)

    @staticmethod
    def _store_receipt(conn: sqlite3.Connection, operation_id: str, receipt: Receipt, now: datetime) -> None:
        stored = conn.execute(
            "SELECT receipt_id, receipt_digest FROM receipts WHERE operation_id = ?", (operation_id,)
        ).fetchone()
        if stored is None:
            conn.execute(
                "INSERT INTO receipts (operation_id, receipt_id, receipt_digest, recorded_at) VALUES (?, ?, ?, ?)",
                (operation_id, receipt.receipt_id, receipt.receipt_digest, encode_time(now)),
            )
        elif (stored[0], stored[1]) != (receipt.receipt_id, receipt.receipt_digest):
            raise TransitionRejected(
                RejectionReason.RECEIPT_CONFLICT, f"operation {operation_id} already has another receipt"
            )

    def _raise_interval_map(self, conn: sqlite3.Connection, row: OperationRow) -> None:
        # Only pieces overlapping or touching the scope can change (split, raise or merge with a
        # neighbour of the same generation), so only they are replaced, as on PostgreSQL.
        domain = row.descriptor.effect_conflict_domain
        near = self._intervals_near(conn, domain, row.descriptor.scope, touching=True)
        updated = apply_generation(near, row.descriptor.scope, row.descriptor.generation)
        conn.executemany(
            "DELETE FROM effect_intervals WHERE effect_conflict_domain = ? AND scope_start = ?",
            [(domain, piece.start) for piece, _ in near],
        )
        conn.executemany(
            "INSERT INTO effect_intervals (effect_conflict_domain, scope_start, scope_end, generation_end, "
            "correction_revision) VALUES (?, ?, ?, ?, ?)",
            [(domain, s.start, s.end, g.scheduled_interval_end_utc, g.correction_revision) for s, g in updated],
        )

    # ----- critical submit ---------------------------------------------------------------------
    def reserve_and_mark_submitting(self, request: SubmitRequest) -> SubmitGrant:
        require_digest(request.marker_digest, "marker_digest")
        with self._write("submit") as (conn, now):
            gate = self._require_gate_open(conn)
            row = self._require_operation(conn, request.operation_id)
            check_revision(row.operation_id, row.revision, request.expected_revision)
            chosen = resolve_submit(self._contract, row.axes, request.transition_id)
            refuse_if_abandoned(row)
            self._require_lease(conn, now, LeaseKind.MUTATION, row.operation_id, request.lease_owner)
            if request.attempt_ordinal != row.attempt_count + 1:
                raise TransitionRejected(
                    RejectionReason.ATTEMPT_ORDINAL_NOT_NEXT,
                    f"attempt ordinal must be {row.attempt_count + 1}, got {request.attempt_ordinal}",
                )
            stored = self._markers.get(row.operation_namespace, row.operation_id, request.attempt_ordinal)
            check_marker_binds(stored, row, request, gate.journal_epoch)
            check_marker_unclaimed(
                self._markers.grant_claimed(row.operation_namespace, row.operation_id, request.attempt_ordinal),
                request,
            )
            domain = row.descriptor.effect_conflict_domain
            scope = row.descriptor.scope
            check_submit_permitted(
                row.operation_id, row.descriptor,
                self._overlapping_operations(conn, domain, scope, excluding=row.operation_id),
                self._intervals_near(conn, domain, scope, touching=False),
            )
            attempt_id = request.attempt_id  # a digest computed on each access: once here
            conn.execute(
                "INSERT INTO attempts (operation_id, attempt_ordinal, attempt_id, marker_digest, expected_revision, "
                "journal_epoch, capacity_scope, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (row.operation_id, request.attempt_ordinal, attempt_id, request.marker_digest,
                 request.expected_revision, gate.journal_epoch, request.capacity_scope, encode_time(now)),
            )
            self._reserve_capacity(conn, request.capacity_scope, attempt_id, row.operation_id, now)
            self._fault("submit.attempt_appended")
            self._cas_axes(
                conn, row, chosen.target, transition_id=chosen.id, now=now, actor_kind="automatic",
                actor_id=request.lease_owner, reconciliation_id=None, evidence_digest=request.marker_digest,
                extra_attempt=True, facts=NO_FACTS,  # a new attempt: an earlier answer is no evidence of it
            )
            attempt = conn.execute("SELECT * FROM attempts WHERE attempt_id = ?", (attempt_id,)).fetchone()
            # Last step before COMMIT: the marker is claimed for this grant, once and for good. A
            # claim that already exists (a rewound journal) refuses, rolling everything back.
            require_claim_created(
                self._markers.claim_grant(grant_claim_for(row, request, gate.journal_epoch, now)), request
            )
            self._fault("submit.marker_claimed")
            return SubmitGrant(self._require_operation(conn, row.operation_id), attempt_from_row(attempt))

    # ----- observations ------------------------------------------------------------------------
    def record_observation(
        self, operation_id: str, *, observation_ordinal: int, acknowledgement_state: AcknowledgementState,
        evidence_digest: str, lease_owner: str, next_check_after: timedelta | None = None,
    ) -> Observation:
        require_digest(evidence_digest, "evidence_digest")
        with self._write("observe") as (conn, now):
            row = self._require_operation(conn, operation_id)
            self._require_lease(conn, now, LeaseKind.OBSERVATION, operation_id, lease_owner)
            if observation_ordinal != row.observation_count + 1:
                raise JournalRejection(
                    RejectionReason.OBSERVATION_ORDINAL_NOT_NEXT,
                    f"observation ordinal must be {row.observation_count + 1}, got {observation_ordinal}",
                )
            conn.execute(
                "INSERT INTO observations (operation_id, observation_ordinal, acknowledgement_state, "
                "evidence_digest, observed_at) VALUES (?, ?, ?, ?, ?)",
                (operation_id, observation_ordinal, acknowledgement_state.value, evidence_digest, encode_time(now)),
            )
            conn.execute(
                "UPDATE operations SET observation_count = observation_count + 1, next_check_at = ?, "
                "decided_error_code = NULL, decided_exit_class = NULL, decided_reason = NULL WHERE operation_id = ?",
                (None if next_check_after is None else encode_time(now + next_check_after), operation_id),
            )
            return Observation(operation_id, observation_ordinal, acknowledgement_state, evidence_digest, now)

    # ----- frontier ----------------------------------------------------------------------------
    def promote_frontier(self, parent_id: str, *, lease_owner: str) -> FrontierResult:
        with self._write("frontier") as (conn, now):
            self._require_lease(conn, now, LeaseKind.CHECKPOINT, parent_id, lease_owner)
            admitted = self._admitted(conn, parent_id, created=False)
            if admitted is None:
                raise JournalRejection(RejectionReason.UNKNOWN_PARENT, f"no parent {parent_id}")
            result, promotions = plan_promotion(self._contract, admitted)
            for row, target, transition_id in promotions:
                self._cas_axes(
                    conn, row, target, transition_id=transition_id, now=now, actor_kind="automatic",
                    actor_id=lease_owner, reconciliation_id=None, evidence_digest=None,
                )
            conn.execute(
                "UPDATE parents SET frontier_order = ?, frontier_scope_end = ? WHERE parent_id = ?",
                (result.frontier_order, result.frontier_scope_end, parent_id),
            )
            return result

def _axes_params(axes: AxesState) -> tuple[str, str, str, str, str]:
    return (axes.execution_state.value, axes.remote_effect.value, axes.acknowledgement_state.value,
            axes.verification_state.value, axes.checkpoint_state.value)


def _require_same_intent(existing: AdmittedParent, admission: ParentAdmission) -> None:
    stored = [(c.descriptor.delivery_key, c.descriptor.mutation_intent_digest) for c in existing.children]
    wanted = [(c.delivery_key, c.mutation_intent_digest) for c in admission.children]
    if existing.parent.parent_plan_digest != admission.parent_plan_digest or stored != wanted:
        raise DeliveryError(
            ErrorCode.INTENT_CONFLICT, f"parent {existing.parent.parent_id} is admitted with a different plan/intent"
        )


def open_sqlite_journal(path: Path | str, *, markers: MarkerStore, **options: Any) -> SqliteJournal:
    """Open (and migrate) a SQLite journal. Options: contract, clock, require_zero_rpo (refused),
    busy_timeout_s, fault_hook, durability (``Durability.NON_DURABLE_TESTS_ONLY`` runs
    ``synchronous=OFF`` without the per-write check: tests only)."""
    return SqliteJournal(Path(path), markers=markers, **options)

