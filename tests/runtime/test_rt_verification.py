"""verification: counters and the read-only summary against the sealed payload set effect and
verification independently; only FULLY_APPLIED + PASSED is checkpoint eligible."""

from __future__ import annotations

from typing import Any

import pytest
from rt_support import ASYNC_PROFILE, CONTRACT, profile, response, tuple_named

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import AcknowledgementState, CheckpointState, RemoteEffect, VerificationState
from sink.runtime import PolicyContractError
from sink.runtime.verification import (
    Counters,
    ExpectedDelivery,
    Outcome,
    ReceiverSummary,
    VerificationEvidence,
    extract_counters,
    judge,
    verify,
)

ACK = AcknowledgementState
DIGEST = "sha256:" + "11" * 32
OTHER = "sha256:" + "22" * 32
EXPECTED = ExpectedDelivery(rows=10, content_digest=DIGEST)
MATCH = ReceiverSummary(10, DIGEST)
WRONG_DIGEST = ReceiverSummary(10, OTHER)
WRONG_COUNT = ReceiverSummary(9, DIGEST)
TERMINAL_ACKS = (ACK.SUCCEEDED, ACK.FAILED, ACK.CANCELLED, ACK.EXPIRED, ACK.PROTOCOL_UNKNOWN)


def _ev(counters: tuple[int | None, int | None] | None = None, **fields: Any) -> VerificationEvidence:
    return VerificationEvidence(expected=fields.pop("expected", EXPECTED),
                                counters=None if counters is None else Counters(*counters), **fields)


def _judge(ack: ACK = ACK.SUCCEEDED, counters: tuple[int | None, int | None] | None = None, **fields: Any) -> Outcome:
    return judge(_ev(counters, **fields), ack)


# --- counters -------------------------------------------------------------------------------------


@pytest.mark.parametrize("ack", TERMINAL_ACKS)
def test_all_rows_accepted_is_full_whatever_the_acknowledgement(ack: ACK) -> None:
    assert _judge(ack, (10, 0)) is Outcome.FULL
    assert _judge(ack, (10, 0), summary=MATCH) is Outcome.FULL


def test_some_rows_accepted_is_partial() -> None:
    assert _judge(ACK.SUCCEEDED, (7, 3)) is Outcome.PARTIAL
    assert _judge(ACK.FAILED, (1, 9), summary=WRONG_DIGEST) is Outcome.PARTIAL


@pytest.mark.parametrize("ack", [ACK.FAILED, ACK.CANCELLED, ACK.EXPIRED, ACK.PROTOCOL_UNKNOWN])
def test_all_rows_rejected_is_no_effect(ack: ACK) -> None:
    assert _judge(ack, (0, 10)) is Outcome.NO_EFFECT
    assert _judge(ack, (0, 10), summary=WRONG_DIGEST) is Outcome.NO_EFFECT


def test_success_never_resolves_to_absence() -> None:
    assert _judge(ACK.SUCCEEDED, (0, 10)) is Outcome.CONTRADICTORY
    assert _judge(ACK.SUCCEEDED, None, rejection_proven=True) is Outcome.CONTRADICTORY


@pytest.mark.parametrize("counters", [(None, 0), (10, None), (None, None)])
def test_missing_counters_are_not_provable_even_with_a_matching_summary(counters: tuple[Any, Any]) -> None:
    assert _judge(ACK.SUCCEEDED, counters) is Outcome.NOT_PROVABLE
    assert _judge(ACK.SUCCEEDED, counters, summary=MATCH) is Outcome.NOT_PROVABLE
    assert _judge(ACK.SUCCEEDED, counters, receiver_reported_partial=True) is Outcome.PARTIAL_NOT_PROVABLE


@pytest.mark.parametrize("counters", [(11, 0), (9, 0), (5, 4), (-1, 11), (10, -1), (0, 11), (6, 6)])
def test_counts_that_do_not_account_for_every_row_are_contradictory(counters: tuple[int, int]) -> None:
    assert _judge(ACK.SUCCEEDED, counters) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, counters) is Outcome.CONTRADICTORY


def test_without_all_rows_accounted_unaccounted_rows_are_tolerated_but_never_prove_absence() -> None:
    loose = {"all_rows_accounted": False}
    assert _judge(ACK.SUCCEEDED, (10, 0), **loose) is Outcome.FULL
    assert _judge(ACK.SUCCEEDED, (5, 0), **loose) is Outcome.PARTIAL
    assert _judge(ACK.FAILED, (0, 4), **loose) is Outcome.NOT_PROVABLE
    assert _judge(ACK.FAILED, (0, 10), **loose) is Outcome.NO_EFFECT
    assert _judge(ACK.FAILED, (8, 3), **loose) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, (-1, 0), **loose) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, (0, -1), **loose) is Outcome.CONTRADICTORY


