"""Operator retirement of an orphan MAY_ATTEMPT marker in the SQLite journal.

The decision is the shared policy in ``marker_policy``; this module only reads the rows it needs
and records the retirement append-only (``retired_markers``, migration 3) in one transaction.
"""

from __future__ import annotations

import sqlite3

from sink.journal.ids import attempt_id_for
from sink.journal.marker_policy import check_retirable, check_retirement_request
from sink.journal.records import MarkerRetirement, OperationRow, RetiredMarker
from sink.journal.sqlite.codec import decode_time, encode_time
from sink.journal.sqlite.inspection import SqliteInspection

_RETIRED_COLUMNS = (
    "operation_namespace, operation_id, attempt_ordinal, attempt_id, marker_digest, reconciliation_id, "
    "evidence_digest, actor_id, retired_at"
)


class SqliteRetirement(SqliteInspection):
    def retire_orphan_marker(self, request: MarkerRetirement) -> OperationRow:
        reconciliation_id = check_retirement_request(request)
        with self._write("retire_marker") as (conn, now):
            row = self._require_operation(conn, request.operation_id)
            attempt = conn.execute(
                "SELECT 1 FROM attempts WHERE operation_id = ? AND attempt_ordinal = ?",
                (row.operation_id, request.attempt_ordinal),
            ).fetchone()
            check_retirable(
                request, row, self._markers.get(row.operation_namespace, row.operation_id, request.attempt_ordinal),
                attempt_exists=attempt is not None,
                reconciliation_used=reconciliation_used(conn, row.operation_id, reconciliation_id),
            )
            conn.execute(
                f"INSERT INTO retired_markers ({_RETIRED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608 - fixed column list
                (row.operation_namespace, row.operation_id, request.attempt_ordinal,
                 attempt_id_for(row.operation_id, request.attempt_ordinal), request.marker_digest, reconciliation_id,
                 request.evidence_digest, request.actor.actor_id, encode_time(now)),
            )
            self._fault("retire_marker.recorded")
            # The ordinal is consumed: the next submit must use the following one. Axes and the
            # CAS revision are untouched (no state changed; a marker binds the revision it saw).
            conn.execute("UPDATE operations SET attempt_count = attempt_count + 1 WHERE operation_id = ?",
                         (row.operation_id,))
            return self._require_operation(conn, row.operation_id)

    def list_retired_markers(self, operation_namespace: str | None = None) -> tuple[RetiredMarker, ...]:
        where, params = ("", ()) if operation_namespace is None else (
            "WHERE operation_namespace = ?", (operation_namespace,))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_RETIRED_COLUMNS} FROM retired_markers {where} "  # noqa: S608 - fixed fragments
                "ORDER BY operation_id, attempt_ordinal", params,
            ).fetchall()
        return tuple(
            RetiredMarker(r[0], r[1], int(r[2]), r[3], r[4], r[5], r[6], r[7], decode_time(r[8])) for r in rows
        )


def reconciliation_used(conn: sqlite3.Connection, operation_id: str, reconciliation_id: str) -> bool:
    """A reconciliation id is never reused on one operation: transitions, retirements and operator
    decisions alike."""
    return conn.execute(
        "SELECT 1 FROM transition_log WHERE operation_id = ? AND reconciliation_id = ? "
        "UNION ALL SELECT 1 FROM retired_markers WHERE operation_id = ? AND reconciliation_id = ? "
        "UNION ALL SELECT 1 FROM operator_decisions WHERE operation_id = ? AND reconciliation_id = ?",
        (operation_id, reconciliation_id) * 3,
    ).fetchone() is not None
