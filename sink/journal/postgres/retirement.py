"""Operator retirement of an orphan MAY_ATTEMPT marker in the PostgreSQL journal.

The decision is the shared policy in ``marker_policy``; these helpers run inside the adapter's
transaction (operation row locked FOR UPDATE) and record the retirement append-only
(``retired_markers``, migration 0002) with the server's now().
"""

from __future__ import annotations

from sink.journal.ids import attempt_id_for
from sink.journal.marker_policy import check_retirable
from sink.journal.markers import StoredMarker
from sink.journal.postgres.connection import Cursor
from sink.journal.records import MarkerRetirement, OperationRow, RetiredMarker

_COLUMNS = (
    "operation_namespace, operation_id, attempt_ordinal, attempt_id, marker_digest, reconciliation_id, "
    "evidence_digest, actor_id, retired_at"
)


def reconciliation_used(cur: Cursor, operation_id: str, reconciliation_id: str) -> bool:
    """A reconciliation id is never reused on one operation: transitions, retirements and operator
    decisions alike."""
    cur.execute(
        "SELECT 1 FROM transition_log WHERE operation_id = %(op)s AND reconciliation_id = %(rid)s "
        "UNION ALL SELECT 1 FROM retired_markers WHERE operation_id = %(op)s AND reconciliation_id = %(rid)s "
        "UNION ALL SELECT 1 FROM operator_decisions WHERE operation_id = %(op)s AND reconciliation_id = %(rid)s",
        {"op": operation_id, "rid": reconciliation_id},
    )
    return cur.fetchone() is not None


def record_retirement(cur: Cursor, row: OperationRow, request: MarkerRetirement, reconciliation_id: str,
                      stored: StoredMarker | None) -> None:
    """Check with the shared policy, then append the retirement and consume the ordinal."""
    cur.execute("SELECT 1 FROM attempts WHERE operation_id = %s AND attempt_ordinal = %s",
                (row.operation_id, request.attempt_ordinal))
    attempt_exists = cur.fetchone() is not None
    check_retirable(request, row, stored, attempt_exists=attempt_exists,
                    reconciliation_used=reconciliation_used(cur, row.operation_id, reconciliation_id))
    cur.execute(
        f"INSERT INTO retired_markers ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now())",  # noqa: S608 - fixed column list
        (row.operation_namespace, row.operation_id, request.attempt_ordinal,
         attempt_id_for(row.operation_id, request.attempt_ordinal), request.marker_digest, reconciliation_id,
         request.evidence_digest, request.actor.actor_id),
    )
    # The ordinal is consumed; axes and the CAS revision are untouched (no state changed).
    cur.execute("UPDATE operations SET attempt_count = attempt_count + 1 WHERE operation_id = %s",
                (row.operation_id,))


def is_retired(cur: Cursor, entry: StoredMarker) -> bool:
    cur.execute("SELECT 1 FROM retired_markers WHERE operation_id = %s AND attempt_ordinal = %s "
                "AND marker_digest = %s", (entry.marker.operation_id, entry.marker.attempt_ordinal, entry.digest))
    return cur.fetchone() is not None


def list_retired(cur: Cursor, operation_namespace: str | None) -> tuple[RetiredMarker, ...]:
    cur.execute(
        f"SELECT {_COLUMNS} FROM retired_markers "  # noqa: S608 - fixed column list
        "WHERE %(ns)s::text IS NULL OR operation_namespace = %(ns)s ORDER BY operation_id, attempt_ordinal",
        {"ns": operation_namespace},
    )
    return tuple(
        RetiredMarker(str(r["operation_namespace"]), str(r["operation_id"]), int(r["attempt_ordinal"]),
                      str(r["attempt_id"]), str(r["marker_digest"]), str(r["reconciliation_id"]),
                      str(r["evidence_digest"]), str(r["actor_id"]), r["retired_at"])
        for r in cur.fetchall()
    )
