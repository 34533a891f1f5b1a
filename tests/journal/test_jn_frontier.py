"""Contiguous checkpoint frontier: never past a gap, never backwards (pure function and through the port)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from conftest import JournalEnv
from hypothesis import given
from hypothesis import strategies as st
from jn_builders import CAPACITY, apply_fully, day, fail_no_effect, week_parent

from sink.contracts.state import CheckpointState
from sink.journal.frontier import contiguous_frontier
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import LeaseKind, LeaseRequest, TransitionRequest

pytestmark = pytest.mark.timeout(120)


def _naive_frontier(done: set[int]) -> int | None:
    frontier = None
    for order in itertools.count():
        if order not in done:
            return frontier
        frontier = order
    raise AssertionError("unreachable")


def test_gap_holds_the_frontier() -> None:
    # 01-07 ok, 08-14 failed, 15-21 ok -> the frontier stays at 07 (order 0).
    assert contiguous_frontier([(0, True), (1, False), (2, True)]) == 0
    assert contiguous_frontier([(0, False), (1, True)]) is None
    assert contiguous_frontier([(0, False), (1, True)], current=None) is None
    with pytest.raises(ValueError):
        contiguous_frontier([(0, True), (2, True)])


@given(st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.tuples(st.permutations(range(n)), st.sets(st.integers(0, n - 1)))))
def test_every_completion_order_promotes_exactly_the_contiguous_prefix(case: tuple[list[int], set[int]]) -> None:
    order, failing = case
    n = len(order)
    done: set[int] = set()
    current: int | None = None
    for finished in order:
        if finished not in failing:
            done.add(finished)
        new = contiguous_frontier(((i, i in done) for i in range(n)), current)
        assert new == _naive_frontier(done)
        assert current is None or (new is not None and new >= current)  # monotonic
        current = new
    expected_final = _naive_frontier(set(range(n)) - failing)
    assert current == expected_final


def test_port_promotes_only_up_to_the_gap(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    admitted = env.journal.admit_parent(week_parent("route-1"))
    a, b, c = admitted.children
    apply_fully(env.journal, env.markers, a)
    fail_no_effect(env.journal, env.markers, b)
    apply_fully(env.journal, env.markers, c)
    parent_id = admitted.parent.parent_id

    with pytest.raises(JournalRejection) as caught:  # the checkpoint lease is required
        env.journal.promote_frontier(parent_id, lease_owner="ck")
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD

    env.journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, parent_id, "ck", timedelta(seconds=60)))
    result = env.journal.promote_frontier(parent_id, lease_owner="ck")
    assert (result.frontier_order, result.frontier_scope_end) == (0, day(8))
    assert result.promoted_operation_ids == (a.operation_id,)
    states = [env.journal.get_operation(o.operation_id).axes.checkpoint_state for o in (a, b, c)]  # type: ignore[union-attr]
    assert states == [CheckpointState.PROMOTED, CheckpointState.BLOCKED, CheckpointState.ELIGIBLE]
    stored = env.journal.get_parent(parent_id)
    assert stored is not None and stored.frontier_order == 0
    assert env.journal.promote_frontier(parent_id, lease_owner="ck").promoted_operation_ids == ()


def test_promotion_past_a_gap_cannot_be_forced_by_a_plain_transition(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    first, second = env.journal.admit_parent(week_parent("route-1", weeks=2)).children
    fail_no_effect(env.journal, env.markers, first)
    eligible = apply_fully(env.journal, env.markers, second)
    with pytest.raises(TransitionRejected) as caught:
        env.journal.transition(TransitionRequest(eligible.operation_id, eligible.revision, "checkpoint_promoted"))
    assert caught.value.reason is RejectionReason.PROMOTION_ONLY_VIA_FRONTIER
    assert env.journal.get_operation(eligible.operation_id) == eligible


COMPLETION_ORDERS = list(itertools.permutations(range(3)))


def test_port_frontier_over_every_completion_order(journal_env: JournalEnv) -> None:
    """All 3! completion orders x {no failure, middle child fails}, each a fresh parent and domain."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    for case, (order, failing) in enumerate(itertools.product(COMPLETION_ORDERS, (None, 1))):
        admitted = env.journal.admit_parent(week_parent(f"perm-{case}", domain=f"domain-{case}"))
        parent_id = admitted.parent.parent_id
        env.journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, parent_id, "ck", timedelta(hours=1)))
        done: set[int] = set()
        seen: list[int | None] = []
        for index in order:
            child = admitted.children[index]
            if index == failing:
                fail_no_effect(env.journal, env.markers, child)
            else:
                apply_fully(env.journal, env.markers, child)
                done.add(index)
            result = env.journal.promote_frontier(parent_id, lease_owner="ck")
            assert result.frontier_order == _naive_frontier(done), (order, failing)
            seen.append(result.frontier_order)
        numeric = [s for s in seen if s is not None]
        assert numeric == sorted(numeric), (order, failing)  # never backwards
        promoted = {
            o.descriptor.frontier_order for o in env.journal.load_parent(parent_id).children
            if o.axes.checkpoint_state is CheckpointState.PROMOTED
        }
        expected_frontier = _naive_frontier(done)
        assert promoted == set(range(expected_frontier + 1 if expected_frontier is not None else 0))
