"""The journal's errors and refusal reasons (re-exported by ``sink.journal.port``, where callers import them).

A refusal raises a ``JournalRejection`` carrying a ``RejectionReason`` and writes nothing; a journal
that cannot be reached raises ``JournalUnavailable`` with what is known of the outcome.
"""

from __future__ import annotations

from enum import StrEnum

SCHEMA_VERSION_TABLE = "schema_version"


class RejectionReason(StrEnum):
    """Why a write was refused without a catalog code. Stable strings: they appear in evidence."""

    UNKNOWN_OPERATION = "unknown_operation"
    UNKNOWN_PARENT = "unknown_parent"
    STALE_REVISION = "stale_revision"
    ILLEGAL_TRANSITION = "illegal_transition"
    OPERATOR_REQUIRED = "operator_required"
    SUBMIT_ONLY_VIA_CRITICAL_PATH = "submit_only_via_critical_path"
    SUBMIT_NOT_PERMITTED_FROM_STATE = "submit_not_permitted_from_state"
    ATTEMPT_ORDINAL_NOT_NEXT = "attempt_ordinal_not_next"
    OBSERVATION_ORDINAL_NOT_NEXT = "observation_ordinal_not_next"
    MARKER_MISSING = "marker_missing"
    MARKER_MISMATCH = "marker_mismatch"
    CAPACITY_EXHAUSTED = "capacity_exhausted"
    CAPACITY_NOT_CONFIGURED = "capacity_not_configured"
    LEASE_NOT_HELD = "lease_not_held"
    LEASE_HELD_BY_OTHER = "lease_held_by_other"
    EPOCH_NOT_INCREASING = "epoch_not_increasing"
    RECEIPT_CONFLICT = "receipt_conflict"
    FRONTIER_NOT_MONOTONIC = "frontier_not_monotonic"
    INVALID_REQUEST = "invalid_request"
    PROMOTION_ONLY_VIA_FRONTIER = "promotion_only_via_frontier"
    MARKER_NOT_ORPHAN = "marker_not_orphan"
    DECISION_NOT_PERMITTED = "decision_not_permitted"
    """The operator decision does not apply to the child's state (a running job, a completed child,
    nothing held to transfer)."""
    OPERATION_ABANDONED = "operation_abandoned"
    """An operator abandoned the child: no automatic submit, replay or poll acts on it again."""
    ORPHAN_MARKER = "orphan_marker_possible_remote_effect"
    """The next attempt's marker was already claimed by a critical submit that the journal does not
    hold (a rewound journal, or a commit that failed after the claim): possible remote effect, the
    submit is refused and the marker is reconciliation work (operator-only retirement)."""


class JournalError(Exception):
    """Base of every journal failure that is not a catalogued DeliveryError."""


class JournalRejection(JournalError):
    """A write refused before anything changed. Messages carry identifiers only, never payload."""

    def __init__(self, reason: RejectionReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class TransitionRejected(JournalRejection):
    """A CAS transition was stale or not listed in the design contract."""


class LeaseUnavailable(JournalRejection):
    """Another owner holds an unexpired lease (decided on the database clock)."""


class CapacityExhausted(JournalRejection):
    """No remote-job slot is free in the requested capacity scope."""


class JournalConfigurationError(JournalError):
    """The journal cannot be opened as configured (schema newer than code, zero-RPO on SQLite, ...)."""

    code = "journal.configuration"


class NotAJournal(JournalConfigurationError):
    """The database at the journal's location is not a restproof journal (another application's
    file, not a database, or nothing at all for a read-only command): refused before anything is
    written to it."""

    code = "journal.not_a_journal"


class JournalSchemaMismatch(JournalConfigurationError):
    """The journal's schema is newer than this code (never opened), or older than this code for a
    read-only command (which never migrates)."""

    code = "journal.schema_mismatch"


EXIT_UNAVAILABLE = 3
"""Exit class of every JournalUnavailable (the project's "3 unavailable")."""


class UnavailableOutcome(StrEnum):
    """What an unavailable journal means for the transaction the caller asked for."""

    NOT_SENT = "not_sent"
    """COMMIT was never sent (no connection, lost before COMMIT, or refused before writing):
    nothing of the transaction is in the journal."""
    OUTCOME_UNKNOWN = "outcome_unknown"
    """The transaction may have committed (the connection broke while COMMIT was in flight, or it
    committed locally without its replication being confirmed). For a critical transaction: do
    not send; reread the journal after reconnecting."""


class UnavailableCode(StrEnum):
    """Stable codes of JournalUnavailable (journal-local; not REST_DELIVERY_* catalog codes)."""

    NOT_SENT = "journal.unavailable.not_sent"
    OUTCOME_UNKNOWN = "journal.unavailable.outcome_unknown"
    DURABILITY_NOT_PROVEN = "journal.unavailable.durability_not_proven"
    ZERO_RPO_NOT_PROVEN = "journal.unavailable.zero_rpo_not_proven"
    REPLICATION_UNCONFIRMED = "journal.unavailable.replication_unconfirmed"


class JournalUnavailable(JournalError):
    """The journal authority cannot be reached or cannot prove durability: do not submit.

    ``code`` is stable, ``exit_code`` is always 3, ``outcome`` says whether the transaction is
    certainly absent (NOT_SENT) or may have committed (OUTCOME_UNKNOWN). Messages carry no DSN,
    password or payload."""

    exit_code = EXIT_UNAVAILABLE

    def __init__(self, message: str, *, outcome: UnavailableOutcome = UnavailableOutcome.NOT_SENT,
                 code: UnavailableCode | None = None) -> None:
        self.outcome = outcome
        self.code = code if code is not None else UnavailableCode(f"journal.unavailable.{outcome.value}")
        super().__init__(f"{self.code.value}: {message}")

    @property
    def may_have_committed(self) -> bool:
        return self.outcome is UnavailableOutcome.OUTCOME_UNKNOWN


class JournalDurabilityNotProven(JournalUnavailable):
    """The server's settings can lose an acknowledged commit (fsync off, synchronous_commit below
    on, SQLite synchronous below FULL): a critical transaction is refused before it writes."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=UnavailableCode.DURABILITY_NOT_PROVEN)


class ZeroRpoNotProven(JournalUnavailable):
    """The critical commit was not proven replicated to the synchronous quorum: do not submit.

    NOT_SENT (ZERO_RPO_NOT_PROVEN): the quorum was missing before COMMIT, nothing was written.
    OUTCOME_UNKNOWN (REPLICATION_UNCONFIRMED): committed on the primary, replication unconfirmed;
    the mutation gate was closed."""

    def __init__(self, message: str, *, committed_locally: bool = False) -> None:
        if committed_locally:
            super().__init__(message, outcome=UnavailableOutcome.OUTCOME_UNKNOWN,
                             code=UnavailableCode.REPLICATION_UNCONFIRMED)
        else:
            super().__init__(message, code=UnavailableCode.ZERO_RPO_NOT_PROVEN)
