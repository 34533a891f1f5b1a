"""One test per journal safety rule that fails when that rule alone is broken (issue 14).

Each test here was written against a mutant that survived the rest of the journal suite
(tools/mutation/run.py). Where the port can reach the rule, the test goes through the port on
both adapters. Where an adapter's SQL pre-filter or a second check in the same transaction masks
the rule, the test calls the public pure policy function the adapters share, with the rows the
port returned: the policy promises to decide correctly whatever superset of rows it is given
(sink/journal/submit_policy.py), and the next adapter change may drop the other defence.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import JournalEnv
from jn_builders import (
    CAPACITY,
    WORKER,
    admission,
    apply_fully,
    child,
    day,
    publish_marker,
    seal,
    step,
    submit,
    take_lease,
    week_parent,
)

from sink.bounded_yaml import load_bounded_yaml_file
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import AcknowledgementState, CheckpointState, ExecutionState, RemoteEffect
from sink.design.query import BUNDLED_CONTRACT, DesignContract, load_design_contract
from sink.journal.frontier import contiguous_frontier
from sink.journal.interval_map import bounding_scope, highest_overlapping
from sink.journal.markers import FileMarkerStore
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import (
    Actor,
    ActorKind,
    GenerationKey,
    LeaseKind,
    MutationKind,
    OperationRow,
    ScopeRange,
    SubmitRequest,
)
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal
from sink.journal.submit_policy import check_not_stale, check_submit_permitted
from sink.journal.transition_policy import require_lease_owner

pytestmark = pytest.mark.timeout(60)

GEN1 = GenerationKey("2026-09-01T00:00:00Z", 1)
GEN2 = GenerationKey("2026-09-01T00:00:00Z", 2)
APPEND_GEN = GenerationKey("2026-09-01T00:00:00Z", 0)  # appends carry no correction revision


def _one(env: JournalEnv, key: str, start: str, end: str, *, generation: GenerationKey = GEN1,
         kind: MutationKind = MutationKind.PARTITION_REPLACE) -> OperationRow:
    admitted = env.journal.admit_parent(
        admission(key, [child(0, start, end, key=f"{key}.c0", generation=generation, kind=kind)]))
    return seal(env.journal, admitted.children[0])


def _refused_with(env: JournalEnv, op: OperationRow, code: ErrorCode) -> None:
    held = env.journal.capacity_status(CAPACITY).held_by_attempts
    with pytest.raises(DeliveryError) as caught:
        submit(env.journal, env.markers, op)
    assert caught.value.code is code
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == held


# --- generation fence: which lower overlapping effects count as "in flight" -------------------


def test_accepted_lower_generation_with_undetermined_effect_blocks_the_higher(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = submit(env.journal, env.markers, _one(env, "low", day(1), day(8))).operation
    accepted = step(env.journal, low, "receipt_accepted")
    assert (accepted.axes.execution_state, accepted.axes.remote_effect) == (
        ExecutionState.ACCEPTED, RemoteEffect.UNDETERMINED)
    _refused_with(env, _one(env, "high", day(3), day(5), generation=GEN2), ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT)


def test_partially_applied_lower_generation_blocks_the_higher(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = submit(env.journal, env.markers, _one(env, "low", day(1), day(8))).operation
    partial = step(env.journal, step(env.journal, low, "sync_response_succeeded"), "verified_partial")
    assert partial.axes.remote_effect is RemoteEffect.PARTIALLY_APPLIED
    _refused_with(env, _one(env, "high", day(3), day(5), generation=GEN2), ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT)


def test_an_abandoned_lower_generation_no_longer_blocks_the_higher(journal_env: JournalEnv) -> None:
    """An operator abandoned the partial lower generation: the correction generation may go."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = submit(env.journal, env.markers, _one(env, "low", day(1), day(8))).operation
    partial = step(env.journal, step(env.journal, low, "sync_response_succeeded"), "verified_partial")
    high = _one(env, "high", day(3), day(5), generation=GEN2)
    rows = [replace(partial, abandoned=True)]
    check_submit_permitted(high.operation_id, high.descriptor, rows, [])  # the pure policy, abandoned
    with pytest.raises(DeliveryError) as still:
        check_submit_permitted(high.operation_id, high.descriptor, [partial], [])
    assert still.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT


