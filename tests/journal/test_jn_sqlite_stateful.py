"""Stateful property test: random legal and illegal moves never break the journal's invariants.

Hypothesis drives a SQLite journal holding three parents (two overlapping generations of one
domain, one append parent in another) through random contract transitions, operator
reconciliations, critical submits, frontier promotions and gate changes, and after every step
checks the safety properties an operator relies on.
"""

from __future__ import annotations

import itertools
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from jn_builders import CAPACITY, admission, child, day, digest, seal, submit, week_parent

from sink.contracts.errors import DeliveryError
from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect
from sink.design.query import TransitionKind, load_design_contract
from sink.journal.interval_map import is_normalised
from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalRejection
from sink.journal.records import (
    Actor,
    ActorKind,
    GateState,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    MutationKind,
    SubmitRequest,
    TransitionRequest,
)
from sink.journal.sqlite.adapter import open_sqlite_journal
from sink.journal.submit_policy import in_flight
from sink.journal.transition_policy import required_leases

CONTRACT = load_design_contract()
OPERATOR_IDS = itertools.count()
HAPPY_PATH = frozenset({"plan_sealed", "sync_response_succeeded", "verified_full", "receipt_accepted",
                        "continuation_pending", "poll_observed_succeeded"})
HOLDS_SLOT = {ExecutionState.SUBMITTING, ExecutionState.ACCEPTED, ExecutionState.WAITING}


class JournalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.markers = FileMarkerStore(root / "markers")
        self.journal = open_sqlite_journal(root / "j.sqlite3", markers=self.markers)
        self.journal.configure_capacity(CAPACITY, 2)
        self.parents = [
            self.journal.admit_parent(week_parent("gen-1", generation=GenerationKey("2026-09-01T00:00:00Z", 1))),
            self.journal.admit_parent(admission("gen-2", [
                child(0, day(5), day(12), key="gen-2.c0", generation=GenerationKey("2026-09-01T00:00:00Z", 2)),
            ])),
            self.journal.admit_parent(week_parent("append", domain="domain-append", weeks=2,
                                                  kind=MutationKind.INCREMENTAL_APPEND)),
        ]
        self.op_ids = [seal(self.journal, c).operation_id for p in self.parents for c in p.children]
        self.revisions = {op_id: 1 for op_id in self.op_ids}
        # The model of the journal's capacity rule: a granted submit holds a slot until the durable
        # RETRY_WAIT or a FINALIZED-not-UNKNOWN transition releases it; nothing re-acquires it (a
        # later reconciliation to UNKNOWN of a finished remote job does not take a slot again).
        self.slot_released = {op_id: True for op_id in self.op_ids}
        self.frontiers: dict[str, int | None] = {p.parent.parent_id: None for p in self.parents}

    def teardown(self) -> None:
        self.journal.close()
        self.tmp.cleanup()

    def _op(self, index: int):  # type: ignore[no-untyped-def]
        op = self.journal.get_operation(self.op_ids[index % len(self.op_ids)])
        assert op is not None
        return op

    @rule(index=st.integers(0, 5), choice=st.integers(0, 50), allow_abandon=st.integers(0, 9),
          happy=st.booleans())
    def contract_transition(self, index: int, choice: int, allow_abandon: int, happy: bool) -> None:
        op = self._op(index)
        options = [t for t in CONTRACT.transitions_from(op.axes)
                   if t.target.execution_state is not ExecutionState.SUBMITTING
                   and t.target.checkpoint_state is not CheckpointState.PROMOTED
                   # Abandoning before any submit ends the operation's story early: keep it rare.
                   and (allow_abandon == 0 or t.id not in ("plan_rejected", "admission_refused"))]
        if not options:
            return
        preferred = [t for t in options if t.id in HAPPY_PATH]
        # Half the draws follow the success path so deep states (applied, eligible) are reached.
        chosen = (preferred if happy and preferred else options)[choice % len(preferred if happy and preferred
                                                                           else options)]
        actor = Actor(ActorKind.AUTOMATIC, "supervisor")
        if chosen.kind is TransitionKind.OPERATOR_ONLY:
            actor = Actor(ActorKind.OPERATOR, "oncall", reconciliation_id=f"r-{next(OPERATOR_IDS)}")
        for kind in required_leases(chosen):  # the worker holds what the transition lists
            self.journal.acquire_lease(LeaseRequest(kind, op.operation_id, "worker", timedelta(hours=1)))
        moved = self.journal.transition(TransitionRequest(op.operation_id, op.revision, chosen.id, actor=actor,
                                                          lease_owner="worker"))
        assert moved.revision == op.revision + 1
        event(f"reached {moved.axes.execution_state}/{moved.axes.remote_effect}")
        self.revisions[op.operation_id] = moved.revision
        target = moved.axes
        if target.execution_state is ExecutionState.RETRY_WAIT or (
            target.execution_state is ExecutionState.FINALIZED and target.remote_effect is not RemoteEffect.UNKNOWN
        ):
            self.slot_released[op.operation_id] = True

    @rule(index=st.integers(0, 5), stale_by=st.integers(1, 3))
    def stale_cas_changes_nothing(self, index: int, stale_by: int) -> None:
        op = self._op(index)
        options = CONTRACT.transitions_from(op.axes)
        if not options or op.revision < stale_by:
            return
        with pytest.raises(JournalRejection):
            self.journal.transition(TransitionRequest(op.operation_id, op.revision - stale_by, options[0].id))
        assert self.journal.get_operation(op.operation_id) == op

    @rule(index=st.integers(0, 5))
    def critical_submit(self, index: int) -> None:
        op = self._op(index)
        if op.axes.execution_state not in (ExecutionState.SEALED, ExecutionState.RETRY_WAIT):
            # The supervisor never publishes a marker for an operation it cannot submit (a published
            # marker binds the revision, and an orphan blocks that ordinal until an operator
            # retires it): ask directly.
            self.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker", timedelta(hours=1)))
            with pytest.raises((JournalRejection, DeliveryError)):  # wrong state, or gate closed first
                self.journal.reserve_and_mark_submitting(SubmitRequest(
                    op.operation_id, op.revision, op.attempt_count + 1, digest("unpublished"), "worker", CAPACITY))
            assert self.journal.get_operation(op.operation_id) == op
            return
        try:
            grant = submit(self.journal, self.markers, op, owner="worker")
        except (DeliveryError, JournalRejection) as exc:
            event(f"submit refused: {getattr(exc, 'code', getattr(exc, 'reason', '?'))}")
            assert self.journal.get_operation(op.operation_id) == op  # refused: nothing changed
            return
        assert grant.operation.revision == op.revision + 1
        event("submit granted")
        self.revisions[op.operation_id] = grant.operation.revision
        self.slot_released[op.operation_id] = False

    @rule(which=st.integers(0, 2))
    def promote(self, which: int) -> None:
        parent_id = self.parents[which].parent.parent_id
        self.journal.acquire_lease(LeaseRequest(LeaseKind.CHECKPOINT, parent_id, "ck", timedelta(hours=1)))
        result = self.journal.promote_frontier(parent_id, lease_owner="ck")
        for op_id in result.promoted_operation_ids:
            self.revisions[op_id] += 1
        before = self.frontiers[parent_id]
        assert before is None or (result.frontier_order is not None and result.frontier_order >= before)
        self.frontiers[parent_id] = result.frontier_order

    @rule(block=st.integers(0, 7))
    def gate(self, block: int) -> None:
        operator = Actor(ActorKind.OPERATOR, "platform")
        status = self.journal.gate_status()
        if block == 0:
            self.journal.block_mutations(reason="failover without zero-RPO proof", actor=operator)
        elif status.state is GateState.BLOCKED:
            self.journal.attest_epoch(new_epoch=status.journal_epoch + 1, actor=operator,
                                      attestation_digest=digest(f"attest-{status.journal_epoch}"))

    @invariant()
    def operations_are_legal_and_revisions_exact(self) -> None:
        for op_id in self.op_ids:
            op = self.journal.get_operation(op_id)
            assert op is not None
            assert CONTRACT.is_legal(op.axes)
            assert op.revision == self.revisions[op_id]
            assert [a.attempt_ordinal for a in self.journal.list_attempts(op_id)] == list(
                range(1, op.attempt_count + 1))

    @invariant()
    def overlapping_effects_are_never_in_flight_together(self) -> None:
        ops = [self._op(i) for i in range(len(self.op_ids))]
        for a, b in itertools.combinations(ops, 2):
            same_domain = a.descriptor.effect_conflict_domain == b.descriptor.effect_conflict_domain
            if same_domain and a.descriptor.scope.overlaps(b.descriptor.scope):
                assert not (in_flight(a.axes) and in_flight(b.axes)), (a.delivery_key, b.delivery_key)

    @invariant()
    def in_flight_work_keeps_its_slot(self) -> None:
        status = self.journal.capacity_status(CAPACITY)
        assert len(status.held_by_attempts) <= status.slots
        held = set(status.held_by_attempts)
        for i in range(len(self.op_ids)):
            op = self._op(i)
            attempts = self.journal.list_attempts(op.operation_id)
            unknown_unreleased = (
                op.axes.remote_effect is RemoteEffect.UNKNOWN and not self.slot_released[op.operation_id]
            )
            if op.axes.execution_state in HOLDS_SLOT or (attempts and unknown_unreleased):
                assert attempts and attempts[-1].attempt_id in held, op.axes
            if op.axes.execution_state in (ExecutionState.PLANNED, ExecutionState.SEALED, ExecutionState.RETRY_WAIT):
                assert not held.intersection(a.attempt_id for a in attempts)

    @invariant()
    def effect_map_is_normalised_and_covers_applied_work(self) -> None:
        for domain in ("domain-a", "domain-append"):
            intervals = self.journal.effect_intervals(domain)
            assert is_normalised([(i.scope, i.highest_applied_generation) for i in intervals])
        for i in range(len(self.op_ids)):
            op = self._op(i)
            if op.axes.remote_effect is RemoteEffect.FULLY_APPLIED:
                covering = [iv for iv in self.journal.effect_intervals(op.descriptor.effect_conflict_domain)
                            if iv.scope.overlaps(op.descriptor.scope)]
                assert covering and all(iv.highest_applied_generation >= op.descriptor.generation for iv in covering)


JournalMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_journal_invariants_hold_under_random_operation = pytest.mark.timeout(240)(JournalMachine.TestCase)
