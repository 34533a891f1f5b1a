"""Journal rows of the steps on an operation: receipts, attempts, observations, leases,
tombstones, capacity and gate status, submit and transition requests, marker retirement and
retention (re-exported by ``sink.journal.records``)."""


from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    RemoteEffect,
    VerificationState,
)
from sink.journal.ids import (
    attempt_id_for,
    require_digest,
    require_ident,
)
from sink.journal.operation_records import (
    AUTOMATIC_ACTOR,
    Actor,
    GateState,
    GenerationKey,
    LeaseKind,
    MutationKind,
    OperationRow,
    ScopeRange,
)
from sink.journal.outcome_records import MAX_NEXT_CHECK, NO_DECISION, Decision, OperatorDecisionKind, ResultFacts


@dataclass(frozen=True, slots=True)
class Receipt:
    """A receiver receipt identity (never the raw body)."""

    receipt_id: str
    receipt_digest: str

    def __post_init__(self) -> None:
        require_ident(self.receipt_id, "receipt_id")
        require_digest(self.receipt_digest, "receipt_digest")


@dataclass(frozen=True, slots=True)
class Attempt:
    operation_id: str
    attempt_ordinal: int
    attempt_id: str
    marker_digest: str
    expected_revision: int
    journal_epoch: int
    capacity_scope: str
    created_at: datetime
    capacity_released: bool


@dataclass(frozen=True, slots=True)
class Observation:
    operation_id: str
    observation_ordinal: int
    acknowledgement_state: AcknowledgementState
    evidence_digest: str
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class Lease:
    kind: LeaseKind
    subject_id: str
    owner: str
    expires_at: datetime
    fencing_token: int
    """Strictly increases every time a different owner takes the lease."""


@dataclass(frozen=True, slots=True)
class EffectTombstone:
    """Compact per-operation effect authority kept after verbose rows expire."""

    operation_id: str
    operation_namespace: str
    delivery_key: str
    mutation_intent_digest: str
    generation: GenerationKey
    effect_conflict_domain: str
    scope: ScopeRange
    mutation_kind: MutationKind
    payload_digest: str
    profile_contract_digest: str
    remote_effect: RemoteEffect
    verification_state: VerificationState
    checkpoint_state: CheckpointState
    receipt_id: str | None


@dataclass(frozen=True, slots=True)
class GenerationInterval:
    """One entry of the normalised interval map: highest applied generation over [start, end)."""

    effect_conflict_domain: str
    scope: ScopeRange
    highest_applied_generation: GenerationKey


@dataclass(frozen=True, slots=True)
class UnconfirmedCriticalCommit:
    """A critical commit that committed on the journal primary while its synchronous replication
    was not confirmed (zero-RPO mode). Reconciliation work: the caller was refused and executed
    nothing, but the committed row may be missing on a standby."""

    detection_seq: int
    transaction_name: str
    subject_id: str
    detected_at: datetime


@dataclass(frozen=True, slots=True)
class CapacityStatus:
    scope: str
    slots: int
    held_by_attempts: tuple[str, ...]
    held_by_operations: tuple[str, ...] = ()
    """The operations whose attempts hold the slots (sorted, each once)."""

    @property
    def free(self) -> int:
        return self.slots - len(self.held_by_attempts)


@dataclass(frozen=True, slots=True)
class GateStatus:
    state: GateState
    journal_epoch: int
    reason: str
    attested_by: str | None
    attestation_digest: str | None


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    """Inputs of the critical submit transaction (seed: pre-submit sequence step 3)."""

    operation_id: str
    expected_revision: int
    attempt_ordinal: int
    marker_digest: str
    lease_owner: str
    capacity_scope: str
    transition_id: str | None = None
    """Which contract transition into SUBMITTING; None picks the only one from the current tuple."""

    @property
    def attempt_id(self) -> str:
        return attempt_id_for(self.operation_id, self.attempt_ordinal)


@dataclass(frozen=True, slots=True)
class SubmitGrant:
    operation: OperationRow
    attempt: Attempt


@dataclass(frozen=True, slots=True)
class TransitionRequest:
    """A CAS move of the five axes along one design-contract transition."""

    operation_id: str
    expected_revision: int
    transition_id: str
    actor: Actor = AUTOMATIC_ACTOR
    evidence_digest: str | None = None
    receipt: Receipt | None = None
    # Owner of the lease the transition's cas_preconditions require (mutation, observation or
    # checkpoint); checked in the same transaction on the database clock. None: no lease claimed.
    lease_owner: str | None = None
    decision: Decision = NO_DECISION
    """What the move decided (code, exit class, reason): stored with it, replacing the previous one."""
    facts: ResultFacts | None = None
    """The receiver's bounded counters and flags for verification; None keeps the stored ones."""
    next_check_after: timedelta | None = None
    """When the next automatic step is due, from the database clock at commit (a retry's backoff,
    a continuation's next poll); None clears it."""

    def __post_init__(self) -> None:
        if self.next_check_after is not None and not timedelta(0) <= self.next_check_after <= MAX_NEXT_CHECK:
            raise ValueError("next_check_after must be between 0 and 30 days")


@dataclass(frozen=True, slots=True)
class FrontierResult:
    parent_id: str
    frontier_order: int | None
    frontier_scope_end: str | None
    promoted_operation_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OrphanMarker:
    """A MAY_ATTEMPT marker with no exactly matching journal attempt: possible remote effect."""

    operation_namespace: str
    operation_id: str
    attempt_ordinal: int
    attempt_id: str
    marker_digest: str
    reason: str


@dataclass(frozen=True, slots=True)
class MarkerRetirement:
    """An operator's decision that an orphan MAY_ATTEMPT marker caused no remote effect.

    ``actor`` must be an operator with a reconciliation id never used on the operation before;
    ``evidence_digest`` names the evidence the decision rests on (e.g. the receiver's job list)."""

    operation_id: str
    attempt_ordinal: int
    marker_digest: str
    evidence_digest: str
    actor: Actor


@dataclass(frozen=True, slots=True)
class OperatorDecisionRequest:
    """An operator's audited decision on one child (``OperatorDecisionKind``).

    ``actor`` must be an operator with a reconciliation id never used on the operation before;
    ``evidence_digest`` names what the decision rests on; ``expected_revision`` is the revision the
    operator inspected (a child that moved meanwhile is refused)."""

    operation_id: str
    kind: OperatorDecisionKind
    expected_revision: int
    actor: Actor
    evidence_digest: str

    def __post_init__(self) -> None:
        require_digest(self.evidence_digest, "evidence_digest")


@dataclass(frozen=True, slots=True)
class RetiredMarker:
    """An append-only record of a retired orphan marker; its ordinal is consumed for good."""

    operation_namespace: str
    operation_id: str
    attempt_ordinal: int
    attempt_id: str
    marker_digest: str
    reconciliation_id: str
    evidence_digest: str
    actor_id: str
    retired_at: datetime


@dataclass(frozen=True, slots=True)
class RetentionReport:
    observations_deleted: int
    tombstones_kept: int
    intervals_kept: int


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    kind: LeaseKind
    subject_id: str
    owner: str
    ttl: timedelta = field(default=timedelta(seconds=30))

    def __post_init__(self) -> None:
        require_ident(self.owner, "owner")
        if self.ttl <= timedelta(0):
            raise ValueError("lease ttl must be positive")
