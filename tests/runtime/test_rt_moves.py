"""sink.runtime.plan_move: a policy can only name a transition (and error code) the contract lists."""

from __future__ import annotations

import pytest
from rt_support import CONTRACT, response, tuple_named

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile_ack import Extractor
from sink.runtime import PolicyContractError, plan_move, scalar_of


def test_listed_transition_with_its_code_and_catalog_exit_class() -> None:
    move = plan_move(CONTRACT, tuple_named("submitting"), "request_outcome_unknown",
                     error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN)
    assert move.transition_id == "request_outcome_unknown"
    assert move.source == tuple_named("submitting")
    assert move.target == tuple_named("finalized_not_accepted_outcome_lost")
    assert move.error_code is ErrorCode.REMOTE_EFFECT_UNKNOWN
    assert move.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL


def test_explicit_exit_class_wins_and_no_code_means_not_blocked() -> None:
    final = plan_move(CONTRACT, tuple_named("submitting"), "request_not_started_final",
                      exit_class=ExitClass.UNAVAILABLE)
    assert final.exit_class is ExitClass.UNAVAILABLE and final.error_code is None
    moving = plan_move(CONTRACT, tuple_named("submitting"), "receipt_accepted")
    assert moving.exit_class is None and moving.error_code is None


def test_unlisted_transition_is_refused() -> None:
    with pytest.raises(PolicyContractError, match=r"retry_due.*submitting"):
        plan_move(CONTRACT, tuple_named("submitting"), "retry_due")


def test_code_the_transition_does_not_report_is_refused() -> None:
    with pytest.raises(PolicyContractError, match="REST_DELIVERY_PARTIALLY_APPLIED"):
        plan_move(CONTRACT, tuple_named("submitting"), "request_outcome_unknown",
                  error_code=ErrorCode.PARTIALLY_APPLIED)
    with pytest.raises(PolicyContractError):
        plan_move(CONTRACT, tuple_named("submitting"), "receipt_accepted", error_code=ErrorCode.PROTOCOL_UNKNOWN)


def test_scalar_of_reads_pointer_or_lower_cased_header() -> None:
    outcome = response(200, {"/a/b": 3}, headers={"retry-after": "5"})
    assert outcome.response is not None
    assert scalar_of(outcome.response, Extractor(body_json_pointer="/a/b")) == 3
    assert scalar_of(outcome.response, Extractor(header="Retry-After")) == "5"
    assert scalar_of(outcome.response, Extractor(body_json_pointer="/missing")) is None
    assert scalar_of(outcome.response, Extractor(header="X-Missing")) is None
