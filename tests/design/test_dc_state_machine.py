"""Stateful model check: walk the contract from the initial tuple and check invariants on every step.

The walker chooses any listed transition (automatic or operator-only) and carries the monotonic
counters a journal would. The same machine run against deliberately broken contracts must fail,
which shows the invariant checks can fail at all.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from dc_mutations import bundled_document
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    VerificationState,
)
from sink.design.query import DesignContract, StateTuple, Transition, TransitionKind, load_design_contract

TERMINAL_ACKS = frozenset({
    AcknowledgementState.SUCCEEDED,
    AcknowledgementState.FAILED,
    AcknowledgementState.CANCELLED,
    AcknowledgementState.EXPIRED,
    AcknowledgementState.PROTOCOL_UNKNOWN,
})
SETTINGS = settings(max_examples=150, stateful_step_count=25, deadline=None, derandomize=True,
                    database=None, suppress_health_check=[HealthCheck.too_slow])
# The walk over the valid contract is longer: it must cover most of the graph to mean anything.
WALK_SETTINGS = settings(SETTINGS, max_examples=300, stateful_step_count=50)


class ModelWalk:
    """The per-walk model state and the invariant checks; independent of Hypothesis."""

    def __init__(self, contract: DesignContract) -> None:
        self.contract = contract
        self.current = contract.initial
        self.attempt_ordinal = 0
        self.observed_terminal_ack: AcknowledgementState | None = None
        # Set when UNKNOWN / FAILED|NOT_PROVABLE is reached; cleared only by an operator step.
        self.unknown_since_operator = False
        self.unproven_since_operator = False

    def step(self, transition: Transition) -> None:
        assert transition.source == self.current
        before, after = transition.source, transition.target
        if transition.kind is TransitionKind.OPERATOR_ONLY:
            self.unknown_since_operator = False
            self.unproven_since_operator = False
        if after.execution_state is ExecutionState.SUBMITTING and before.execution_state is not (
            ExecutionState.SUBMITTING
        ):
            assert "attempt_ordinal" in transition.advances, f"{transition.id} re-submits on the same attempt"
            if before.execution_state is ExecutionState.RETRY_WAIT:
                assert before.remote_effect is RemoteEffect.NONE_PROVEN
        if "attempt_ordinal" in transition.advances:
            self.attempt_ordinal += 1
        if after.execution_state is ExecutionState.RETRY_WAIT:
            # Only proof re-opens a retry: the request never started, or an operator's reconciliation
            # proved exact absence with the receiver's certified read-only query.
            proven_by_operator = (transition.kind is TransitionKind.OPERATOR_ONLY
                                  and "exact_absence_proven" in transition.cas_preconditions)
            assert "request_not_started_proven" in transition.cas_preconditions or proven_by_operator, \
                f"{transition.id} re-opens a retry without proof"
            assert "retry_budget_remaining" in transition.cas_preconditions
        if after.remote_effect is RemoteEffect.NONE_PROVEN:
            assert not self.unknown_since_operator, f"{transition.id}: UNKNOWN became NONE_PROVEN automatically"
        if after.verification_state is VerificationState.PASSED:
            assert not self.unproven_since_operator, f"{transition.id}: PASSED without an operator step"
        self.current = after
        self.check()

    def check(self) -> None:
        t = self.current
        assert self.contract.is_legal(t), f"illegal tuple {t}"
        if t.checkpoint_state in (CheckpointState.ELIGIBLE, CheckpointState.PROMOTED):
            assert (t.remote_effect, t.verification_state) == (RemoteEffect.FULLY_APPLIED, VerificationState.PASSED)
        if t.acknowledgement_state is AcknowledgementState.RUNNING:
            assert t.execution_state is not ExecutionState.FINALIZED
            assert t.remote_effect is not RemoteEffect.UNKNOWN
        if self.contract.is_terminal(t):
            automatic = [x.id for x in self.contract.transitions_from(t) if x.kind is TransitionKind.AUTOMATIC]
            assert not automatic, f"terminal {self.contract.name_of(t)} has automatic exits {automatic}"
        if self.observed_terminal_ack is not None:
            assert t.acknowledgement_state is self.observed_terminal_ack, "observed acknowledgement lost"
        elif t.acknowledgement_state in TERMINAL_ACKS:
            self.observed_terminal_ack = t.acknowledgement_state
        if t.remote_effect is RemoteEffect.UNKNOWN:
            self.unknown_since_operator = True
        if t.verification_state in (VerificationState.FAILED, VerificationState.NOT_PROVABLE):
            self.unproven_since_operator = True


def machine_for(contract: DesignContract) -> type[RuleBasedStateMachine]:
    class ContractWalk(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            self.model = ModelWalk(contract)
            self.model.check()

        @rule(data=st.data())
        def take_transition(self, data: st.DataObject) -> None:
            options = contract.transitions_from(self.model.current)
            if options:
                self.model.step(data.draw(st.sampled_from(options)))

        @rule(data=st.data())
        def take_automatic_transition(self, data: st.DataObject) -> None:
            options = [t for t in contract.transitions_from(self.model.current) if t.kind is TransitionKind.AUTOMATIC]
            if options:
                self.model.step(data.draw(st.sampled_from(options)))

        @precondition(lambda self: not contract.transitions_from(self.model.current))
        @rule()
        def start_next_operation(self) -> None:
            # A walk that ended in a tuple without exits starts a fresh operation, so no step is wasted.
            self.model = ModelWalk(contract)
            self.model.check()

        @invariant()
        def still_legal(self) -> None:
            if hasattr(self, "model"):
                assert contract.is_legal(self.model.current)

    return ContractWalk


def _contract_from(document: dict[str, Any]) -> DesignContract:
    # Bypasses validation on purpose: the walker must catch what the validator would.
    return DesignContract(document)


def test_bundled_contract_survives_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    contract = load_design_contract()
    taken: set[tuple[str, StateTuple]] = set()
    original = ModelWalk.step

    def recording_step(self: ModelWalk, transition: Transition) -> None:
        taken.add((transition.id, transition.source))
        original(self, transition)

    monkeypatch.setattr(ModelWalk, "step", recording_step)
    run_state_machine_as_test(machine_for(contract), settings=WALK_SETTINGS)
    # A walk that never leaves the first few tuples would pass vacuously.
    assert len(taken) >= len(contract.transitions) // 2, f"walk took only {len(taken)} transitions"


def _shortest_paths(contract: DesignContract) -> dict[StateTuple, list[Transition]]:
    paths: dict[StateTuple, list[Transition]] = {contract.initial: []}
    queue = deque([contract.initial])
    while queue:
        current = queue.popleft()
        for transition in contract.transitions_from(current):
            if transition.target not in paths:
                paths[transition.target] = [*paths[current], transition]
                queue.append(transition.target)
    return paths


def walk_every_transition(contract: DesignContract) -> int:
    """Deterministic complement of the random walk: take every transition at the end of a shortest
    path to its source, checking the invariants on every step. Returns the number of transitions."""
    paths = _shortest_paths(contract)
    for transition in contract.transitions:
        assert transition.source in paths, f"{transition.id} starts from an unreachable tuple"
        walk = ModelWalk(contract)
        walk.check()
        for step in [*paths[transition.source], transition]:
            walk.step(step)
    return len(contract.transitions)


def test_every_transition_keeps_the_invariants() -> None:
    contract = load_design_contract()
    assert walk_every_transition(contract) == len(contract.transitions) == 176  # + reconciled_absence_proven


def test_walk_reaches_retry_and_promotion() -> None:
    # The walk is only meaningful if the interesting paths exist: check them directly.
    contract = load_design_contract()
    names = {contract.name_of(t.target) for t in contract.transitions}
    assert {"retry_wait", "finalized_succeeded_full_promoted", "reconciling_unknown_not_accepted"} <= names


def _inject(document: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    document["transitions"].append({"cas_preconditions": ["revision_matches"], "advances": ["revision"], **entry})
    return document


BROKEN: dict[str, Any] = {
    "automatic_exit_from_terminal": lambda d: _inject(d, {
        "id": "resend_after_final", "from": "finalized_not_accepted_not_started", "to": "sealed",
        "kind": "automatic"}),
    "retry_without_new_attempt": lambda d: [
        t["advances"].remove("attempt_ordinal") for t in d["transitions"] if t["id"] == "retry_due"] and d,
    "unknown_relaxed_automatically": lambda d: _inject(d, {
        "id": "lease_expired_assume_nothing", "from": "finalized_not_accepted_outcome_lost",
        "to": "finalized_not_accepted_not_started", "kind": "automatic"}),
    "acknowledgement_rewritten": lambda d: _inject(d, {
        "id": "forget_failure", "from": "verifying_failed", "to": "finalized_succeeded_full_eligible",
        "kind": "automatic"}),
}


@pytest.mark.parametrize("breakage", sorted(BROKEN))
def test_walk_fails_on_a_broken_contract(breakage: str) -> None:
    broken = _contract_from(BROKEN[breakage](bundled_document()))
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine_for(broken), settings=SETTINGS)
    with pytest.raises(AssertionError):
        walk_every_transition(broken)


def test_model_check_rejects_an_illegal_start() -> None:
    contract = load_design_contract()
    walk = ModelWalk(contract)
    walk.current = StateTuple(ExecutionState.FINALIZED, RemoteEffect.UNKNOWN, AcknowledgementState.RUNNING,
                              VerificationState.NOT_RUN, CheckpointState.BLOCKED)
    with pytest.raises(AssertionError):
        walk.check()
