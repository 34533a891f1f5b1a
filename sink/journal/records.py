"""Immutable rows of the delivery journal (seed: "Production journal and leases").

Every record is a frozen dataclass validated at construction so that both adapters (SQLite,
PostgreSQL) store and return exactly the same shapes. Nothing here carries payload bytes,
credentials or raw response bodies: only references, digests and bounded identifiers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    StateTuple,
    VerificationState,
)
from sink.journal.ids import (
    attempt_id_for,
    operation_id_for,
    require_digest,
    require_ident,
    require_utc_instant,
)


class MutationKind(StrEnum):
    """Receiver mutation semantics relevant to the generation fence."""

    PARTITION_REPLACE = "partition_replace"
    INCREMENTAL_APPEND = "incremental_append"


class LeaseKind(StrEnum):
    """The three independent leases (seed: "Lease separation")."""

    MUTATION = "mutation"
    OBSERVATION = "observation"
    CHECKPOINT = "checkpoint"


class ActorKind(StrEnum):
    AUTOMATIC = "automatic"
    OPERATOR = "operator"


class GateState(StrEnum):
    OPEN = "OPEN"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True, slots=True, order=True)
class GenerationKey:
    """Explicit ordered generation (scheduled_interval_end_utc, correction_revision)."""

    scheduled_interval_end_utc: str
    correction_revision: int = 0

    def __post_init__(self) -> None:
        require_utc_instant(self.scheduled_interval_end_utc, "scheduled_interval_end_utc")
        if self.correction_revision < 0:
            raise ValueError("correction_revision must be >= 0")


@dataclass(frozen=True, slots=True)
class ScopeRange:
    """Half-open canonical effect scope [start, end) in UTC instants."""

    start: str
    end: str

    def __post_init__(self) -> None:
        require_utc_instant(self.start, "scope.start")
        require_utc_instant(self.end, "scope.end")
        if not self.start < self.end:
            raise ValueError("scope must be non-empty: start < end")

    def overlaps(self, other: ScopeRange) -> bool:
        return self.start < other.end and other.start < self.end


# The five independent outcome axes of one operation (seed: "Outcome model") are exactly the
# design contract's state tuple, so the journal stores and checks one type, with no conversion.
AxesState = StateTuple


INITIAL_AXES = AxesState(
    ExecutionState.PLANNED,
    RemoteEffect.NONE_PROVEN,
    AcknowledgementState.NOT_ACCEPTED,
    VerificationState.NOT_RUN,
    CheckpointState.BLOCKED,
)


@dataclass(frozen=True, slots=True)
class ChildDescriptor:
    """One admitted child of the immutable parent topology."""

    ordinal: int
    scope: ScopeRange
    delivery_key: str
    mutation_intent_digest: str
    payload_ref: str
    payload_digest: str
    generation: GenerationKey
    frontier_order: int
    coverage_proof_digest: str
    effect_conflict_domain: str
    mutation_kind: MutationKind

    def __post_init__(self) -> None:
        if self.ordinal < 0 or self.frontier_order < 0:
            raise ValueError("ordinal and frontier_order must be >= 0")
        require_ident(self.delivery_key, "delivery_key")
        require_ident(self.payload_ref, "payload_ref")
        require_ident(self.effect_conflict_domain, "effect_conflict_domain")
        require_digest(self.mutation_intent_digest, "mutation_intent_digest")
        require_digest(self.payload_digest, "payload_digest")
        require_digest(self.coverage_proof_digest, "coverage_proof_digest")
        if self.mutation_kind is MutationKind.INCREMENTAL_APPEND and self.generation.correction_revision:
            # Seed: "incremental_append rejects correction generations".
            raise ValueError("incremental_append does not accept a correction_revision")


@dataclass(frozen=True, slots=True)
class ParentAdmission:
    """Everything admitted in the single parent transaction."""

    operation_namespace: str
    parent_delivery_key: str
    parent_plan_digest: str
    plan_ref: str
    profile_contract_digest: str
    children: tuple[ChildDescriptor, ...]

    def __post_init__(self) -> None:
        require_ident(self.operation_namespace, "operation_namespace")
        require_ident(self.parent_delivery_key, "parent_delivery_key")
        require_ident(self.plan_ref, "plan_ref")
        require_digest(self.parent_plan_digest, "parent_plan_digest")
        require_digest(self.profile_contract_digest, "profile_contract_digest")
        if not self.children:
            raise ValueError("a parent admits at least one child")
        ordinals = [c.ordinal for c in self.children]
        if ordinals != list(range(len(self.children))):
            raise ValueError("child ordinals must be 0..n-1 in order")
        if sorted(c.frontier_order for c in self.children) != list(range(len(self.children))):
            raise ValueError("frontier orders must be a permutation of 0..n-1")
        if len({c.delivery_key for c in self.children}) != len(self.children):
            raise ValueError("child delivery keys must be distinct")
        for i, left in enumerate(self.children):
            for right in self.children[i + 1 :]:
                same_domain = left.effect_conflict_domain == right.effect_conflict_domain
                if same_domain and left.scope.overlaps(right.scope):
                    # The coverage proof promises gap-free, NON-overlapping children.
                    raise ValueError("children of one parent must not overlap in one conflict domain")

    @property
    def parent_id(self) -> str:
        return operation_id_for(self.operation_namespace, self.parent_delivery_key)


@dataclass(frozen=True, slots=True)
class OperationRow:
    """One child operation as stored: descriptor, five axes and its CAS revision."""

    operation_id: str
    parent_id: str
    operation_namespace: str
    descriptor: ChildDescriptor
    axes: AxesState
    revision: int
    attempt_count: int
    observation_count: int
    last_reconciliation_id: str | None = None

    @property
    def delivery_key(self) -> str:
        return self.descriptor.delivery_key


@dataclass(frozen=True, slots=True)
class ParentRecord:
    parent_id: str
    operation_namespace: str
    parent_delivery_key: str
    parent_plan_digest: str
    plan_ref: str
    profile_contract_digest: str
    child_count: int
    frontier_order: int | None
    """Highest promoted contiguous frontier order; None before the first promotion."""
    frontier_scope_end: str | None


@dataclass(frozen=True, slots=True)
class AdmittedParent:
    parent: ParentRecord
    children: tuple[OperationRow, ...]
    created: bool
    """True when this call wrote the admission; False when it resumed an existing one."""


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for a transition. Operator-only transitions need an operator and a reconciliation id."""

    kind: ActorKind
    actor_id: str
    reconciliation_id: str | None = None

    def __post_init__(self) -> None:
        require_ident(self.actor_id, "actor_id")
        if self.reconciliation_id is not None:
            require_ident(self.reconciliation_id, "reconciliation_id")


AUTOMATIC_ACTOR = Actor(ActorKind.AUTOMATIC, "supervisor")


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
