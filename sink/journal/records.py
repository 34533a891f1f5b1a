"""Immutable rows of the delivery journal (seed: "Production journal and leases").

Every record is a frozen dataclass validated at construction so that both adapters (SQLite,
PostgreSQL) store and return exactly the same shapes. Nothing here carries payload bytes,
credentials or raw response bodies: only references, digests and bounded identifiers.

The rows live in ``operation_records`` (parents, operations, actors) and ``step_records`` (what
happens to an operation); this module is the one import point for both.
"""

from __future__ import annotations

from sink.journal.operation_records import (
    AUTOMATIC_ACTOR,
    INITIAL_AXES,
    Actor,
    ActorKind,
    AdmittedParent,
    AxesState,
    ChildDescriptor,
    GateState,
    GenerationKey,
    LeaseKind,
    MutationKind,
    OperationRow,
    ParentAdmission,
    ParentRecord,
    ScopeRange,
)
from sink.journal.step_records import (
    Attempt,
    CapacityStatus,
    EffectTombstone,
    FrontierResult,
    GateStatus,
    GenerationInterval,
    Lease,
    LeaseRequest,
    MarkerRetirement,
    Observation,
    OrphanMarker,
    Receipt,
    RetentionReport,
    RetiredMarker,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
    UnconfirmedCriticalCommit,
)

__all__ = [
    "AUTOMATIC_ACTOR",
    "INITIAL_AXES",
    "Actor",
    "ActorKind",
    "AdmittedParent",
    "Attempt",
    "AxesState",
    "CapacityStatus",
    "ChildDescriptor",
    "EffectTombstone",
    "FrontierResult",
    "GateState",
    "GateStatus",
    "GenerationInterval",
    "GenerationKey",
    "Lease",
    "LeaseKind",
    "LeaseRequest",
    "MarkerRetirement",
    "MutationKind",
    "Observation",
    "OperationRow",
    "OrphanMarker",
    "ParentAdmission",
    "ParentRecord",
    "Receipt",
    "RetentionReport",
    "RetiredMarker",
    "ScopeRange",
    "SubmitGrant",
    "SubmitRequest",
    "TransitionRequest",
    "UnconfirmedCriticalCommit",
]
