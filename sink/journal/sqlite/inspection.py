"""Read-side of the SQLite journal: row loaders, effect index, retention and orphan-marker reconciliation."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from sink.journal.interval_map import Interval
from sink.journal.marker_policy import marker_attempt_mismatch
from sink.journal.markers import UnreadableMarker, namespace_key
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import (
    AdmittedParent,
    EffectTombstone,
    GenerationInterval,
    GenerationKey,
    OperationRow,
    OrphanMarker,
    RetentionReport,
    ScopeRange,
    UnconfirmedCriticalCommit,
)
from sink.journal.sqlite.base import SqliteJournalBase
from sink.journal.sqlite.codec import (
    OPERATION_COLUMNS,
    attempt_from_row,
    encode_time,
    operation_from_row,
    parent_from_row,
)


class SqliteInspection(SqliteJournalBase):
    # ----- reads -------------------------------------------------------------------------------
    @staticmethod
    def _operation(conn: sqlite3.Connection, operation_id: str) -> OperationRow | None:
        row = conn.execute(
            f"SELECT {OPERATION_COLUMNS} FROM operations WHERE operation_id = ?", (operation_id,)  # noqa: S608 - fixed column list
        ).fetchone()
        return None if row is None else operation_from_row(row)

    @classmethod
    def _require_operation(cls, conn: sqlite3.Connection, operation_id: str) -> OperationRow:
        found = cls._operation(conn, operation_id)
        if found is None:
            raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {operation_id}")
        return found

    @staticmethod
    def _domain_operations(conn: sqlite3.Connection, domain: str) -> list[OperationRow]:
        rows = conn.execute(
            f"SELECT {OPERATION_COLUMNS} FROM operations WHERE effect_conflict_domain = ?", (domain,)  # noqa: S608 - fixed column list
        ).fetchall()
        return [operation_from_row(r) for r in rows]

    @staticmethod
    def _overlapping_operations(
        conn: sqlite3.Connection, domain: str, scope: ScopeRange, *, excluding: str = ""
    ) -> list[OperationRow]:
        """Operations of ``domain`` whose half-open scope overlaps ``scope`` (except ``excluding``).

        SQL selects the candidates so only they are decoded: the covering index
        ``operations_by_domain_scope (effect_conflict_domain, scope_start, scope_end)`` answers the
        whole WHERE clause from index entries (scope instants are fixed-width UTC text, so text
        order is time order). The fence decision stays in ``submit_policy``, which filters by
        overlap itself, exactly as for the PostgreSQL adapter's ``&&`` query.
        """
        rows = conn.execute(
            f"SELECT {OPERATION_COLUMNS} FROM operations WHERE effect_conflict_domain = ? "  # noqa: S608 - fixed column list
            "AND scope_start < ? AND scope_end > ? AND operation_id <> ?",
            (domain, scope.end, scope.start, excluding),
        ).fetchall()
        return [operation_from_row(r) for r in rows]

    @staticmethod
    def _intervals_near(conn: sqlite3.Connection, domain: str, scope: ScopeRange, *, touching: bool) -> list[Interval]:
        """Pieces of the interval map overlapping ``scope`` (or, with ``touching``, also sharing an
        end point with it), sorted by start: the only pieces a fence decision or a raise can use."""
        condition = "scope_start <= ? AND scope_end >= ?" if touching else "scope_start < ? AND scope_end > ?"
        rows = conn.execute(
            "SELECT scope_start, scope_end, generation_end, correction_revision FROM effect_intervals "  # noqa: S608 - one of two fixed conditions
            f"WHERE effect_conflict_domain = ? AND {condition} ORDER BY scope_start",
            (domain, scope.end, scope.start),
        ).fetchall()
        return [(ScopeRange(r[0], r[1]), GenerationKey(r[2], r[3])) for r in rows]

    @staticmethod
    def _intervals(conn: sqlite3.Connection, domain: str) -> list[Interval]:
        rows = conn.execute(
            "SELECT scope_start, scope_end, generation_end, correction_revision FROM effect_intervals "
            "WHERE effect_conflict_domain = ? ORDER BY scope_start",
            (domain,),
        ).fetchall()
        return [(ScopeRange(r[0], r[1]), GenerationKey(r[2], r[3])) for r in rows]

    @classmethod
    def _admitted(cls, conn: sqlite3.Connection, parent_id: str, *, created: bool) -> AdmittedParent | None:
        row = conn.execute("SELECT * FROM parents WHERE parent_id = ?", (parent_id,)).fetchone()
        if row is None:
            return None
        children = conn.execute(
            f"SELECT {OPERATION_COLUMNS} FROM operations WHERE parent_id = ? ORDER BY ordinal", (parent_id,)  # noqa: S608 - fixed column list
        ).fetchall()
        return AdmittedParent(parent_from_row(row), tuple(operation_from_row(c) for c in children), created)

    # ----- effect index and retention ----------------------------------------------------------
    def get_tombstone(self, operation_id: str) -> EffectTombstone | None:
        with self._read() as conn:
            row = self._operation(conn, operation_id)
            if row is None:
                return None
            profile = conn.execute(
                "SELECT profile_contract_digest FROM parents WHERE parent_id = ?", (row.parent_id,)
            ).fetchone()[0]
            receipt = conn.execute(
                "SELECT receipt_id FROM receipts WHERE operation_id = ?", (operation_id,)
            ).fetchone()
        d = row.descriptor
        return EffectTombstone(
            operation_id=row.operation_id, operation_namespace=row.operation_namespace,
            delivery_key=d.delivery_key, mutation_intent_digest=d.mutation_intent_digest, generation=d.generation,
            effect_conflict_domain=d.effect_conflict_domain, scope=d.scope, mutation_kind=d.mutation_kind,
            payload_digest=d.payload_digest, profile_contract_digest=profile,
            remote_effect=row.axes.remote_effect, verification_state=row.axes.verification_state,
            checkpoint_state=row.axes.checkpoint_state, receipt_id=None if receipt is None else receipt[0],
        )

    def effect_intervals(self, effect_conflict_domain: str) -> tuple[GenerationInterval, ...]:
        with self._read() as conn:
            return tuple(
                GenerationInterval(effect_conflict_domain, s, g)
                for s, g in self._intervals(conn, effect_conflict_domain)
            )

    def apply_retention(self, *, observations_older_than: datetime) -> RetentionReport:
        with self._write("retention") as (conn, _now):
            deleted = conn.execute(
                "DELETE FROM observations WHERE observed_at < ? AND operation_id IN "
                "(SELECT operation_id FROM operations WHERE execution_state = 'FINALIZED')",
                (encode_time(observations_older_than),),
            ).rowcount
            kept = conn.execute("SELECT COUNT(*) FROM operations").fetchone()[0]
            intervals = conn.execute("SELECT COUNT(*) FROM effect_intervals").fetchone()[0]
            return RetentionReport(observations_deleted=deleted, tombstones_kept=kept, intervals_kept=intervals)

    # ----- reconciliation ----------------------------------------------------------------------
    def list_unconfirmed_critical_commits(self) -> tuple[UnconfirmedCriticalCommit, ...]:
        # SQLite has no synchronous replication (zero RPO is refused at open), so a commit here is
        # never "committed locally but unconfirmed": there is nothing to record or reconcile.
        return ()

    def find_orphan_markers(self, operation_namespace: str | None = None) -> tuple[OrphanMarker, ...]:
        wanted_key = None if operation_namespace is None else namespace_key(operation_namespace)
        orphans: list[OrphanMarker] = []
        with self._read() as conn:
            for entry in self._markers.scan():
                if isinstance(entry, UnreadableMarker):
                    if wanted_key in (None, entry.operation_namespace_key):
                        orphans.append(OrphanMarker(
                            entry.operation_namespace_key, entry.operation_id, entry.attempt_ordinal,
                            "", entry.digest, "marker unreadable",
                        ))
                    continue
                if operation_namespace is not None and entry.marker.operation_namespace != operation_namespace:
                    continue
                m = entry.marker
                if conn.execute(
                    "SELECT 1 FROM retired_markers WHERE operation_id = ? AND attempt_ordinal = ? "
                    "AND marker_digest = ?",
                    (m.operation_id, m.attempt_ordinal, entry.digest),
                ).fetchone() is not None:
                    continue  # retired by an operator with evidence: listed by list_retired_markers
                found = conn.execute(
                    "SELECT * FROM attempts WHERE operation_id = ? AND attempt_ordinal = ?",
                    (m.operation_id, m.attempt_ordinal),
                ).fetchone()
                claimed = self._markers.grant_claimed(m.operation_namespace, m.operation_id, m.attempt_ordinal)
                reason = marker_attempt_mismatch(entry, None if found is None else attempt_from_row(found),
                                                 claimed=claimed)
                if reason is not None:
                    m = entry.marker
                    orphans.append(OrphanMarker(
                        m.operation_namespace, m.operation_id, m.attempt_ordinal, m.attempt_id, entry.digest, reason
                    ))
        return tuple(orphans)


