"""PostgreSQL journal: operation reads, and the reconciliation and operator-decision writes
(orphan-marker retirement, abandon, capacity transfer to the incident reserve).

The rules are the shared policies (``marker_policy``, ``decision_policy``); this module reads what
they need and appends the audit rows in one transaction each.
"""

# SQL text here is composed only from module constants (column lists, lock clauses); every value
# is passed as a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from datetime import timedelta

from sink.journal.decision_policy import check_decision
from sink.journal.marker_policy import check_retirement_request, marker_attempt_mismatch
from sink.journal.markers import StoredMarker, UnreadableMarker, namespace_key
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.postgres import retirement, submit
from sink.journal.postgres.base import PostgresJournalBase
from sink.journal.postgres.connection import Cursor
from sink.journal.postgres.rows import OPERATION_COLUMNS, decision_params, operation_of
from sink.journal.records import (
    Decision,
    LeaseKind,
    MarkerRetirement,
    OperationRow,
    OperatorDecisionKind,
    OperatorDecisionRecord,
    OperatorDecisionRequest,
    OrphanMarker,
    RetiredMarker,
    UnconfirmedCriticalCommit,
)


class PostgresReconciliation(PostgresJournalBase):
    @staticmethod
    def _operation(cur: Cursor, operation_id: str, lock: str = "") -> OperationRow | None:
        cur.execute(f"SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = %s {lock}", (operation_id,))
        row = cur.fetchone()
        return None if row is None else operation_of(row)

    @classmethod
    def _require_operation(cls, cur: Cursor, operation_id: str, lock: str = "") -> OperationRow:
        found = cls._operation(cur, operation_id, lock)
        if found is None:
            raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {operation_id}")
        return found


    # ----- operator decisions ------------------------------------------------------------------
    def record_operator_decision(self, request: OperatorDecisionRequest) -> OperationRow:
        with self._db.write(f"operator_decision:{request.operation_id}", critical=True) as cur:
            row = self._require_operation(cur, request.operation_id, "FOR UPDATE")
            cur.execute("SELECT attempt_id FROM capacity_slots WHERE operation_id = %s ORDER BY attempt_id",
                        (row.operation_id,))
            held = [str(r["attempt_id"]) for r in cur.fetchall()]
            reconciliation_id = check_decision(row, request, holds_capacity=bool(held))
            if retirement.reconciliation_used(cur, row.operation_id, reconciliation_id):
                raise TransitionRejected(RejectionReason.INVALID_REQUEST,
                                         "a reconciliation id is never reused on one operation")
            cur.execute(
                "INSERT INTO operator_decisions (operation_id, reconciliation_id, kind, actor_id, evidence_digest, "
                "released_attempts) VALUES (%s, %s, %s, %s, %s, %s)",
                (row.operation_id, reconciliation_id, request.kind.value, request.actor.actor_id,
                 request.evidence_digest, held),
            )
            self._release_capacity(cur, row.operation_id)
            if request.kind is OperatorDecisionKind.ABANDON:
                cur.execute("UPDATE operations SET abandoned = true WHERE operation_id = %s", (row.operation_id,))
            return self._require_operation(cur, row.operation_id)

    def record_pause(self, operation_id: str, *, lease_kind: LeaseKind, lease_owner: str, decision: Decision,
                     next_check_after: timedelta | None = None) -> OperationRow:
        # Not critical: a pause note is what the next result reports, never authority to act.
        with self._db.write(f"pause:{operation_id}", critical=False) as cur:
            row = self._require_operation(cur, operation_id, "FOR UPDATE")
            self._require_lease(cur, lease_kind, operation_id, lease_owner)
            cur.execute("UPDATE operations SET decided_error_code = %(code)s, decided_exit_class = %(exit)s, "
                        "decided_reason = %(reason)s, next_check_at = now() + %(next)s WHERE operation_id = %(op)s",
                        {**decision_params(decision), "next": next_check_after, "op": row.operation_id})
            return self._require_operation(cur, row.operation_id)

    def list_operator_decisions(self, operation_id: str) -> tuple[OperatorDecisionRecord, ...]:
        with self._db.read() as cur:
            cur.execute("SELECT operation_id, kind, actor_id, reconciliation_id, evidence_digest, released_attempts, "
                        "decided_at FROM operator_decisions WHERE operation_id = %s "
                        "ORDER BY decided_at, reconciliation_id", (operation_id,))
            return tuple(
                OperatorDecisionRecord(r["operation_id"], OperatorDecisionKind(r["kind"]), r["actor_id"],
                                       r["reconciliation_id"], r["evidence_digest"], tuple(r["released_attempts"]),
                                       r["decided_at"])
                for r in cur.fetchall()
            )

    # ----- reconciliation ----------------------------------------------------------------------
    def list_unconfirmed_critical_commits(self) -> tuple[UnconfirmedCriticalCommit, ...]:
        with self._db.read() as cur:
            cur.execute("SELECT detection_seq, transaction_name, subject_id, detected_at "
                        "FROM unconfirmed_critical_commits ORDER BY detection_seq")
            return tuple(
                UnconfirmedCriticalCommit(int(r["detection_seq"]), r["transaction_name"], r["subject_id"],
                                          r["detected_at"])
                for r in cur.fetchall()
            )

    def retire_orphan_marker(self, request: MarkerRetirement) -> OperationRow:
        reconciliation_id = check_retirement_request(request)
        with self._db.write(f"retire_marker:{request.operation_id}", critical=True) as cur:
            row = self._require_operation(cur, request.operation_id, "FOR UPDATE")
            stored = self._markers.get(row.operation_namespace, row.operation_id, request.attempt_ordinal)
            retirement.record_retirement(cur, row, request, reconciliation_id, stored)
            self._fault("retire_marker.recorded")
            return self._require_operation(cur, row.operation_id)

    def list_retired_markers(self, operation_namespace: str | None = None) -> tuple[RetiredMarker, ...]:
        with self._db.read() as cur:
            return retirement.list_retired(cur, operation_namespace)

    def find_orphan_markers(self, operation_namespace: str | None = None) -> tuple[OrphanMarker, ...]:
        wanted_key = None if operation_namespace is None else namespace_key(operation_namespace)
        orphans: list[OrphanMarker] = []
        with self._db.read() as cur:
            for entry in self._markers.scan():
                if isinstance(entry, UnreadableMarker):
                    if wanted_key in (None, entry.operation_namespace_key):
                        orphans.append(OrphanMarker(entry.operation_namespace_key, entry.operation_id,
                                                    entry.attempt_ordinal, "", entry.digest, "marker unreadable"))
                    continue
                if operation_namespace is not None and entry.marker.operation_namespace != operation_namespace:
                    continue
                if retirement.is_retired(cur, entry):
                    continue  # retired by an operator with evidence: listed by list_retired_markers
                reason = _marker_mismatch(cur, entry, self._markers.grant_claimed(
                    entry.marker.operation_namespace, entry.marker.operation_id, entry.marker.attempt_ordinal))
                if reason is not None:
                    m = entry.marker
                    orphans.append(OrphanMarker(m.operation_namespace, m.operation_id, m.attempt_ordinal,
                                                m.attempt_id, entry.digest, reason))
        return tuple(orphans)


def _marker_mismatch(cur: Cursor, entry: StoredMarker, claimed: bool) -> str | None:
    m = entry.marker
    cur.execute(f"SELECT {submit.ATTEMPT_COLUMNS} FROM attempts WHERE operation_id = %s AND attempt_ordinal = %s",
                (m.operation_id, m.attempt_ordinal))
    found = cur.fetchone()
    return marker_attempt_mismatch(entry, None if found is None else submit.attempt_of(found), claimed=claimed)
