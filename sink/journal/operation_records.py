"""Journal rows of parents and operations: kinds, generation keys, scopes, child descriptors,
admissions, operation rows and actors (re-exported by ``sink.journal.records``)."""


from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
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
    operation_id_for,
    require_digest,
    require_ident,
    require_utc_instant,
)
from sink.journal.outcome_records import NO_DECISION, NO_FACTS, Decision, ResultFacts


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
    decision: Decision = NO_DECISION
    """What the move into the current tuple decided (``sink.journal.outcome_records``)."""
    facts: ResultFacts = NO_FACTS
    """The receiver's bounded counters and flags recorded for verification."""
    next_check_at: datetime | None = None
    """When the next automatic step is due (database clock), if a move set one."""
    abandoned: bool = False
    """An operator abandoned this child: nothing automatic acts on it again."""

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