def test_resolved_lower_generation_does_not_block(journal_env: JournalEnv) -> None:
    """The other side of the fence: a lower effect proven FULLY_APPLIED is no longer in flight."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    apply_fully(env.journal, env.markers, _one(env, "low", day(1), day(8)))
    high = _one(env, "high", day(3), day(5), generation=GEN2)
    assert submit(env.journal, env.markers, high).operation.axes.execution_state is ExecutionState.SUBMITTING


# --- append rule: only an applied APPEND blocks an append -----------------------------------------


def test_append_over_a_fully_applied_replace_is_permitted(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    apply_fully(env.journal, env.markers, _one(env, "replace", day(1), day(8), generation=APPEND_GEN))
    append = _one(env, "append", day(1), day(8), generation=APPEND_GEN, kind=MutationKind.INCREMENTAL_APPEND)
    assert submit(env.journal, env.markers, append).operation.axes.execution_state is ExecutionState.SUBMITTING


def test_append_next_to_an_unsubmitted_append_is_permitted(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    _one(env, "append-1", day(1), day(8), generation=APPEND_GEN, kind=MutationKind.INCREMENTAL_APPEND)  # never sent
    second = _one(env, "append-2", day(1), day(8), generation=APPEND_GEN, kind=MutationKind.INCREMENTAL_APPEND)
    assert submit(env.journal, env.markers, second).operation.axes.execution_state is ExecutionState.SUBMITTING


# --- the policy filters by overlap itself, whatever rows the adapter passed -----------------------


def test_policy_ignores_non_overlapping_rows_it_is_given(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    january = _one(env, "jan", day(1), day(8))
    february_high = _one(env, "feb", day(8), day(15), generation=GEN2)
    in_flight = submit(env.journal, env.markers, _one(env, "feb-flight", day(8), day(15), generation=GEN2)).operation
    rows = [january, february_high, in_flight]
    # A higher generation and an in-flight effect that only TOUCH January's half-open scope.
    check_not_stale(january.operation_id, january.descriptor, rows, [])
    check_submit_permitted(january.operation_id, january.descriptor, rows, [])


def test_policy_stale_check_does_not_stop_at_the_candidates_own_row(journal_env: JournalEnv) -> None:
    env = journal_env
    low = _one(env, "low", day(1), day(8))
    high = _one(env, "high", day(3), day(5), generation=GEN2)
    for rows in ([low, high], [high, low]):
        with pytest.raises(DeliveryError) as caught:
            check_not_stale(low.operation_id, low.descriptor, rows, [])
        assert caught.value.code is ErrorCode.STALE_GENERATION


def test_policy_refuses_a_higher_generation_applied_in_the_interval_map_alone(journal_env: JournalEnv) -> None:
    """The interval map outlives operation rows (retention, compaction): it is a rule on its own."""
    env = journal_env
    low = _one(env, "low", day(1), day(8))
    applied_high = [(ScopeRange(day(5), day(6)), GEN2)]
    with pytest.raises(DeliveryError) as caught:
        check_submit_permitted(low.operation_id, low.descriptor, [low], applied_high)
    assert caught.value.code is ErrorCode.STALE_GENERATION
    # The same generation applied there is not stale; neither is a higher one elsewhere.
    check_submit_permitted(low.operation_id, low.descriptor, [low], [(ScopeRange(day(5), day(6)), GEN1)])
    check_submit_permitted(low.operation_id, low.descriptor, [low], [(ScopeRange(day(8), day(9)), GEN2)])


def test_week_parent_children_never_fence_each_other(journal_env: JournalEnv) -> None:
    """Adjacent children of one parent touch but do not overlap: all of them may be in flight."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    children = [seal(env.journal, c) for c in env.journal.admit_parent(week_parent("weeks")).children]
    for op in children:
        assert submit(env.journal, env.markers, op).operation.axes.execution_state is ExecutionState.SUBMITTING


# --- contiguous frontier ----------------------------------------------------------------------


def test_stored_frontier_beyond_the_topology_is_refused() -> None:
    children = [(0, True), (1, True)]
    assert contiguous_frontier(children, current=1) == 1
    for beyond in (2, 3):
        with pytest.raises(ValueError, match="beyond the topology"):
            contiguous_frontier(children, current=beyond)


def test_frontier_never_goes_below_the_stored_one() -> None:
    assert contiguous_frontier([(0, True), (1, False), (2, False)], current=2) == 2
    assert contiguous_frontier([(0, True), (1, True), (2, False)], current=0) == 1
    assert contiguous_frontier([(0, False), (1, False)], current=1) == 1