def test_empty_payload_fully_accounted_is_full() -> None:
    assert _judge(ACK.SUCCEEDED, (0, 0), expected=ExpectedDelivery(rows=0)) is Outcome.FULL


# --- counters against the other evidence ----------------------------------------------------------


@pytest.mark.parametrize("summary", [WRONG_DIGEST, WRONG_COUNT])
def test_full_counters_with_other_content_are_contradictory(summary: ReceiverSummary) -> None:
    assert _judge(ACK.SUCCEEDED, (10, 0), summary=summary) is Outcome.CONTRADICTORY


def test_matching_summary_contradicts_partial_or_absent_counters() -> None:
    assert _judge(ACK.SUCCEEDED, (7, 3), summary=MATCH) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, (0, 10), summary=MATCH) is Outcome.CONTRADICTORY


def test_receiver_reported_partial_against_counters() -> None:
    assert _judge(ACK.SUCCEEDED, (7, 3), receiver_reported_partial=True) is Outcome.PARTIAL
    assert _judge(ACK.SUCCEEDED, (10, 0), receiver_reported_partial=True) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, (0, 10), receiver_reported_partial=True) is Outcome.CONTRADICTORY


def test_proven_rejection_against_counters() -> None:
    assert _judge(ACK.FAILED, (0, 10), rejection_proven=True) is Outcome.NO_EFFECT
    assert _judge(ACK.FAILED, (10, 0), rejection_proven=True) is Outcome.CONTRADICTORY
    assert _judge(ACK.FAILED, (4, 6), rejection_proven=True) is Outcome.CONTRADICTORY


# --- no counters (e.g. a duplicate answer): the summary, or the rejection, decides ---------------


@pytest.mark.parametrize("ack", TERMINAL_ACKS)
def test_summary_alone_proves_full(ack: ACK) -> None:
    assert _judge(ack, None, summary=MATCH) is Outcome.FULL


@pytest.mark.parametrize("summary", [WRONG_DIGEST, WRONG_COUNT])
def test_summary_alone_with_other_content(summary: ReceiverSummary) -> None:
    # Other content contradicts only a success acknowledgement; otherwise it proves nothing.
    assert _judge(ACK.SUCCEEDED, None, summary=summary) is Outcome.CONTRADICTORY
    for ack in (ACK.EXPIRED, ACK.FAILED, ACK.CANCELLED, ACK.PROTOCOL_UNKNOWN, ACK.NOT_ACCEPTED):
        assert _judge(ack, None, summary=summary) is Outcome.NOT_PROVABLE, ack
    assert _judge(ACK.FAILED, None, summary=summary, rejection_proven=True) is Outcome.NO_EFFECT
    assert _judge(ACK.SUCCEEDED, None, summary=summary, receiver_reported_partial=True) is \
        Outcome.PARTIAL_NOT_PROVABLE


def test_no_evidence_at_all_is_not_provable() -> None:
    assert _judge(ACK.EXPIRED) is Outcome.NOT_PROVABLE
    assert _judge(ACK.SUCCEEDED) is Outcome.NOT_PROVABLE


def test_summary_without_an_expected_digest_proves_nothing() -> None:
    bare = ExpectedDelivery(rows=10)
    assert _judge(ACK.SUCCEEDED, None, expected=bare, summary=MATCH) is Outcome.NOT_PROVABLE
    assert _judge(ACK.SUCCEEDED, (10, 0), expected=bare, summary=WRONG_DIGEST) is Outcome.FULL


def test_rejection_without_counters_is_no_effect_unless_content_is_there() -> None:
    assert _judge(ACK.FAILED, None, rejection_proven=True) is Outcome.NO_EFFECT
    assert _judge(ACK.FAILED, None, rejection_proven=True, summary=MATCH) is Outcome.CONTRADICTORY


def test_reported_partial_without_counters() -> None:
    assert _judge(ACK.SUCCEEDED, None, receiver_reported_partial=True) is Outcome.PARTIAL_NOT_PROVABLE
    assert _judge(ACK.SUCCEEDED, None, receiver_reported_partial=True, summary=MATCH) is Outcome.CONTRADICTORY


# --- the contract move -----------------------------------------------------------------------------


