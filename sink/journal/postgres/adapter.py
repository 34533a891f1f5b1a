"""PostgreSQL journal adapter: the production authority (DeliveryJournalPort).

Locking (one order for every code path, so no deadlock between them):
  1. the ``journal_epoch`` row FOR SHARE (critical submit only: the gate must stay open);
  2. ``rest_delivery_effect_domain_lock`` rows FOR UPDATE in sorted domain order;
  3. operation rows FOR UPDATE;
  4. capacity slot rows (FOR UPDATE SKIP LOCKED) / capacity scope rows.
Every axis change is additionally an integer-revision CAS (``UPDATE ... WHERE revision = n``).
"""

# SQL text here is composed only from module constants (column lists, lock clauses); every value
# is passed as a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from psycopg.errors import UniqueViolation

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import AcknowledgementState
from sink.design.query import TransitionKind
from sink.journal.decision_policy import refuse_if_abandoned
from sink.journal.frontier import plan_promotion
from sink.journal.ids import operation_id_for, require_digest
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.postgres import admission, effects, retirement, submit
from sink.journal.postgres.connection import Cursor
from sink.journal.postgres.rate_limits import PostgresRateLimits
from sink.journal.postgres.reconciliation import PostgresReconciliation
from sink.journal.postgres.rows import OPERATION_COLUMNS, cas_axes_params, operation_of, to_timestamp
from sink.journal.records import (
    NO_DECISION,
    AdmittedParent,
    Attempt,
    AxesState,
    Decision,
    EffectTombstone,
    FrontierResult,
    GenerationInterval,
    LeaseKind,
    Observation,
    OperationRow,
    ParentAdmission,
    ParentRecord,
    Receipt,
    ResultFacts,
    RetentionReport,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
)
from sink.journal.transition_policy import (
    check_revision,
    lease_subject,
    raises_effect_index,
    releases_capacity,
    require_lease_owner,
    required_leases,
    resolve_transition,
)

# Shared with the Airflow trigger's asynchronous client (sink/airflow/): one SQL text, identical rows.
SELECT_OPERATION_SQL = f"SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = %s"
SELECT_RECEIPT_SQL = "SELECT receipt_id, receipt_digest FROM receipts WHERE operation_id = %s"
SELECT_ATTEMPTS_SQL = (f"SELECT {submit.ATTEMPT_COLUMNS} FROM attempts WHERE operation_id = %s "
                       "ORDER BY attempt_ordinal")
INSERT_OBSERVATION_SQL = (
    "INSERT INTO observations (operation_id, observation_ordinal, acknowledgement_state, "
    "evidence_digest) VALUES (%s, %s, %s, %s) RETURNING observed_at"
)
# A new observation clears the decided outcome (it was about the previous observation) and sets the next check.
COUNT_OBSERVATION_SQL = ("UPDATE operations SET observation_count = observation_count + 1, "
                         "next_check_at = now() + %s, decided_error_code = NULL, decided_exit_class = NULL, "
                         "decided_reason = NULL WHERE operation_id = %s")
CAS_AXES_SQL = (
    "WITH updated AS (UPDATE operations SET execution_state = %(x)s, remote_effect = %(e)s, "
    "acknowledgement_state = %(a)s, verification_state = %(v)s, checkpoint_state = %(c)s, "
    "revision = revision + 1, attempt_count = attempt_count + %(attempts)s, "
    "last_reconciliation_id = COALESCE(%(rec)s, last_reconciliation_id), updated_at = now(), "
    "decided_error_code = %(code)s, decided_exit_class = %(exit)s, decided_reason = %(reason)s, "
    "accepted_rows = %(accepted)s, rejected_rows = %(rejected)s, rejection_proven = %(refused)s, "
    "receiver_reported_partial = %(partial)s, next_check_at = now() + %(next)s "
    "WHERE operation_id = %(op)s AND revision = %(rev)s RETURNING operation_id, revision, next_check_at), "
    "logged AS (INSERT INTO transition_log (operation_id, revision, transition_id, actor_kind, actor_id, "
    "reconciliation_id, evidence_digest, error_code, exit_class, reason) SELECT operation_id, revision, "
    "%(tid)s, %(ak)s, %(aid)s, %(rec)s, %(ev)s, %(code)s, %(exit)s, %(reason)s FROM updated) "
    "SELECT * FROM updated"
)  # the CAS of the five axes, the decided outcome and counters, plus its transition-log row


class _DomainLockNeeded(Exception):
    """The transition raises the effect index but the domain row was not locked first: redo."""


