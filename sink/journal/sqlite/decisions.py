"""Audited operator decisions in the SQLite journal (abandon a child, transfer its capacity), and
the pause note of a step that stops without a transition.

The rules are the shared ``decision_policy``; this module reads what the policy needs and writes
the decision append-only (``operator_decisions``, migration 5) in one transaction.
"""

from __future__ import annotations

from datetime import timedelta

from sink.journal.decision_policy import check_decision
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import (
    Decision,
    LeaseKind,
    OperationRow,
    OperatorDecisionKind,
    OperatorDecisionRecord,
    OperatorDecisionRequest,
)
from sink.journal.sqlite.codec import decision_params, decode_time, encode_time
from sink.journal.sqlite.retirement import SqliteRetirement, reconciliation_used


class SqliteDecisions(SqliteRetirement):
    def record_operator_decision(self, request: OperatorDecisionRequest) -> OperationRow:
        with self._write("operator_decision") as (conn, now):
            row = self._require_operation(conn, request.operation_id)
            held = [r[0] for r in conn.execute(
                "SELECT attempt_id FROM capacity_reservations WHERE operation_id = ? ORDER BY attempt_id",
                (row.operation_id,),
            ).fetchall()]
            reconciliation_id = check_decision(row, request, holds_capacity=bool(held))
            if reconciliation_used(conn, row.operation_id, reconciliation_id):
                raise TransitionRejected(RejectionReason.INVALID_REQUEST,
                                         "a reconciliation id is never reused on one operation")
            conn.execute(
                "INSERT INTO operator_decisions (operation_id, reconciliation_id, kind, actor_id, evidence_digest, "
                "released_attempts, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row.operation_id, reconciliation_id, request.kind.value, request.actor.actor_id,
                 request.evidence_digest, " ".join(held), encode_time(now)),
            )
            self._release_capacity(conn, row.operation_id)
            if request.kind is OperatorDecisionKind.ABANDON:
                conn.execute("UPDATE operations SET abandoned = 1 WHERE operation_id = ?", (row.operation_id,))
            return self._require_operation(conn, row.operation_id)

    def record_pause(self, operation_id: str, *, lease_kind: LeaseKind, lease_owner: str, decision: Decision,
                     next_check_after: timedelta | None = None) -> OperationRow:
        with self._write("pause") as (conn, now):
            row = self._require_operation(conn, operation_id)
            self._require_lease(conn, now, lease_kind, operation_id, lease_owner)
            conn.execute(
                "UPDATE operations SET decided_error_code = ?, decided_exit_class = ?, decided_reason = ?, "
                "next_check_at = ? WHERE operation_id = ?",
                (*decision_params(decision), None if next_check_after is None else encode_time(now + next_check_after),
                 row.operation_id),
            )
            return self._require_operation(conn, row.operation_id)

    def list_operator_decisions(self, operation_id: str) -> tuple[OperatorDecisionRecord, ...]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT operation_id, kind, actor_id, reconciliation_id, evidence_digest, released_attempts, "
                "decided_at FROM operator_decisions WHERE operation_id = ? ORDER BY decided_at, reconciliation_id",
                (operation_id,),
            ).fetchall()
        return tuple(
            OperatorDecisionRecord(r[0], OperatorDecisionKind(r[1]), r[2], r[3], r[4],
                                   tuple(r[5].split()), decode_time(r[6]))
            for r in rows
        )
