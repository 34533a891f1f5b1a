"""Versioned, forward-only schema migrations of the SQLite journal.

Each entry is applied once, in order, inside one ``BEGIN IMMEDIATE`` transaction together with
its ``schema_version`` row. A database whose version is newer than this code is refused.
"""

from __future__ import annotations

import sqlite3

from sink.journal.port import JournalConfigurationError

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE parents (
            parent_id TEXT PRIMARY KEY,
            operation_namespace TEXT NOT NULL,
            parent_delivery_key TEXT NOT NULL,
            parent_plan_digest TEXT NOT NULL,
            plan_ref TEXT NOT NULL,
            profile_contract_digest TEXT NOT NULL,
            child_count INTEGER NOT NULL CHECK (child_count > 0),
            frontier_order INTEGER,
            frontier_scope_end TEXT,
            admitted_at TEXT NOT NULL,
            UNIQUE (operation_namespace, parent_delivery_key)
        );
        CREATE TABLE operations (
            operation_id TEXT PRIMARY KEY,
            parent_id TEXT NOT NULL REFERENCES parents (parent_id),
            operation_namespace TEXT NOT NULL,
            delivery_key TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            scope_start TEXT NOT NULL,
            scope_end TEXT NOT NULL CHECK (scope_start < scope_end),
            mutation_intent_digest TEXT NOT NULL,
            payload_ref TEXT NOT NULL,
            payload_digest TEXT NOT NULL,
            generation_end TEXT NOT NULL,
            correction_revision INTEGER NOT NULL CHECK (correction_revision >= 0),
            frontier_order INTEGER NOT NULL,
            coverage_proof_digest TEXT NOT NULL,
            effect_conflict_domain TEXT NOT NULL,
            mutation_kind TEXT NOT NULL,
            execution_state TEXT NOT NULL,
            remote_effect TEXT NOT NULL,
            acknowledgement_state TEXT NOT NULL,
            verification_state TEXT NOT NULL,
            checkpoint_state TEXT NOT NULL,
            revision INTEGER NOT NULL CHECK (revision >= 0),
            attempt_count INTEGER NOT NULL DEFAULT 0,
            observation_count INTEGER NOT NULL DEFAULT 0,
            last_reconciliation_id TEXT,
            UNIQUE (operation_namespace, delivery_key),
            UNIQUE (parent_id, ordinal),
            UNIQUE (parent_id, frontier_order)
        );
        CREATE INDEX operations_by_domain ON operations (effect_conflict_domain, scope_start);
        CREATE TABLE transition_log (
            operation_id TEXT NOT NULL REFERENCES operations (operation_id),
            revision INTEGER NOT NULL,
            transition_id TEXT NOT NULL,
            actor_kind TEXT NOT NULL,
            actor_id TEXT NOT NULL,
            reconciliation_id TEXT,
            evidence_digest TEXT,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (operation_id, revision)
        );
        CREATE TABLE attempts (
            operation_id TEXT NOT NULL REFERENCES operations (operation_id),
            attempt_ordinal INTEGER NOT NULL CHECK (attempt_ordinal >= 1),
            attempt_id TEXT NOT NULL UNIQUE,
            marker_digest TEXT NOT NULL,
            expected_revision INTEGER NOT NULL,
            journal_epoch INTEGER NOT NULL,
            capacity_scope TEXT NOT NULL,
            created_at TEXT NOT NULL,
            capacity_released INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (operation_id, attempt_ordinal)
        );
        CREATE TABLE observations (
            operation_id TEXT NOT NULL REFERENCES operations (operation_id),
            observation_ordinal INTEGER NOT NULL CHECK (observation_ordinal >= 1),
            acknowledgement_state TEXT NOT NULL,
            evidence_digest TEXT NOT NULL,
            observed_at TEXT NOT NULL,
            PRIMARY KEY (operation_id, observation_ordinal)
        );
        CREATE TABLE receipts (
            operation_id TEXT PRIMARY KEY REFERENCES operations (operation_id),
            receipt_id TEXT NOT NULL,
            receipt_digest TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        );
        CREATE TABLE leases (
            kind TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            fencing_token INTEGER NOT NULL,
            PRIMARY KEY (kind, subject_id)
        );
        CREATE TABLE capacity_scopes (
            scope TEXT PRIMARY KEY,
            slots INTEGER NOT NULL CHECK (slots >= 0)
        );
        CREATE TABLE capacity_reservations (
            attempt_id TEXT PRIMARY KEY REFERENCES attempts (attempt_id),
            scope TEXT NOT NULL REFERENCES capacity_scopes (scope),
            operation_id TEXT NOT NULL,
            reserved_at TEXT NOT NULL
        );
        CREATE TABLE effect_intervals (
            effect_conflict_domain TEXT NOT NULL,
            scope_start TEXT NOT NULL,
            scope_end TEXT NOT NULL CHECK (scope_start < scope_end),
            generation_end TEXT NOT NULL,
            correction_revision INTEGER NOT NULL,
            PRIMARY KEY (effect_conflict_domain, scope_start)
        );
        CREATE TABLE journal_gate (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            state TEXT NOT NULL,
            journal_epoch INTEGER NOT NULL CHECK (journal_epoch >= 1),
            reason TEXT NOT NULL,
            attested_by TEXT,
            attestation_digest TEXT,
            changed_at TEXT NOT NULL
        );
        """,
    ),
    (
        2,
        # The overlap fence selects candidate rows in SQL (scope_start < :end AND scope_end > :start)
        # instead of decoding the whole domain; with scope_end in the index that predicate is
        # answered from index entries, and only overlapping rows are read from the table.
        # Capacity: a submit counts the held reservations of its scope and a release deletes those
        # of one operation; both were full-table scans growing with every unreleased attempt.
        """
        DROP INDEX operations_by_domain;
        CREATE INDEX operations_by_domain_scope ON operations (effect_conflict_domain, scope_start, scope_end);
        CREATE INDEX capacity_reservations_by_scope ON capacity_reservations (scope);
        CREATE INDEX capacity_reservations_by_operation ON capacity_reservations (operation_id);
        """,
    ),
    (
        3,
        # Append-only record of orphan MAY_ATTEMPT markers an operator retired with evidence; a
        # retired ordinal is consumed for good (one row per operation and ordinal).
        """
        CREATE TABLE retired_markers (
            operation_namespace TEXT NOT NULL,
            operation_id TEXT NOT NULL REFERENCES operations (operation_id),
            attempt_ordinal INTEGER NOT NULL CHECK (attempt_ordinal >= 1),
            attempt_id TEXT NOT NULL UNIQUE,
            marker_digest TEXT NOT NULL,
            reconciliation_id TEXT NOT NULL,
            evidence_digest TEXT NOT NULL,
            actor_id TEXT NOT NULL,
            retired_at TEXT NOT NULL,
            PRIMARY KEY (operation_id, attempt_ordinal),
            UNIQUE (operation_id, reconciliation_id)
        );
        CREATE INDEX retired_markers_by_namespace ON retired_markers (operation_namespace)
        """,
    ),
    (
        4,
        # The distributed rate limiter (sink.journal.rate_policy): one token bucket per limit and
        # scope, and the active-request claims, each a lease that expires so a killed holder
        # cannot keep its slot forever. Shared by every process that opens this file.
        """
        CREATE TABLE rate_buckets (
            bucket TEXT PRIMARY KEY,
            units INTEGER NOT NULL CHECK (units >= 0),
            refilled_at TEXT NOT NULL
        );
        CREATE TABLE request_slots (
            scope TEXT NOT NULL,
            holder TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (scope, holder)
        )
        """,
    ),
    (
        5,
        # What each move decided, stored with it (sink.journal.outcome_records): the result of a
        # run is read from here, never from process memory. The transition log keeps the history;
        # operator decisions (abandon, capacity transfer) are an append-only audit of their own.
        """
        ALTER TABLE operations ADD COLUMN decided_error_code TEXT;
        ALTER TABLE operations ADD COLUMN decided_exit_class INTEGER CHECK (decided_exit_class IN (2, 3, 4, 5));
        ALTER TABLE operations ADD COLUMN decided_reason TEXT;
        ALTER TABLE operations ADD COLUMN accepted_rows INTEGER CHECK (accepted_rows >= 0);
        ALTER TABLE operations ADD COLUMN rejected_rows INTEGER CHECK (rejected_rows >= 0);
        ALTER TABLE operations ADD COLUMN rejection_proven INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE operations ADD COLUMN receiver_reported_partial INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE operations ADD COLUMN next_check_at TEXT;
        ALTER TABLE operations ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE transition_log ADD COLUMN error_code TEXT;
        ALTER TABLE transition_log ADD COLUMN exit_class INTEGER;
        ALTER TABLE transition_log ADD COLUMN reason TEXT;
        CREATE TABLE operator_decisions (
            operation_id TEXT NOT NULL REFERENCES operations (operation_id),
            reconciliation_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            actor_id TEXT NOT NULL,
            evidence_digest TEXT NOT NULL,
            released_attempts TEXT NOT NULL,
            decided_at TEXT NOT NULL,
            PRIMARY KEY (operation_id, reconciliation_id)
        )
        """,
    ),
)

LATEST_VERSION = MIGRATIONS[-1][0]


def _current_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: sqlite3.Connection, applied_at: str) -> int:
    """Apply every missing migration; return the resulting version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _current_version(conn)
        if current > LATEST_VERSION:
            raise JournalConfigurationError(
                f"journal schema version {current} is newer than this code ({LATEST_VERSION}); refusing to open"
            )
        for version, script in MIGRATIONS:
            if version <= current:
                continue
            for statement in (s.strip() for s in script.split(";")):
                if statement:
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, applied_at))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return max(current, LATEST_VERSION)