class PostgresJournal(PostgresReconciliation, PostgresRateLimits):
    """DeliveryJournalPort over one PostgreSQL schema."""

    # ----- reads -------------------------------------------------------------------------------
    @staticmethod
    def _admitted(cur: Cursor, parent_id: str, *, lock: str = "") -> AdmittedParent | None:
        cur.execute(f"SELECT {admission.PARENT_COLUMNS} FROM parents WHERE parent_id = %s {lock}", (parent_id,))
        row = cur.fetchone()
        if row is None:
            return None
        return AdmittedParent(admission.parent_of(row), admission.load_children(cur, parent_id), created=False)

    def get_parent(self, parent_id: str) -> ParentRecord | None:
        with self._db.read() as cur:
            return admission.load_parent_record(cur, parent_id)

    def load_parent(self, parent_id: str) -> AdmittedParent:
        with self._db.read(snapshot=True) as cur:
            found = self._admitted(cur, parent_id)
        if found is None:
            raise JournalRejection(RejectionReason.UNKNOWN_PARENT, f"no parent {parent_id}")
        return found

    def get_operation(self, operation_id: str) -> OperationRow | None:
        with self._db.read() as cur:
            return self._operation(cur, operation_id)

    def find_operation(self, operation_namespace: str, delivery_key: str) -> OperationRow | None:
        return self.get_operation(operation_id_for(operation_namespace, delivery_key))

    def operations_in_domain(self, effect_conflict_domain: str) -> Sequence[OperationRow]:
        with self._db.read() as cur:
            cur.execute(f"SELECT {OPERATION_COLUMNS} FROM operations WHERE effect_conflict_domain = %s "
                        "ORDER BY operation_id", (effect_conflict_domain,))
            return [operation_of(r) for r in cur.fetchall()]

    def list_attempts(self, operation_id: str) -> tuple[Attempt, ...]:
        with self._db.read() as cur:
            cur.execute(SELECT_ATTEMPTS_SQL, (operation_id,))
            return tuple(submit.attempt_of(r) for r in cur.fetchall())

    def list_observations(self, operation_id: str) -> tuple[Observation, ...]:
        with self._db.read() as cur:
            cur.execute("SELECT observation_ordinal, acknowledgement_state, evidence_digest, observed_at "
                        "FROM observations WHERE operation_id = %s ORDER BY observation_ordinal", (operation_id,))
            return tuple(Observation(operation_id, int(r["observation_ordinal"]),
                                     AcknowledgementState(r["acknowledgement_state"]), r["evidence_digest"],
                                     r["observed_at"]) for r in cur.fetchall())

    def get_receipt(self, operation_id: str) -> Receipt | None:
        with self._db.read() as cur:
            cur.execute(SELECT_RECEIPT_SQL, (operation_id,))
            row = cur.fetchone()
        return None if row is None else Receipt(row["receipt_id"], row["receipt_digest"])

    # ----- admission ---------------------------------------------------------------------------
    def admit_parent(self, request: ParentAdmission) -> AdmittedParent:
        try:
            with self._db.write(f"admit_parent:{request.parent_id}", critical=True) as cur:
                gate = self._gate(cur)
                admitted = admission.admit(cur, request, journal_epoch=gate.journal_epoch,
                                           initial=self._contract.initial, fault=self._fault)
                if admitted.created:
                    self._fault("admit.before_commit")
        except UniqueViolation:
            # Another parent admitted one of these child keys concurrently (in another domain, so
            # no shared lock row ordered the two): the unique key decides, nothing of ours is kept.
            raise DeliveryError(ErrorCode.INTENT_CONFLICT,
                                f"a child delivery key of parent {request.parent_id} was admitted concurrently "
                                "under another parent") from None
        return admitted

    # ----- transitions -------------------------------------------------------------------------
    @staticmethod
    def _cas_axes(cur: Cursor, row: OperationRow, target: AxesState, *, transition_id: str, actor_kind: str,
                  actor_id: str, reconciliation_id: str | None, evidence_digest: str | None,
                  extra_attempt: bool = False, decision: Decision = NO_DECISION, facts: ResultFacts | None = None,
                  next_check_after: timedelta | None = None) -> OperationRow:
        kept = row.facts if facts is None else facts
        cur.execute(CAS_AXES_SQL, cas_axes_params(row, target, transition_id=transition_id, actor_kind=actor_kind,
                                                  actor_id=actor_id, reconciliation_id=reconciliation_id,
                                                  evidence_digest=evidence_digest, extra_attempt=extra_attempt,
                                                  decision=decision, facts=kept,
                                                  next_check_after=next_check_after))
        updated = cur.fetchone()
        if updated is None:
            raise TransitionRejected(RejectionReason.STALE_REVISION, f"operation {row.operation_id} changed")
        # The CAS matched `row` exactly, so the stored row is `row` with these changes and nothing else.
        return replace(row, axes=target, revision=row.revision + 1,
                       attempt_count=row.attempt_count + (1 if extra_attempt else 0),
                       last_reconciliation_id=reconciliation_id or row.last_reconciliation_id,
                       decision=decision, facts=kept, next_check_at=updated["next_check_at"])

    def transition(self, request: TransitionRequest) -> OperationRow:
        if request.evidence_digest is not None:
            require_digest(request.evidence_digest, "evidence_digest")
        try:
            return self._transition(request, lock_domain=False)
        except _DomainLockNeeded:
            return self._transition(request, lock_domain=True)

    def _transition(self, request: TransitionRequest, *, lock_domain: bool) -> OperationRow:
        with self._db.write(f"transition:{request.operation_id}", critical=True) as cur:
            if lock_domain:
                peek = self._require_operation(cur, request.operation_id)
                admission.lock_domains(cur, [peek.descriptor.effect_conflict_domain])
            row = self._require_operation(cur, request.operation_id, "FOR UPDATE")
            check_revision(row.operation_id, row.revision, request.expected_revision)
            chosen = resolve_transition(self._contract, row.axes, request.transition_id, request.actor)
            if chosen.kind is TransitionKind.AUTOMATIC:
                refuse_if_abandoned(row)
            for kind in required_leases(chosen):
                owner = require_lease_owner(chosen, kind, request.lease_owner)
                self._require_lease(cur, kind, lease_subject(kind, row.operation_id, row.parent_id),
                                    owner, rejection=TransitionRejected)
            target = chosen.target
            if raises_effect_index(row.axes, target) and not lock_domain:
                raise _DomainLockNeeded
            reconciliation_id = request.actor.reconciliation_id
            if reconciliation_id is not None and retirement.reconciliation_used(
                cur, row.operation_id, reconciliation_id
            ):
                raise TransitionRejected(RejectionReason.INVALID_REQUEST,
                                         "a reconciliation id is never reused on one operation")
            if request.receipt is not None:
                self._store_receipt(cur, row.operation_id, request.receipt)
            updated = self._cas_axes(
                cur, row, target, transition_id=chosen.id, actor_kind=request.actor.kind.value,
                actor_id=request.actor.actor_id, reconciliation_id=reconciliation_id,
                evidence_digest=request.evidence_digest, decision=request.decision, facts=request.facts,
                next_check_after=request.next_check_after,
            )
            self._fault("transition.updated")
            if releases_capacity(target):
                self._release_capacity(cur, row.operation_id)
            if raises_effect_index(row.axes, target):
                d = row.descriptor
                effects.raise_applied_generation(cur, d.effect_conflict_domain, d.scope, d.generation)
            self._fault("transition.before_commit")
        return updated

    @staticmethod
    def _store_receipt(cur: Cursor, operation_id: str, receipt: Receipt) -> None:
        cur.execute(
            "INSERT INTO receipts (operation_id, receipt_id, receipt_digest) VALUES (%s, %s, %s) "
            "ON CONFLICT (operation_id) DO NOTHING RETURNING operation_id",
            (operation_id, receipt.receipt_id, receipt.receipt_digest),
        )
        if cur.fetchone() is not None:
            return
        cur.execute("SELECT receipt_id, receipt_digest FROM receipts WHERE operation_id = %s", (operation_id,))
        stored = cur.fetchone()
        if stored is None or (stored["receipt_id"], stored["receipt_digest"]) != (receipt.receipt_id,
                                                                                  receipt.receipt_digest):
            raise TransitionRejected(RejectionReason.RECEIPT_CONFLICT,
                                     f"operation {operation_id} already has another receipt")

    # ----- critical submit ---------------------------------------------------------------------
    def reserve_and_mark_submitting(self, request: SubmitRequest) -> SubmitGrant:
        require_digest(request.marker_digest, "marker_digest")
        with self._db.write(f"reserve_and_mark_submitting:{request.operation_id}", critical=True) as cur:
            return submit.critical_submit(cur, request, contract=self._contract, markers=self._markers,
                                          cas_axes=self._cas_axes, fault=self._fault)

    # ----- observations ------------------------------------------------------------------------
    def record_observation(self, operation_id: str, *, observation_ordinal: int,
                           acknowledgement_state: AcknowledgementState, evidence_digest: str,
                           lease_owner: str, next_check_after: timedelta | None = None) -> Observation:
        require_digest(evidence_digest, "evidence_digest")
        # Not critical: read-only polling is duplicate-safe and stays available with the gate BLOCKED.
        with self._db.write(f"observe:{operation_id}", critical=False) as cur:
            row = self._require_operation(cur, operation_id, "FOR UPDATE")
            self._require_lease(cur, LeaseKind.OBSERVATION, operation_id, lease_owner)
            if observation_ordinal != row.observation_count + 1:
                raise JournalRejection(
                    RejectionReason.OBSERVATION_ORDINAL_NOT_NEXT,
                    f"observation ordinal must be {row.observation_count + 1}, got {observation_ordinal}",
                )
            cur.execute(INSERT_OBSERVATION_SQL,
                        (operation_id, observation_ordinal, acknowledgement_state.value, evidence_digest))
            observed = cur.fetchone()
            assert observed is not None
            cur.execute(COUNT_OBSERVATION_SQL, (next_check_after, operation_id))
        return Observation(operation_id, observation_ordinal, acknowledgement_state, evidence_digest,
                           observed["observed_at"])

    # ----- frontier ----------------------------------------------------------------------------
    def promote_frontier(self, parent_id: str, *, lease_owner: str) -> FrontierResult:
        with self._db.write(f"promote_frontier:{parent_id}", critical=True) as cur:
            self._require_lease(cur, LeaseKind.CHECKPOINT, parent_id, lease_owner)
            admitted = self._admitted(cur, parent_id, lock="FOR UPDATE")
            if admitted is None:
                raise JournalRejection(RejectionReason.UNKNOWN_PARENT, f"no parent {parent_id}")
            result, promotions = plan_promotion(self._contract, admitted)
            for row, target, transition_id in promotions:
                self._cas_axes(cur, row, target, transition_id=transition_id, actor_kind="automatic",
                               actor_id=lease_owner, reconciliation_id=None, evidence_digest=None)
            cur.execute(
                "UPDATE parents SET frontier_order = %s, frontier_scope_end = %s WHERE parent_id = %s",
                (result.frontier_order,
                 None if result.frontier_scope_end is None else to_timestamp(result.frontier_scope_end),
                 parent_id),
            )
        return result

    # ----- effect index and retention ----------------------------------------------------------
    def get_tombstone(self, operation_id: str) -> EffectTombstone | None:
        with self._db.read() as cur:
            row = self._operation(cur, operation_id)
            if row is None:
                return None
            cur.execute("SELECT profile_contract_digest, receipt_id FROM operation_tombstones "
                        "WHERE operation_id = %s", (operation_id,))
            extra = cur.fetchone()
        assert extra is not None
        d = row.descriptor
        return EffectTombstone(
            operation_id=row.operation_id, operation_namespace=row.operation_namespace,
            delivery_key=d.delivery_key, mutation_intent_digest=d.mutation_intent_digest, generation=d.generation,
            effect_conflict_domain=d.effect_conflict_domain, scope=d.scope, mutation_kind=d.mutation_kind,
            payload_digest=d.payload_digest, profile_contract_digest=extra["profile_contract_digest"],
            remote_effect=row.axes.remote_effect, verification_state=row.axes.verification_state,
            checkpoint_state=row.axes.checkpoint_state, receipt_id=extra["receipt_id"],
        )

    def effect_intervals(self, effect_conflict_domain: str) -> tuple[GenerationInterval, ...]:
        with self._db.read() as cur:
            return effects.intervals(cur, effect_conflict_domain)

    def apply_retention(self, *, observations_older_than: datetime) -> RetentionReport:
        with self._db.write("retention", critical=False) as cur:
            cur.execute(
                "DELETE FROM observations WHERE observed_at < %s AND operation_id IN "
                "(SELECT operation_id FROM operations WHERE execution_state = 'FINALIZED')",
                (observations_older_than,),
            )
            deleted = cur.rowcount
            cur.execute("SELECT (SELECT count(*) FROM operations) AS ops, "
                        "(SELECT count(*) FROM applied_generation_map) AS pieces")
            counts = cur.fetchone()
        assert counts is not None
        return RetentionReport(observations_deleted=deleted, tombstones_kept=int(counts["ops"]),
                               intervals_kept=int(counts["pieces"]))
