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
from typing import Protocol, runtime_checkable

from sink.contracts.state import AcknowledgementState
from sink.journal.errors import (
    EXIT_UNAVAILABLE,
    SCHEMA_VERSION_TABLE,
    CapacityExhausted,
    JournalConfigurationError,
    JournalDurabilityNotProven,
    JournalError,
    JournalRejection,
    JournalSchemaMismatch,
    JournalUnavailable,
    LeaseUnavailable,
    NotAJournal,
    RejectionReason,
    TransitionRejected,
    UnavailableCode,
    UnavailableOutcome,
    ZeroRpoNotProven,
)
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

# The errors are defined in sink.journal.errors and handed on here, where every caller imports them.
__all__ = [
    "EXIT_UNAVAILABLE",
    "SCHEMA_VERSION_TABLE",
    "CapacityExhausted",
    "CriticalCommitGuard",
    "DeliveryJournalPort",
    "JournalConfigurationError",
    "JournalDurabilityNotProven",
    "JournalError",
    "JournalRejection",
    "JournalSchemaMismatch",
    "JournalUnavailable",
    "LeaseUnavailable",
    "NotAJournal",
    "RejectionReason",
    "TransitionRejected",
    "UnavailableCode",
    "UnavailableOutcome",
    "ZeroRpoNotProven",
]


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