@pytest.mark.parametrize(("evidence", "outcome", "effect", "verification", "code", "exit_class"), [
    (_ev((10, 0)), Outcome.FULL, RemoteEffect.FULLY_APPLIED, VerificationState.PASSED, None, None),
    (_ev((7, 3)), Outcome.PARTIAL, RemoteEffect.PARTIALLY_APPLIED, VerificationState.FAILED,
     ErrorCode.PARTIALLY_APPLIED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
    (_ev(None, receiver_reported_partial=True), Outcome.PARTIAL_NOT_PROVABLE, RemoteEffect.PARTIALLY_APPLIED,
     VerificationState.NOT_PROVABLE, ErrorCode.PARTIALLY_APPLIED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
    (_ev((0, 10)), Outcome.NO_EFFECT, RemoteEffect.NONE_PROVEN, VerificationState.FAILED, None,
     ExitClass.TERMINAL_RECEIVER_FAILURE),
    (_ev((3, 3)), Outcome.CONTRADICTORY, RemoteEffect.UNKNOWN, VerificationState.FAILED, ErrorCode.COUNT_MISMATCH,
     ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
    (_ev(None), Outcome.NOT_PROVABLE, RemoteEffect.UNKNOWN, VerificationState.NOT_PROVABLE,
     ErrorCode.REMOTE_EFFECT_UNKNOWN, ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
])
def test_verify_records_each_outcome_through_its_listed_transition(
    evidence: VerificationEvidence, outcome: Outcome, effect: RemoteEffect, verification: VerificationState,
    code: ErrorCode | None, exit_class: ExitClass | None,
) -> None:
    current = tuple_named("verifying_failed")
    decision = verify(evidence, current=current, contract=CONTRACT)
    assert decision.outcome is outcome
    assert decision.move.transition_id == f"verified_{outcome.value}"
    assert CONTRACT.transition_by_id(decision.move.transition_id, current) == decision.move.transition
    assert (decision.remote_effect, decision.verification_state) == (effect, verification)
    assert decision.move.target.acknowledgement_state is ACK.FAILED  # the acknowledgement is preserved
    assert decision.move.error_code is code
    assert decision.move.exit_class is exit_class
    expected_checkpoint = CheckpointState.ELIGIBLE if outcome is Outcome.FULL else CheckpointState.BLOCKED
    assert decision.checkpoint_state is expected_checkpoint


def test_full_and_passed_is_checkpoint_eligible_for_every_acknowledgement() -> None:
    for ack in TERMINAL_ACKS:
        decision = verify(_ev((10, 0)), current=tuple_named(f"verifying_{ack.value.lower()}"), contract=CONTRACT)
        assert decision.checkpoint_state is CheckpointState.ELIGIBLE
        assert decision.move.target.acknowledgement_state is ack


def test_every_outcome_from_every_verifying_tuple_is_listed() -> None:
    evidences = [_ev((10, 0)), _ev((7, 3)), _ev(None, receiver_reported_partial=True), _ev((0, 10)), _ev((3, 3)),
                 _ev(None)]
    for ack in TERMINAL_ACKS:
        current = tuple_named(f"verifying_{ack.value.lower()}")
        seen = {verify(e, current=current, contract=CONTRACT).move.transition_id for e in evidences}
        assert seen == {t.id for t in CONTRACT.transitions_from(current)}


def test_reconciliation_uses_the_operator_transitions() -> None:
    current = tuple_named("reconciling_unknown_not_accepted")
    decision = verify(_ev(None, summary=MATCH), current=current, contract=CONTRACT)
    assert decision.move.transition_id == "reconciled_full"
    assert decision.move.target == tuple_named("finalized_not_accepted_full_eligible")
    partial = verify(_ev((7, 3)), current=tuple_named("reconciling_partial_failed"), contract=CONTRACT)
    assert partial.move.transition_id == "reconciled_partial"


def test_verification_only_in_verifying() -> None:
    with pytest.raises(PolicyContractError, match="VERIFYING"):
        verify(_ev((10, 0)), current=tuple_named("waiting_ack_running"), contract=CONTRACT)


def test_extract_counters_from_the_profile_extractors() -> None:
    policy = profile(ASYNC_PROFILE).result_policy
    outcome = response(200, {"/accepted_rows": 8, "/rejected_rows": 2})
    assert outcome.response is not None
    assert extract_counters(outcome.response, policy) == Counters(8, 2)
    odd = response(200, {"/accepted_rows": "8", "/rejected_rows": True})
    assert odd.response is not None
    assert extract_counters(odd.response, policy) == Counters(None, None)
    none = response(200, {})
    assert none.response is not None
    assert extract_counters(none.response, policy) == Counters(None, None)
    no_counters = policy.model_copy(update={"counters": {}})
    assert extract_counters(outcome.response, no_counters) is None
    only_accepted = policy.model_copy(update={"counters": {"accepted_rows": policy.counters["accepted_rows"]}})
    assert extract_counters(outcome.response, only_accepted) == Counters(8, None)
    only_rejected = policy.model_copy(update={"counters": {"rejected_rows": policy.counters["rejected_rows"]}})
    assert extract_counters(outcome.response, only_rejected) == Counters(None, 2)


def test_a_transition_recording_other_axes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import sink.runtime.verification as verification

    monkeypatch.setitem(verification._AXES, Outcome.FULL, (RemoteEffect.PARTIALLY_APPLIED, VerificationState.FAILED))
    with pytest.raises(PolicyContractError, match=r"^transition verified_full does not record "
                                                  r"PARTIALLY_APPLIED/FAILED$"):
        verify(_ev((10, 0)), current=tuple_named("verifying_succeeded"), contract=CONTRACT)
