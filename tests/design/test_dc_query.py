"""Query API agreed with the journal: loading, caching, lookups and the invalid-contract report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dc_mutations import mutated

from sink.bounded_yaml import load_bounded_yaml
from sink.contracts.errors import ErrorCode
from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    VerificationState,
)
from sink.design.contract_text import HEADER
from sink.design.generate import build_document, render
from sink.design.query import (
    BUNDLED_CONTRACT,
    DesignContractInvalid,
    StateTuple,
    TransitionKind,
    load_design_contract,
)

E, R, A, V, C = ExecutionState, RemoteEffect, AcknowledgementState, VerificationState, CheckpointState
PLANNED = StateTuple(E.PLANNED, R.NONE_PROVEN, A.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED)
SEALED = StateTuple(E.SEALED, R.NONE_PROVEN, A.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED)
SUBMITTING = StateTuple(E.SUBMITTING, R.UNDETERMINED, A.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED)
RETRY_WAIT = StateTuple(E.RETRY_WAIT, R.NONE_PROVEN, A.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED)


def test_bundled_contract_loads_and_is_cached() -> None:
    contract = load_design_contract()
    assert contract is load_design_contract()
    assert contract.contract_id == "restproof.rest-bulk-delivery-design.v1"
    assert contract.initial == PLANNED
    assert len(contract.legal_tuples) == 77
    assert contract.monotonic_fields >= {
        "revision", "journal_epoch", "attempt_ordinal", "observation_ordinal", "correction_revision",
        "highest_applied_generation", "checkpoint_frontier",
    }


def test_committed_yaml_is_the_generator_output() -> None:
    # Compared as data, so a PyYAML formatting change cannot fail it; the header is compared as text.
    committed = BUNDLED_CONTRACT.read_bytes()
    assert load_bounded_yaml(committed) == build_document()
    assert committed.decode("utf-8").startswith(HEADER)
    assert load_bounded_yaml(render().encode()) == build_document()


def test_lookups() -> None:
    contract = load_design_contract()
    submit = contract.transition_by_id("submit_started", SEALED)
    assert submit is not None and submit.target == SUBMITTING
    assert submit.kind is TransitionKind.AUTOMATIC
    assert {"revision_matches", "mutation_lease_held", "journal_epoch_open"} <= set(submit.cas_preconditions)
    assert contract.find_transition(SEALED, SUBMITTING) == submit
    assert contract.find_transition(SUBMITTING, SEALED) is None
    assert contract.transition_by_id("submit_started", PLANNED) is None
    retry = contract.find_transition(RETRY_WAIT, SUBMITTING)
    assert retry is not None and retry.id == "retry_due" and "attempt_ordinal" in retry.advances
    assert {t.id for t in contract.transitions_from(SUBMITTING)} >= {
        "request_not_started_retry", "request_outcome_unknown", "receipt_accepted", "sync_response_succeeded",
    }


def test_legality_and_terminality() -> None:
    contract = load_design_contract()
    lost = StateTuple(E.FINALIZED, R.UNKNOWN, A.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED)
    eligible = StateTuple(E.FINALIZED, R.FULLY_APPLIED, A.CANCELLED, V.PASSED, C.ELIGIBLE)
    promoted = StateTuple(E.FINALIZED, R.FULLY_APPLIED, A.CANCELLED, V.PASSED, C.PROMOTED)
    assert contract.is_legal(lost) and contract.is_terminal(lost)
    assert contract.is_legal(eligible) and not contract.is_terminal(eligible)  # promotion pending
    assert contract.is_terminal(promoted)
    assert not contract.is_legal(StateTuple(E.FINALIZED, R.UNKNOWN, A.RUNNING, V.NOT_RUN, C.BLOCKED))
    assert not contract.is_legal(StateTuple(E.FINALIZED, R.PARTIALLY_APPLIED, A.SUCCEEDED, V.FAILED, C.ELIGIBLE))
    # The only way out of a finalized unknown effect is an operator reconciliation.
    exits = contract.transitions_from(lost)
    assert exits and all(t.kind is TransitionKind.OPERATOR_ONLY for t in exits)
    assert all(t.target.acknowledgement_state is A.NOT_ACCEPTED for t in exits)


def test_error_codes_are_typed() -> None:
    contract = load_design_contract()
    lost = contract.transition_by_id("request_outcome_unknown", SUBMITTING)
    assert lost is not None and ErrorCode.REMOTE_EFFECT_UNKNOWN in lost.error_codes
    emitted = {code for t in contract.transitions for code in t.error_codes}
    assert ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET in emitted


def test_names_round_trip() -> None:
    contract = load_design_contract()
    for state in contract.legal_tuples:
        name = contract.name_of(state)
        assert name is not None and contract.tuple_named(name) == state
    assert contract.tuple_named("no_such_tuple") is None


def test_invalid_contract_raises_with_a_json_report(tmp_path: Path) -> None:
    target = tmp_path / "broken.yaml"
    target.write_text(yaml.safe_dump(mutated("terminal_closure"), sort_keys=False), encoding="utf-8")
    with pytest.raises(DesignContractInvalid) as caught:
        load_design_contract(target)
    report = caught.value.report
    assert json.loads(json.dumps(report)) == report
    assert report["valid"] is False
    assert report["contract"] == "restproof.rest-bulk-delivery-design.v1"
    assert "terminal_closure" in {f["rule"] for f in report["findings"]}


@pytest.mark.parametrize(
    ("content", "code"), [(b"a: 1\na: 2\n", "yaml.duplicate_key"), (b"\xfe\xff", "yaml.invalid_utf8")]
)
def test_unloadable_contract_raises(tmp_path: Path, content: bytes, code: str) -> None:
    target = tmp_path / "bad.yaml"
    target.write_bytes(content)
    with pytest.raises(DesignContractInvalid) as caught:
        load_design_contract(target)
    assert [f["code"] for f in caught.value.findings] == [code]


def test_explicit_path_to_the_bundled_file_is_equivalent() -> None:
    contract = load_design_contract(BUNDLED_CONTRACT)
    assert contract is not load_design_contract()
    assert contract.legal_tuples == load_design_contract().legal_tuples
    assert contract.transitions == load_design_contract().transitions
