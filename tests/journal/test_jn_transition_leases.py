"""Lease-checked transitions: the lease a contract transition lists must be held by the caller.

Checked inside the transition's own transaction on the database clock (SQLite: the injected
clock, advanced here; PostgreSQL: its now(), reached by really sleeping past a short TTL).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, WORKER, seal, step, submit, take_lease, week_parent

from sink.contracts.state import ExecutionState
from sink.design.query import TransitionKind, load_design_contract
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import Actor, ActorKind, LeaseKind, OperationRow
from sink.journal.transition_policy import required_leases

pytestmark = pytest.mark.timeout(60)

CONTRACT = load_design_contract()
SHORT = timedelta(seconds=1)


def _submitting(env: JournalEnv, *, ttl: timedelta = timedelta(seconds=60)) -> OperationRow:
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("leased")).children[0])
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id, ttl=ttl)
    return submit(env.journal, env.markers, op, take_lease=False).operation


def _refused(env: JournalEnv, op: OperationRow, transition_id: str, owner: str | None) -> None:
    with pytest.raises(TransitionRejected) as caught:
        step(env.journal, op, transition_id, lease_owner=owner)
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    assert env.journal.get_operation(op.operation_id) == op  # nothing changed
    assert env.journal.get_receipt(op.operation_id) is None


@pytest.mark.parametrize("owner", [None, "worker-2"], ids=["missing-owner", "wrong-owner"])
def test_mutation_leased_transition_needs_the_holder(journal_env: JournalEnv, owner: str | None) -> None:
    op = _submitting(journal_env)
    _refused(journal_env, op, "sync_response_succeeded", owner)
    moved = step(journal_env.journal, op, "sync_response_succeeded", lease_owner=WORKER)
    assert (moved.axes.execution_state, moved.revision) == (ExecutionState.VERIFYING, op.revision + 1)


def test_expired_mutation_lease_authorises_nothing(journal_env: JournalEnv) -> None:
    op = _submitting(journal_env, ttl=SHORT)
    journal_env.advance(SHORT * 1.5)
    _refused(journal_env, op, "request_not_started_retry", WORKER)
    # Renewing by the same owner restores the authority; capacity is then released as usual.
    take_lease(journal_env.journal, LeaseKind.MUTATION, op.operation_id)
    moved = step(journal_env.journal, op, "request_not_started_retry", lease_owner=WORKER)
    assert moved.axes.execution_state is ExecutionState.RETRY_WAIT
    assert journal_env.journal.capacity_status(CAPACITY).held_by_attempts == ()


def test_observation_transition_needs_the_observation_lease_not_the_mutation_one(journal_env: JournalEnv) -> None:
    env = journal_env
    op = step(env.journal, step(env.journal, _submitting(env), "receipt_accepted"), "continuation_pending")
    assert op.axes.execution_state is ExecutionState.WAITING
    # The worker still holds the mutation lease: that is not the lease polling requires.
    _refused(env, op, "poll_observed_running", WORKER)
    take_lease(env.journal, LeaseKind.OBSERVATION, op.operation_id, owner="poller", ttl=SHORT)
    _refused(env, op, "poll_observed_running", WORKER)
    polled = step(env.journal, op, "poll_observed_running", lease_owner="poller")
    assert polled.revision == op.revision + 1
    env.advance(SHORT * 1.5)
    _refused(env, polled, "poll_observed_succeeded", "poller")


def test_unleased_transition_ignores_the_owner_claim(journal_env: JournalEnv) -> None:
    env = journal_env
    op = env.journal.admit_parent(week_parent("unleased")).children[0]
    assert required_leases(_transition("plan_sealed")) == ()
    assert step(env.journal, op, "plan_sealed", lease_owner=None).axes.execution_state is ExecutionState.SEALED


def test_operator_reconciliation_is_guarded_by_the_operator_not_a_journal_lease(journal_env: JournalEnv) -> None:
    env = journal_env
    lost = step(env.journal, _submitting(env), "request_outcome_unknown", lease_owner=None)
    operator = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-lease-1")
    opened = step(env.journal, lost, "reconciliation_opened", actor=operator, lease_owner=None)
    assert opened.axes.execution_state is ExecutionState.VERIFYING
    assert opened.last_reconciliation_id == "recon-lease-1"


# ----- the shared policy ------------------------------------------------------------------------
def _transition(transition_id: str):  # type: ignore[no-untyped-def]
    return next(t for t in CONTRACT.transitions if t.id == transition_id)


def test_required_leases_follow_the_contract_preconditions() -> None:
    expected = {
        "mutation_lease_held": LeaseKind.MUTATION,
        "observation_lease_held": LeaseKind.OBSERVATION,
        "checkpoint_lease_held": LeaseKind.CHECKPOINT,
    }
    seen: set[LeaseKind] = set()
    for transition in CONTRACT.transitions:
        kinds = required_leases(transition)
        assert kinds == tuple(expected[p] for p in transition.cas_preconditions if p in expected)
        if transition.kind is TransitionKind.OPERATOR_ONLY:
            assert kinds == ()
        seen.update(kinds)
    assert seen == set(LeaseKind)


def test_unknown_lease_precondition_fails_closed() -> None:
    base = _transition("plan_sealed")
    for kind in (TransitionKind.AUTOMATIC, TransitionKind.OPERATOR_ONLY):
        invented = replace(base, kind=kind, cas_preconditions=(*base.cas_preconditions, "payload_lease_held"))
        with pytest.raises(TransitionRejected) as caught:
            required_leases(invented)
        assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    automatic_reconciliation = replace(base, cas_preconditions=("reconciliation_lease_held",))
    with pytest.raises(TransitionRejected):
        required_leases(automatic_reconciliation)