def _one_eligible_child(tmp_path: Path, contract: DesignContract) -> tuple[SqliteJournal, OperationRow]:
    """A SQLite journal opened with ``contract``, one child applied and verified (checkpoint
    ELIGIBLE), and the checkpoint lease of its parent held by "ck"."""
    markers = FileMarkerStore(tmp_path / "markers")
    journal = open_sqlite_journal(tmp_path / "j.sqlite3", markers=markers, contract=contract)
    journal.configure_capacity(CAPACITY, 4)
    admitted = journal.admit_parent(week_parent("route-1", weeks=1))
    eligible = apply_fully(journal, markers, admitted.children[0])
    take_lease(journal, LeaseKind.CHECKPOINT, admitted.parent.parent_id, owner="ck")
    return journal, eligible


def _contract_with_promotion(change: str) -> DesignContract:
    """The bundled contract with its checkpoint promotions made operator-only or removed."""
    document = load_bounded_yaml_file(BUNDLED_CONTRACT)
    promotions = [t for t in document["transitions"] if t["id"] == "checkpoint_promoted"]
    assert promotions
    for item in promotions:
        if change == "operator_only":
            item["kind"] = "operator_only"
        else:
            document["transitions"].remove(item)
    return DesignContract(document)


@pytest.mark.parametrize("change", ["operator_only", "removed"])
def test_promotion_needs_an_automatic_contract_transition(tmp_path: Path, change: str) -> None:
    """A contract without an automatic promotion gives the frontier transaction nothing to apply:
    it is refused and nothing is promoted (SQLite adapter opened with that contract)."""
    journal, eligible = _one_eligible_child(tmp_path, _contract_with_promotion(change))
    parent_id = eligible.parent_id
    try:
        with pytest.raises(TransitionRejected) as caught:
            journal.promote_frontier(parent_id, lease_owner="ck")
        assert caught.value.reason is RejectionReason.ILLEGAL_TRANSITION
        assert journal.get_operation(eligible.operation_id) == eligible
        stored = journal.get_parent(parent_id)
        assert stored is not None and stored.frontier_order is None
    finally:
        journal.close()


def _contract_with_a_transition_between_promoted_tuples() -> DesignContract:
    """The bundled contract plus one automatic transition that leaves a PROMOTED checkpoint
    PROMOTED (the receiver's receipt of a promoted child expires later)."""
    document = load_bounded_yaml_file(BUNDLED_CONTRACT)
    document["transitions"].append({
        "id": "promoted_receipt_expired", "from": "finalized_succeeded_full_promoted",
        "to": "finalized_expired_full_promoted", "kind": "automatic",
        "cas_preconditions": ["revision_matches"], "advances": ["revision"],
    })
    return DesignContract(document)


def test_a_transition_that_stays_promoted_is_not_a_promotion(tmp_path: Path) -> None:
    """Only a transition *into* PROMOTED must go through promote_frontier: one between two
    PROMOTED tuples jumps no gap, and the plain transition path applies it."""
    journal, eligible = _one_eligible_child(tmp_path, _contract_with_a_transition_between_promoted_tuples())
    parent_id = eligible.parent_id
    try:
        assert journal.promote_frontier(parent_id, lease_owner="ck").promoted_operation_ids == (eligible.operation_id,)
        promoted = journal.get_operation(eligible.operation_id)
        assert promoted is not None and promoted.axes.checkpoint_state is CheckpointState.PROMOTED
        late = step(journal, promoted, "promoted_receipt_expired", lease_owner=None)
        assert late.axes.checkpoint_state is CheckpointState.PROMOTED
        assert late.axes.acknowledgement_state is AcknowledgementState.EXPIRED
        assert late.revision == promoted.revision + 1
    finally:
        journal.close()


# --- capacity release and the effect index: which transitions count -------------------------------


def test_only_retry_wait_or_a_resolved_finalized_state_releases_capacity(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 2)
    op = submit(env.journal, env.markers, _one(env, "cap", day(1), day(8))).operation
    for transition_id in ("sync_response_succeeded", "verified_full"):
        assert len(env.journal.capacity_status(CAPACITY).held_by_attempts) == 1, transition_id
        op = step(env.journal, op, transition_id)
    assert op.axes.execution_state is ExecutionState.FINALIZED
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()
    assert env.journal.list_attempts(op.operation_id)[0].capacity_released is True


