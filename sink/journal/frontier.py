"""Contiguous checkpoint frontier (seed: "Frozen source boundary and adaptive planning").

Successful later children never advance the checkpoint past a gap: if 01-07 succeeds, 08-14 fails
and 15-21 succeeds, the promotable frontier stays at 07. Pure functions, shared by every adapter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sink.contracts.state import CheckpointState
from sink.design.query import DesignContract, TransitionKind
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import AdmittedParent, AxesState, FrontierResult, OperationRow


def contiguous_frontier(eligible_by_order: Iterable[tuple[int, bool]], current: int | None = None) -> int | None:
    """Highest frontier order k such that every order 0..k is eligible (or already promoted).

    ``eligible_by_order`` pairs each child's frontier order (a permutation of 0..n-1) with whether
    it is ELIGIBLE or PROMOTED. ``current`` is the stored frontier: the result never goes below
    it, because the frontier is a monotonic field. Returns None when nothing is promotable yet.
    """
    eligible = dict(eligible_by_order)
    if sorted(eligible) != list(range(len(eligible))):
        raise ValueError("frontier orders must be exactly 0..n-1")
    frontier: int | None = None
    for order in range(len(eligible)):
        if not eligible[order]:
            break
        frontier = order
    if current is None:
        return frontier
    if current >= len(eligible):
        raise ValueError("stored frontier is beyond the topology")
    return current if frontier is None else max(current, frontier)


def plan_promotion(
    contract: DesignContract, admitted: AdmittedParent
) -> tuple[FrontierResult, list[tuple[OperationRow, AxesState, str]]]:
    """Which children to move ELIGIBLE -> PROMOTED (by their contract transition) and the new frontier.

    Only children at or below the contiguous frontier are promoted; an eligible child after a gap
    stays ELIGIBLE. Raises TransitionRejected when the contract lists no promotion for a child.
    """
    by_order = sorted(admitted.children, key=lambda c: c.descriptor.frontier_order)
    done = (CheckpointState.ELIGIBLE, CheckpointState.PROMOTED)
    current = admitted.parent.frontier_order
    frontier = contiguous_frontier(
        ((c.descriptor.frontier_order, c.axes.checkpoint_state in done) for c in by_order), current
    )
    promotions: list[tuple[OperationRow, AxesState, str]] = []
    promoted_ids: list[str] = []
    for child in by_order:
        if frontier is None or child.descriptor.frontier_order > frontier:
            break
        if child.axes.checkpoint_state is not CheckpointState.ELIGIBLE:
            continue
        target = replace(child.axes, checkpoint_state=CheckpointState.PROMOTED)
        transition = contract.find_transition(child.axes, target)
        if transition is None or transition.kind is not TransitionKind.AUTOMATIC:
            raise TransitionRejected(
                RejectionReason.ILLEGAL_TRANSITION, f"no automatic promotion listed for {child.operation_id}"
            )
        promotions.append((child, target, transition.id))
        promoted_ids.append(child.operation_id)
    scope_end = None if frontier is None else by_order[frontier].descriptor.scope.end
    result = FrontierResult(admitted.parent.parent_id, frontier, scope_end, tuple(promoted_ids))
    return result, promotions
