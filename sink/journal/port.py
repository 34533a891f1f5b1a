"""DeliveryJournalPort: the one interface every journal adapter implements.

Seed sections: "Production journal and leases", "Zero-RPO mutation admission and disaster
recovery", "Lease separation", "Retention and compact effect authority", "Replacement generation
and overlap fence", "Frozen source boundary and adaptive planning", "Outcome model".

Rules shared by every adapter (the contract suite in tests/journal/ checks them):

* Every method that writes does so in ONE transaction: all or nothing.
* Catalogued refusals raise ``sink.contracts.errors.DeliveryError`` with the catalog code
  (INTENT_CONFLICT, STALE_GENERATION, OVERLAPPING_EFFECT_IN_FLIGHT, APPEND_SCOPE_ALREADY_APPLIED,
  JOURNAL_EPOCH_BLOCKED). Other refusals raise a subclass of ``JournalRejection`` carrying a
  ``RejectionReason``. In both cases nothing was written.
* Times (lease expiry, attempt creation) come from the DATABASE clock, exposed as ``now()``:
  PostgreSQL ``now()``; SQLite the injected clock read inside the transaction.
* There is no method that moves an operation into SUBMITTING except
  ``reserve_and_mark_submitting``, and that one only starts from SEALED or RETRY_WAIT with
  ``remote_effect == NONE_PROVEN``. Lease expiry therefore never authorises a second mutation.

Evolution: signatures change only additively (new optional keyword arguments, new methods).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol, runtime_checkable

from sink.contracts.state import AcknowledgementState
from sink.journal.records import (
    Actor,
    AdmittedParent,
    Attempt,
    CapacityStatus,
    Decision,
    EffectTombstone,
    FrontierResult,
    GateStatus,
    GenerationInterval,
    Lease,
    LeaseKind,
    LeaseRequest,
    MarkerRetirement,
    Observation,
    OperationRow,
    OperatorDecisionRecord,
    OperatorDecisionRequest,
    OrphanMarker,
    ParentAdmission,
    ParentRecord,
    Receipt,
    RetentionReport,
    RetiredMarker,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
    UnconfirmedCriticalCommit,
)

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


@runtime_checkable
class CriticalCommitGuard(Protocol):
    """Zero-RPO hook around every critical transaction (seed: "Zero-RPO mutation admission").

    The PostgreSQL adapter implements it (quorum check in pg_stat_replication before commit,
    bounded wait, "canceling wait for synchronous replication" warning treated as not
    replicated). SQLite has none: ``DeliveryJournalPort.critical_commit_guard`` is None there and
    opening SQLite with zero-RPO required raises JournalConfigurationError.
    """

    def before_critical_commit(self, transaction_name: str) -> None:
        """Raise ZeroRpoNotProven when the quorum (or its proof) is unavailable."""

    def after_critical_commit(self, transaction_name: str) -> None:
        """Raise ZeroRpoNotProven when the commit is not proven replicated."""


@runtime_checkable
class DeliveryJournalPort(Protocol):
    """The delivery journal: admission, CAS transitions, critical submit, leases, effect index."""

    # ----- identity, clock, durability ---------------------------------------------------------
    @property
    def adapter_name(self) -> str:
        """'sqlite' or 'postgresql'."""

    @property
    def critical_commit_guard(self) -> CriticalCommitGuard | None:
        """The zero-RPO guard in force, or None when the adapter cannot provide zero RPO."""

    def now(self) -> datetime:
        """Current DATABASE time (timezone-aware UTC): the clock every lease decision uses."""

    def schema_version(self) -> int:
        """Highest applied forward-only migration."""

    def close(self) -> None:
        """Release connections. Idempotent."""

    # ----- admission ---------------------------------------------------------------------------
    def admit_parent(self, admission: ParentAdmission) -> AdmittedParent:
        """Admit parent + complete child topology in one transaction.

        Same (namespace, parent key) with the same parent_plan_digest and the same child intents
        resumes: returns the stored topology with ``created=False`` and writes nothing. Any
        different intent for an existing parent key, or a child delivery key already admitted,
        raises ``DeliveryError(INTENT_CONFLICT)``; a child overlapping a higher admitted or applied
        generation of its conflict domain raises ``DeliveryError(STALE_GENERATION)``. A refusal
        writes nothing for the whole parent.
        """

    def load_parent(self, parent_id: str) -> AdmittedParent:
        """The pinned topology (``created=False``). JournalRejection(UNKNOWN_PARENT) if absent."""

    def get_parent(self, parent_id: str) -> ParentRecord | None: ...

    def get_operation(self, operation_id: str) -> OperationRow | None: ...

    def find_operation(self, operation_namespace: str, delivery_key: str) -> OperationRow | None: ...

    # ----- transitions -------------------------------------------------------------------------
    def transition(self, request: TransitionRequest) -> OperationRow:
        """CAS one design-contract transition (not into SUBMITTING).

        Checks: revision == expected_revision (else STALE_REVISION), transition listed from the
        current tuple (else ILLEGAL_TRANSITION), operator-only transitions need an operator actor
        with a reconciliation id (else OPERATOR_REQUIRED); a reconciliation id is never reused on one
        operation; checkpoint PROMOTED is reached only through ``promote_frontier`` (else
        PROMOTION_ONLY_VIA_FRONTIER). On success revision += 1; a receipt is stored in the same
        transaction; RETRY_WAIT and FINALIZED tuples whose effect is not UNKNOWN release the
        attempt's capacity; a move to FULLY_APPLIED raises the effect interval map. The request's
        ``decision`` replaces the stored one, its ``facts`` (when given) replace the stored result
        facts, and ``next_check_after`` sets ``next_check_at`` from the database clock (or clears
        it): all in the same transaction as the axes, so what a run reports is what the journal holds.
        An abandoned operation refuses automatic transitions (OPERATION_ABANDONED).
        """

    def reserve_and_mark_submitting(self, request: SubmitRequest) -> SubmitGrant:
        """The critical submit transaction, all or nothing, under the effect-domain lock.

        Order of checks: gate/epoch (JOURNAL_EPOCH_BLOCKED), revision, source state, mutation
        lease held by ``lease_owner``, attempt ordinal is next, marker exists in the marker store
        and binds this attempt, STALE_GENERATION, APPEND_SCOPE_ALREADY_APPLIED,
        OVERLAPPING_EFFECT_IN_FLIGHT (an abandoned overlapping operation no longer counts), capacity;
        an abandoned operation is refused (OPERATION_ABANDONED). Then: reserve a slot, append the attempt row with
        the marker digest, CAS to SUBMITTING, commit (through the critical commit guard).
        """

    def list_attempts(self, operation_id: str) -> tuple[Attempt, ...]: ...

    # ----- operator decisions ------------------------------------------------------------------
    def record_operator_decision(self, request: OperatorDecisionRequest) -> OperationRow:
        """Record an audited operator decision in one transaction (``decision_policy`` says which
        states permit which kind): ABANDON marks the child abandoned and releases its capacity;
        TRANSFER_CAPACITY releases its held reservations to the incident reserve. Axes and revision
        are unchanged (an operator decision is not a contract transition); the decision is appended
        to ``list_operator_decisions``. Refusals: STALE_REVISION, OPERATOR_REQUIRED,
        DECISION_NOT_PERMITTED, a reused reconciliation id (INVALID_REQUEST)."""

    def list_operator_decisions(self, operation_id: str) -> tuple[OperatorDecisionRecord, ...]: ...

    # ----- observation -------------------------------------------------------------------------
    def record_observation(
        self,
        operation_id: str,
        *,
        observation_ordinal: int,
        acknowledgement_state: AcknowledgementState,
        evidence_digest: str,
        lease_owner: str,
        next_check_after: timedelta | None = None,
    ) -> Observation:
        """Append one read-only observation; ordinal must be exactly the next one; needs the
        observation lease. Works while the mutation gate is BLOCKED. In the same transaction the
        operation's ``next_check_at`` becomes now + ``next_check_after`` (or is cleared) and its
        stored decision is cleared: an answer ends any pause."""

    def record_pause(
        self,
        operation_id: str,
        *,
        lease_kind: LeaseKind,
        lease_owner: str,
        decision: Decision,
        next_check_after: timedelta | None = None,
    ) -> OperationRow:
        """Store why automatic work on the operation pauses now (a poll pass answered only by
        errors, a rate limit that did not admit the request in time) and when it is next due, under
        the caller's ``lease_kind`` lease. Axes and revision are unchanged: a pause is not a state
        transition, only what the next result reports until the next move or observation."""

    def list_observations(self, operation_id: str) -> tuple[Observation, ...]: ...

    def get_receipt(self, operation_id: str) -> Receipt | None: ...

    # ----- leases (database clock) -------------------------------------------------------------
    def acquire_lease(self, request: LeaseRequest) -> Lease:
        """Take or renew a lease. Same owner renews (token unchanged); a different owner gets it
        only after expiry on the database clock (token + 1); otherwise LeaseUnavailable."""

    def release_lease(self, kind: LeaseKind, subject_id: str, owner: str) -> None:
        """Drop the lease if ``owner`` holds it; otherwise JournalRejection(LEASE_NOT_HELD)."""

    def get_lease(self, kind: LeaseKind, subject_id: str) -> Lease | None: ...

    # ----- checkpoint frontier -----------------------------------------------------------------
    def promote_frontier(self, parent_id: str, *, lease_owner: str) -> FrontierResult:
        """Under the checkpoint lease (subject = parent id) promote only the highest contiguous
        eligible prefix of children in frontier order; the frontier never moves backwards."""

    # ----- effect index and retention ----------------------------------------------------------
    def get_tombstone(self, operation_id: str) -> EffectTombstone | None: ...

    def effect_intervals(self, effect_conflict_domain: str) -> tuple[GenerationInterval, ...]:
        """The normalised, non-overlapping, sorted interval map of one conflict domain."""

    def apply_retention(self, *, observations_older_than: datetime) -> RetentionReport:
        """Delete verbose observations of FINALIZED operations older than the cut-off. Never deletes
        tombstones, the interval map, attempts or receipts."""

    # ----- capacity ----------------------------------------------------------------------------
    def configure_capacity(self, scope: str, slots: int) -> CapacityStatus:
        """Create or resize a remote-job capacity scope (slots >= 0)."""

    def capacity_status(self, scope: str) -> CapacityStatus: ...

    # ----- journal epoch and mutation gate -----------------------------------------------------
    def gate_status(self) -> GateStatus: ...

    def block_mutations(self, *, reason: str, actor: Actor) -> GateStatus:
        """Close the environment-wide mutation gate (restore/failover without attested zero RPO)."""

    def attest_epoch(self, *, new_epoch: int, actor: Actor, attestation_digest: str) -> GateStatus:
        """Open the gate under a strictly greater journal epoch, by an operator, with evidence."""

    # ----- reconciliation ----------------------------------------------------------------------
    def find_orphan_markers(self, operation_namespace: str | None = None) -> tuple[OrphanMarker, ...]:
        """MAY_ATTEMPT markers without an exactly matching attempt row (id, ordinal, expected
        revision, epoch, digest): possible remote effect, never permission to resend."""

    def retire_orphan_marker(self, request: MarkerRetirement) -> OperationRow:
        """Operator-only: retire the orphan marker of the operation's next attempt ordinal (no
        journal attempt, digest as published), recording who, which reconciliation id and which
        evidence. One transaction: the ordinal is consumed (``attempt_count`` + 1, revision and
        axes unchanged), so the next submit uses the following ordinal; the marker leaves the
        orphan report and is listed by ``list_retired_markers``. Allowed while the gate is BLOCKED."""

    def list_retired_markers(self, operation_namespace: str | None = None) -> tuple[RetiredMarker, ...]:
        """Every retired marker (append-only), by operation and ordinal."""

    def list_unconfirmed_critical_commits(self) -> tuple[UnconfirmedCriticalCommit, ...]:
        """Read-only, for reconciliation: every critical commit recorded as committed locally while
        its synchronous replication was unconfirmed, oldest first. Each one closed the mutation
        gate; an attested epoch does not remove them (the record is the reconciliation trail).
        Empty on an adapter without zero RPO (SQLite)."""

    def operations_in_domain(self, effect_conflict_domain: str) -> Sequence[OperationRow]: ...