def test_an_accepted_receipt_keeps_the_slot(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    op = submit(env.journal, env.markers, _one(env, "cap", day(1), day(8))).operation
    step(env.journal, op, "receipt_accepted")
    assert len(env.journal.capacity_status(CAPACITY).held_by_attempts) == 1
    assert env.journal.list_attempts(op.operation_id)[0].capacity_released is False


def test_only_a_fully_applied_effect_raises_the_interval_map(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = submit(env.journal, env.markers, _one(env, "idx", day(1), day(8))).operation
    domain = op.descriptor.effect_conflict_domain
    for transition_id in ("sync_response_succeeded", "verified_partial"):
        op = step(env.journal, op, transition_id)
        assert env.journal.effect_intervals(domain) == (), transition_id
    applied = apply_fully(env.journal, env.markers, _one(env, "idx-2", day(10), day(12)))
    assert [(i.scope, i.highest_applied_generation) for i in env.journal.effect_intervals(domain)] == [
        (applied.descriptor.scope, GEN1)]


# --- the critical submit picks exactly the named automatic transition ---------------------------


def test_submit_with_a_named_transition_uses_only_that_one(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = _one(env, "named", day(1), day(8))
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id)
    marker_digest = publish_marker(env.journal, env.markers, op)
    request = SubmitRequest(op.operation_id, op.revision, 1, marker_digest, WORKER, CAPACITY)
    with pytest.raises(TransitionRejected) as caught:  # retry_due starts from RETRY_WAIT, not SEALED
        env.journal.reserve_and_mark_submitting(replace(request, transition_id="retry_due"))
    assert caught.value.reason is RejectionReason.ILLEGAL_TRANSITION
    assert env.journal.list_attempts(op.operation_id) == ()
    grant = env.journal.reserve_and_mark_submitting(replace(request, transition_id="submit_started"))
    assert grant.operation.axes.execution_state is ExecutionState.SUBMITTING


# --- interval map lookups -------------------------------------------------------------------------


def test_highest_overlapping_is_the_highest_of_several_pieces() -> None:
    pieces = [(ScopeRange(day(1), day(2)), GEN1), (ScopeRange(day(2), day(3)), GEN2),
              (ScopeRange(day(3), day(4)), GEN1)]
    assert highest_overlapping(pieces, ScopeRange(day(1), day(4))) == GEN2
    assert highest_overlapping(pieces, ScopeRange(day(3), day(5))) == GEN1
    assert highest_overlapping(pieces, ScopeRange(day(4), day(5))) is None


def test_bounding_scope_covers_every_scope() -> None:
    scopes = [ScopeRange(day(3), day(5)), ScopeRange(day(1), day(2)), ScopeRange(day(4), day(9))]
    assert bounding_scope(scopes) == ScopeRange(day(1), day(9))


# --- transition policy --------------------------------------------------------------------------


def test_submit_from_planned_is_refused_by_state(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    planned = env.journal.admit_parent(admission("planned", [child(0, day(1), day(8), key="planned.c0")])).children[0]
    take_lease(env.journal, LeaseKind.MUTATION, planned.operation_id)
    marker_digest = publish_marker(env.journal, env.markers, planned)
    with pytest.raises(TransitionRejected) as caught:
        env.journal.reserve_and_mark_submitting(SubmitRequest(
            planned.operation_id, planned.revision, 1, marker_digest, WORKER, CAPACITY))
    assert caught.value.reason is RejectionReason.SUBMIT_NOT_PERMITTED_FROM_STATE


def test_an_automatic_actor_with_a_reconciliation_id_is_not_an_operator(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = submit(env.journal, env.markers, _one(env, "rec", day(1), day(8))).operation
    unknown = step(env.journal, op, "request_outcome_unknown")
    with pytest.raises(TransitionRejected) as caught:
        step(env.journal, unknown, "reconciliation_opened",
             actor=Actor(ActorKind.AUTOMATIC, "supervisor", reconciliation_id="r-1"))
    assert caught.value.reason is RejectionReason.OPERATOR_REQUIRED
    assert env.journal.get_operation(op.operation_id) == unknown


def test_a_required_lease_needs_a_claimed_owner() -> None:
    contract = load_design_contract()
    sealed = contract.tuple_named("sealed")
    assert sealed is not None
    submit_started = contract.transition_by_id("submit_started", sealed)
    assert submit_started is not None
    with pytest.raises(TransitionRejected) as caught:
        require_lease_owner(submit_started, LeaseKind.MUTATION, None)
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    assert require_lease_owner(submit_started, LeaseKind.MUTATION, "w") == "w"
