"""Which CAS transitions the journal accepts: only those listed in the design contract.

Pure policy shared by both adapters. The adapter supplies the stored axes and the request; this
module answers with the contract transition to apply or raises TransitionRejected saying why.
"""

from __future__ import annotations

from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect
from sink.design.query import DesignContract, Transition, TransitionKind
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import Actor, ActorKind, AxesState, LeaseKind

SUBMIT_SOURCES = frozenset({ExecutionState.SEALED, ExecutionState.RETRY_WAIT})
"""The only execution states the critical submit path may start from (never SUBMITTING)."""


def check_revision(operation_id: str, stored: int, expected: int) -> None:
    if stored != expected:
        raise TransitionRejected(
            RejectionReason.STALE_REVISION,
            f"operation {operation_id} is at revision {stored}, request expected {expected}",
        )


def _check_actor(transition: Transition, actor: Actor) -> None:
    if transition.kind is TransitionKind.OPERATOR_ONLY and (
        actor.kind is not ActorKind.OPERATOR or actor.reconciliation_id is None
    ):
        raise TransitionRejected(
            RejectionReason.OPERATOR_REQUIRED,
            f"transition {transition.id} is operator-only: needs an operator actor and a reconciliation id",
        )


def resolve_transition(
    contract: DesignContract, current: AxesState, transition_id: str, actor: Actor
) -> Transition:
    """A contract transition other than a submit or a checkpoint promotion."""
    transition = contract.transition_by_id(transition_id, current)
    if transition is None:
        raise TransitionRejected(
            RejectionReason.ILLEGAL_TRANSITION,
            f"transition {transition_id!r} is not listed from {current.execution_state}/{current.remote_effect}",
        )
    if transition.target.execution_state is ExecutionState.SUBMITTING:
        raise TransitionRejected(
            RejectionReason.SUBMIT_ONLY_VIA_CRITICAL_PATH,
            "SUBMITTING is entered only through reserve_and_mark_submitting",
        )
    if (
        transition.target.checkpoint_state is CheckpointState.PROMOTED
        and current.checkpoint_state is not CheckpointState.PROMOTED
    ):
        # A lone promotion could jump a gap; only the contiguous-frontier transaction promotes.
        raise TransitionRejected(
            RejectionReason.PROMOTION_ONLY_VIA_FRONTIER,
            "checkpoint promotion happens only through promote_frontier under the checkpoint lease",
        )
    _check_actor(transition, actor)
    return transition


LEASE_PRECONDITIONS: dict[str, LeaseKind] = {
    "mutation_lease_held": LeaseKind.MUTATION,
    "observation_lease_held": LeaseKind.OBSERVATION,
    "checkpoint_lease_held": LeaseKind.CHECKPOINT,
}
"""Contract CAS preconditions the journal enforces with a lease row of that kind."""

OPERATOR_GUARDED_PRECONDITIONS = frozenset({"reconciliation_lease_held"})
"""Lease preconditions of operator-only transitions. The journal keeps no reconciliation lease:
those transitions are guarded by the operator actor and a never-reused reconciliation id
(``_check_actor``), and the reconciliation lease stays with the operator tooling."""


def required_leases(transition: Transition) -> tuple[LeaseKind, ...]:
    """The lease kinds a transition's ``cas_preconditions`` require, in contract order.

    Fails closed: a ``*_lease_held`` precondition the journal does not know is refused rather
    than silently ignored, so a contract that adds a lease cannot loosen the journal."""
    kinds: list[LeaseKind] = []
    for precondition in transition.cas_preconditions:
        if precondition in LEASE_PRECONDITIONS:
            kinds.append(LEASE_PRECONDITIONS[precondition])
        elif precondition.endswith("_lease_held") and not (
            precondition in OPERATOR_GUARDED_PRECONDITIONS and transition.kind is TransitionKind.OPERATOR_ONLY
        ):
            raise TransitionRejected(
                RejectionReason.LEASE_NOT_HELD,
                f"transition {transition.id} requires {precondition}, which the journal cannot check",
            )
    return tuple(kinds)


def require_lease_owner(transition: Transition, kind: LeaseKind, lease_owner: str | None) -> str:
    """The caller's claimed owner of a required lease; refused before any lease row is read."""
    if lease_owner is None:
        raise TransitionRejected(
            RejectionReason.LEASE_NOT_HELD,
            f"transition {transition.id} requires the {kind.value} lease: pass lease_owner",
        )
    return lease_owner


def lease_subject(kind: LeaseKind, operation_id: str, parent_id: str) -> str:
    """Checkpoint leases are held on the parent; mutation and observation leases on the operation."""
    return parent_id if kind is LeaseKind.CHECKPOINT else operation_id


def resolve_submit(contract: DesignContract, current: AxesState, transition_id: str | None) -> Transition:
    """The contract transition into SUBMITTING from SEALED/RETRY_WAIT with no proven effect."""
    if current.execution_state not in SUBMIT_SOURCES or current.remote_effect is not RemoteEffect.NONE_PROVEN:
        raise TransitionRejected(
            RejectionReason.SUBMIT_NOT_PERMITTED_FROM_STATE,
            f"no submit from {current.execution_state}/{current.remote_effect}: observe or reconcile instead",
        )
    source = current
    candidates = [
        t
        for t in contract.transitions_from(source)
        if t.target.execution_state is ExecutionState.SUBMITTING and t.kind is TransitionKind.AUTOMATIC
    ]
    if transition_id is not None:
        candidates = [t for t in candidates if t.id == transition_id]
    if len(candidates) != 1:
        raise TransitionRejected(
            RejectionReason.ILLEGAL_TRANSITION,
            f"expected exactly one automatic submit transition from {current.execution_state}, "
            f"found {len(candidates)}",
        )
    return candidates[0]


def releases_capacity(target: AxesState) -> bool:
    """Capacity is released only by the durable RETRY_WAIT or FINALIZED transaction (FINALIZED: no
    automatic transition remains for the remote work, even if checkpoint promotion is pending).
    Work whose effect is UNKNOWN keeps its slot: it may still be running at the receiver."""
    if target.execution_state is ExecutionState.RETRY_WAIT:
        return True
    return target.execution_state is ExecutionState.FINALIZED and target.remote_effect is not RemoteEffect.UNKNOWN


def raises_effect_index(source: AxesState, target: AxesState) -> bool:
    return (
        target.remote_effect is RemoteEffect.FULLY_APPLIED
        and source.remote_effect is not RemoteEffect.FULLY_APPLIED
    )
