"""submit_classification: every transport outcome of a mutation maps to one listed contract
transition from ``submitting`` (or a fenced same-key replay), with the right effect certainty."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rt_support import (
    ASYNC_PROFILE,
    CONTRACT,
    SYNC_PROFILE,
    no_fence,
    not_started,
    profile,
    reached_peer,
    response,
    tuple_named,
)

from sink.canonical import hash_fields
from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_ack import Extractor
from sink.contracts.state import RemoteEffect
from sink.contracts.transport import FailureKind, TransportOutcome, TransportPhase
from sink.runtime import PolicyContractError
from sink.runtime.submit_classification import (
    SubmitAction,
    SubmitContext,
    SubmitDecision,
    SubmitReason,
    classify_submit,
    extract_receipt,
    proves_not_started,
)

NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)
SUBMITTING = tuple_named("submitting")
ASYNC = profile(ASYNC_PROFILE)
SYNC = profile(SYNC_PROFILE)
UNFENCED = no_fence(SYNC_PROFILE)


class TopJitter:
    """Draws the top of the interval and remembers every interval asked for."""

    def __init__(self) -> None:
        self.uppers: list[int] = []

    def draw(self, upper_inclusive: int) -> int:
        self.uppers.append(upper_inclusive)
        return upper_inclusive


def _classify(outcome: TransportOutcome, prof: OperationProfile = SYNC, *, jitter: TopJitter | None = None,
              current_name: str = "submitting", **context: Any) -> SubmitDecision:
    values: dict[str, Any] = {"attempts_used": 1, "sends_used": 1, "remaining_budget_ms": 600_000,
                              "elapsed_since_first_send_ms": 0, "now": NOW, "live_attempt": True}
    values.update(context)
    values["sends_used"] = context.get("sends_used", max(values["attempts_used"], 1))
    return classify_submit(outcome, profile=prof, current=tuple_named(current_name),
                           context=SubmitContext(**values), jitter=jitter or TopJitter(), contract=CONTRACT)


def _assert_move(decision: SubmitDecision, transition_id: str, target: str, *,
                 code: ErrorCode | None = None, exit_class: ExitClass | None = None) -> None:
    assert decision.action is SubmitAction.APPLY_TRANSITION
    assert decision.move is not None
    assert decision.move.transition_id == transition_id
    assert decision.target == tuple_named(target)
    assert decision.move.error_code is code
    assert decision.move.exit_class is exit_class
    listed = CONTRACT.transition_by_id(transition_id, SUBMITTING)
    assert listed is not None and listed == decision.move.transition


# --- 1. REQUEST_NOT_STARTED ---------------------------------------------------------------------


def test_not_started_with_budget_waits_to_retry() -> None:
    jitter = TopJitter()
    decision = _classify(not_started(), jitter=jitter)
    _assert_move(decision, "request_not_started_retry", "retry_wait", exit_class=ExitClass.UNAVAILABLE)
    assert decision.target is not None and decision.target.remote_effect is RemoteEffect.NONE_PROVEN
    assert decision.reason is SubmitReason.NOT_STARTED_RETRY
    assert jitter.uppers == [500] and decision.retry_delay_ms == 500


def test_not_started_backoff_grows_with_the_attempt() -> None:
    jitter = TopJitter()
    decision = _classify(not_started(), jitter=jitter, attempts_used=2)
    assert jitter.uppers == [1000] and decision.retry_delay_ms == 1000


def test_not_started_without_attempts_left_waits_for_the_next_wake_up() -> None:
    """Never a dead end: the wake-up's budget is spent, the child waits in RETRY_WAIT for the next run."""
    decision = _classify(not_started(), attempts_used=3)
    _assert_move(decision, "request_not_started_retry", "retry_wait", exit_class=ExitClass.UNAVAILABLE)
    assert decision.reason is SubmitReason.NOT_STARTED_BUDGET_EXHAUSTED
    assert decision.retry_delay_ms is None and decision.reason_word == "request_not_started_budget_spent"


def test_not_started_without_time_left_waits_for_the_next_wake_up() -> None:
    decision = _classify(not_started(), remaining_budget_ms=0)
    _assert_move(decision, "request_not_started_retry", "retry_wait", exit_class=ExitClass.UNAVAILABLE)
    assert decision.reason is SubmitReason.NOT_STARTED_BUDGET_EXHAUSTED and decision.retry_delay_ms is None


@pytest.mark.parametrize(("failure", "exit_class"), [
    (FailureKind.CREDENTIAL_UNAVAILABLE, ExitClass.UNAVAILABLE),
    (FailureKind.BODY_UNAVAILABLE, ExitClass.UNAVAILABLE),
    (FailureKind.AUTHORITY_REFUSED, ExitClass.INVALID_INPUT),
    (FailureKind.REDIRECT_REFUSED, ExitClass.INVALID_INPUT),
])
def test_a_local_cause_waits_without_a_retry_delay_and_names_itself(failure: FailureKind,
                                                                     exit_class: ExitClass) -> None:
    decision = _classify(not_started(failure=failure, phase=None, steps=()))
    _assert_move(decision, "request_not_started_retry", "retry_wait", exit_class=exit_class)
    assert decision.reason is SubmitReason.NOT_STARTED_LOCAL
    assert decision.reason_word == failure.value and decision.retry_delay_ms is None


@pytest.mark.parametrize("failure", [FailureKind.DNS_ERROR, FailureKind.DNS_TIMEOUT, FailureKind.CONNECT_TIMEOUT,
                                     FailureKind.TLS_ERROR, FailureKind.POOL_TIMEOUT, None])
def test_transient_not_started_causes_retry(failure: FailureKind | None) -> None:
    decision = _classify(not_started(failure=failure, phase=None, steps=()))
    _assert_move(decision, "request_not_started_retry", "retry_wait", exit_class=ExitClass.UNAVAILABLE)
    assert decision.retry_delay_ms is not None


@pytest.mark.parametrize("phase", [TransportPhase.REQUEST_HEADERS, TransportPhase.REQUEST_BODY,
                                   TransportPhase.RESPONSE_HEADERS, TransportPhase.RESPONSE_BODY,
                                   TransportPhase.COMPLETE])
def test_not_started_contradicted_by_phase_is_unknown(phase: TransportPhase) -> None:
    outcome = not_started(phase=phase, steps=())
    assert proves_not_started(outcome.evidence) is False
    _assert_move(_classify(outcome, UNFENCED), "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


@pytest.mark.parametrize("step", ["http11.send_request_headers.started", "http11.send_request_body.started",
                                  "http11.receive_response_headers.started", "http2.receive_response_body.failed"])
def test_not_started_contradicted_by_trace_is_unknown(step: str) -> None:
    outcome = not_started(steps=("connection.connect_tcp.complete", step))
    assert proves_not_started(outcome.evidence) is False
    _assert_move(_classify(outcome, UNFENCED), "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


@pytest.mark.parametrize("phase", [None, TransportPhase.DNS, TransportPhase.CONNECT, TransportPhase.TLS,
                                   TransportPhase.POOL])
def test_not_started_before_request_headers_is_proven(phase: TransportPhase | None) -> None:
    assert proves_not_started(not_started(phase=phase).evidence) is True


def test_reached_peer_is_never_not_started() -> None:
    assert proves_not_started(reached_peer().evidence) is False


# --- 5. lost response / 408 / 429 / 5xx: unknown unless a certified fence replays ---------------


@pytest.mark.parametrize("failure", [FailureKind.WRITE_TIMEOUT, FailureKind.READ_TIMEOUT, FailureKind.IDLE_TIMEOUT,
                                     FailureKind.REQUEST_TOTAL_TIMEOUT, FailureKind.READ_ERROR,
                                     FailureKind.PROTOCOL_ERROR])
def test_lost_response_without_fence_is_unknown_never_resent(failure: FailureKind) -> None:
    decision = _classify(reached_peer(failure=failure), UNFENCED)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is SubmitReason.MAY_HAVE_REACHED_PEER
    assert decision.replay_refused == "fence_not_certified"
    assert decision.target is not None and decision.target.remote_effect is RemoteEffect.UNKNOWN


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses_without_fence_are_unknown(status: int) -> None:
    decision = _classify(response(status, headers={"retry-after": "1"}), UNFENCED)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is SubmitReason.MAY_HAVE_REACHED_PEER


@pytest.mark.parametrize("prof", [SYNC, ASYNC], ids=["idempotency_key", "receiver_duplicate_key"])
def test_lost_response_with_certified_fence_replays_same_key(prof: OperationProfile) -> None:
    jitter = TopJitter()
    decision = _classify(reached_peer(), prof, jitter=jitter, sends_used=2)
    assert decision.action is SubmitAction.REPLAY_SAME_KEY
    assert decision.reason is SubmitReason.FENCED_REPLAY
    assert decision.move is None and decision.target is None
    assert jitter.uppers == [1000] and decision.retry_delay_ms == 1000


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_retryable_status_with_fence_replays_after_retry_after(status: int) -> None:
    decision = _classify(response(status, headers={"retry-after": "5"}), SYNC)
    assert decision.action is SubmitAction.REPLAY_SAME_KEY
    assert decision.retry_delay_ms == 5000


def test_fenced_replay_blocked_by_retry_after_beyond_budget_reports_its_code() -> None:
    decision = _classify(response(503, headers={"retry-after": "601"}), SYNC)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.replay_refused == "retry_after_exceeds_budget"
    assert decision.reason is SubmitReason.RETRY_AFTER_EXCEEDS_BUDGET
    assert decision.retry_delay_ms == 601_000, "the server's window is kept, never shortened"
    # A budget spent without the server's word defers the replay to the next wake-up instead.
    spent = _classify(response(503), SYNC, remaining_budget_ms=0)
    assert spent.action is SubmitAction.DEFER_REPLAY and spent.move is None


def test_fenced_replay_honours_an_http_date_retry_after() -> None:
    decision = _classify(response(503, headers={"retry-after": "Tue, 01 Dec 2026 08:00:07 GMT"}), SYNC)
    assert decision.action is SubmitAction.REPLAY_SAME_KEY
    assert decision.retry_delay_ms == 7000


@pytest.mark.parametrize(("context", "refused"), [
    ({"live_attempt": False}, "lease_expired_after_submitting"),
    ({"elapsed_since_first_send_ms": 86_400_000}, "fence_retention_exceeded"),
    # The budget spent AND another proof missing: the other proof is why, the effect unknown.
    ({"sends_used": 3, "live_attempt": False}, "lease_expired_after_submitting"),
    ({"remaining_budget_ms": 0, "live_attempt": False}, "lease_expired_after_submitting"),
    ({"remaining_budget_ms": 0, "elapsed_since_first_send_ms": 86_400_000}, "fence_retention_exceeded"),
    # A replay now would land after the key's retention: that, not the budget, is why.
    ({"sends_used": 3, "elapsed_since_first_send_ms": 86_399_999}, "fence_retention_exceeded"),
])
def test_fenced_replay_refusals_make_the_effect_unknown(context: dict[str, Any], refused: str) -> None:
    decision = _classify(reached_peer(), SYNC, **context)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.replay_refused == refused
    assert decision.reason is SubmitReason.MAY_HAVE_REACHED_PEER


@pytest.mark.parametrize(("context", "spent"), [
    ({"sends_used": 3}, "budget_exhausted"),
    ({"sends_used": 7}, "budget_exhausted"),
    ({"remaining_budget_ms": 0}, "budget_exhausted"),
    # Time spent, and the key's last millisecond: still deferred (the takeover re-checks the age).
    ({"remaining_budget_ms": 0, "elapsed_since_first_send_ms": 86_399_999}, "budget_exhausted"),
])
def test_a_spent_budget_under_the_certified_fence_defers_the_replay(context: dict[str, Any], spent: str) -> None:
    # Only the budget is spent (replays or time): the attempt stays SUBMITTING, no transition, and
    # the next wake-up's takeover replays the same request (seed: a certified fence authorizes it).
    for outcome in (reached_peer(), *(response(status) for status in (408, 429, 502, 503, 504))):
        decision = _classify(outcome, SYNC, **context)
        assert decision.action is SubmitAction.DEFER_REPLAY
        assert decision.reason is SubmitReason.FENCED_REPLAY_DEFERRED
        assert decision.move is None and decision.target is None
        assert decision.replay_refused == spent


@pytest.mark.parametrize("status", [500, 501, 505, 507, 599])
@pytest.mark.parametrize("context", [{"sends_used": 3}, {"remaining_budget_ms": 0}])
def test_the_receivers_own_5xx_is_replayed_in_run_but_never_deferred(status: int, context: dict[str, Any]) -> None:
    # A receiver that saves its answer per key (Stripe) replays its 500 to every same-key retry: a
    # later wake-up cannot settle it, so once the budget is spent the effect is unknown (operator).
    assert _classify(response(status), SYNC).action is SubmitAction.REPLAY_SAME_KEY
    decision = _classify(response(status), SYNC, **context)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.replay_refused == "budget_exhausted"


@pytest.mark.parametrize("failure", [None, FailureKind.CONNECT_ERROR, FailureKind.CREDENTIAL_UNAVAILABLE])
def test_a_replay_that_never_started_proves_nothing_of_the_earlier_send(failure: FailureKind | None) -> None:
    # The first send may have reached the receiver; its replay was refused at connect. That is no
    # proof of absence: the attempt replays again (or defers), never RETRY_WAIT / NONE_PROVEN.
    first = _classify(not_started(failure=failure), SYNC)
    assert first.move is not None and first.move.transition_id == "request_not_started_retry"
    again = _classify(not_started(failure=failure), SYNC, sends_used=2, replaying=True)
    assert again.action is SubmitAction.REPLAY_SAME_KEY
    spent = _classify(not_started(failure=failure), SYNC, sends_used=3, replaying=True)
    assert spent.action is SubmitAction.DEFER_REPLAY
    unfenced = _classify(not_started(failure=failure), UNFENCED, sends_used=2, replaying=True)
    assert unfenced.move is not None and unfenced.move.transition_id == "request_outcome_unknown"


@pytest.mark.parametrize("prof", [UNFENCED, profile(SYNC_PROFILE, mutation_fence={"key_payload_binding": "not_bound"})])
def test_a_spent_budget_without_a_certified_fence_is_the_unknown_effect(prof: OperationProfile) -> None:
    decision = _classify(reached_peer(), prof, sends_used=3, attempts_used=3)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.replay_refused == "fence_not_certified"


def test_a_bare_conflict_or_unproven_duplicate_is_never_deferred() -> None:
    # A 409 may mean the original is still running: never replayed, now or later.
    for outcome in (response(409), response(409, {"/unrelated": "x"})):
        decision = _classify(outcome, SYNC, sends_used=3, attempts_used=3)
        assert decision.action is SubmitAction.APPLY_TRANSITION
        assert decision.move is not None and decision.move.transition_id == "request_outcome_unknown"


def test_fence_not_bound_to_payload_never_replays() -> None:
    unbound = profile(SYNC_PROFILE, mutation_fence={"key_payload_binding": "not_bound"})
    decision = _classify(reached_peer(), unbound)
    assert decision.move is not None and decision.move.transition_id == "request_outcome_unknown"


# --- 2. accepted --------------------------------------------------------------------------------


def test_async_accepted_with_receipt_is_accepted_undetermined() -> None:
    decision = _classify(response(202, {"/job_id": "job_1"}), ASYNC)
    _assert_move(decision, "receipt_accepted", "accepted_ack_accepted")
    assert decision.target is not None and decision.target.remote_effect is RemoteEffect.UNDETERMINED
    assert decision.reason is SubmitReason.ACCEPTED
    assert decision.receipt is not None and decision.receipt.receipt_id == "job_1"
    assert decision.receipt.receipt_digest == hash_fields("restproof.runtime.receipt", {"id": "job_1"})


@pytest.mark.parametrize("status", [200, 201])
def test_sync_accepted_with_receipt_goes_to_verification(status: int) -> None:
    decision = _classify(response(status, {"/receipt_id": "rcpt_1"}), SYNC)
    _assert_move(decision, "sync_response_succeeded", "verifying_succeeded")
    assert decision.receipt is not None and decision.receipt.receipt_id == "rcpt_1"


@pytest.mark.parametrize("scalars", [{}, {"/job_id": None}, {"/job_id": True}, {"/job_id": "has space"},
                                     {"/job_id": ""}, {"/other": "job_1"}])
def test_accepted_without_valid_receipt_is_protocol_unknown(scalars: dict[str, Any]) -> None:
    decision = _classify(response(202, scalars), ASYNC)
    _assert_move(decision, "sync_response_unclassified", "verifying_protocol_unknown",
                 code=ErrorCode.PROTOCOL_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is SubmitReason.ACCEPTED_WITHOUT_RECEIPT
    assert decision.receipt is None


def test_integer_receipt_is_accepted_as_text() -> None:
    decision = _classify(response(202, {"/job_id": 42}), ASYNC)
    assert decision.receipt is not None and decision.receipt.receipt_id == "42"


def test_sync_profile_without_receipt_fields_succeeds_without_receipt() -> None:
    bare = profile(SYNC_PROFILE, acknowledgement={"receipt": {}, "duplicate": None})
    decision = _classify(response(200), bare)
    _assert_move(decision, "sync_response_succeeded", "verifying_succeeded")
    assert decision.receipt is None


# --- 3. duplicates ------------------------------------------------------------------------------


def test_async_duplicate_with_receipt_resumes_observation() -> None:
    decision = _classify(response(409, {"/job_id": "job_orig"}), ASYNC)
    _assert_move(decision, "receipt_accepted", "accepted_ack_accepted")
    assert decision.reason is SubmitReason.DUPLICATE_PROVEN
    assert decision.receipt is not None and decision.receipt.receipt_id == "job_orig"


def test_sync_duplicate_with_receipt_goes_to_verification() -> None:
    decision = _classify(response(409, {"/receipt_id": "rcpt_orig"}), SYNC)
    _assert_move(decision, "sync_response_succeeded", "verifying_succeeded")
    assert decision.reason is SubmitReason.DUPLICATE_PROVEN


@pytest.mark.parametrize("prof", [
    SYNC,  # receipt missing: a bare duplicate
    profile(SYNC_PROFILE, acknowledgement={"duplicate": {"requires_receipt_for_same_delivery_key": False}}),
    profile(SYNC_PROFILE, mutation_fence={"key_payload_binding": "not_bound"}),
], ids=["bare", "receipt_not_required", "key_not_bound"])
def test_unproven_duplicate_is_unknown(prof: OperationProfile) -> None:
    scalars = {} if prof is SYNC else {"/receipt_id": "rcpt_orig"}
    decision = _classify(response(409, scalars), prof)
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is SubmitReason.DUPLICATE_UNPROVEN


@pytest.mark.parametrize("prof", [
    profile(SYNC_PROFILE, acknowledgement={"duplicate": None}),
    profile(SYNC_PROFILE, acknowledgement={"duplicate": {"statuses": [422]}}),
    no_fence(SYNC_PROFILE),
], ids=["no_duplicate_rule", "other_duplicate_status", "unfenced"])
def test_bare_409_is_unknown_and_never_replayed(prof: OperationProfile) -> None:
    decision = _classify(response(409, {"/receipt_id": "rcpt_x"}), prof)
    expected = SubmitReason.DUPLICATE_UNPROVEN if prof.mutation_fence.type == "none" else SubmitReason.BARE_CONFLICT
    _assert_move(decision, "request_outcome_unknown", "finalized_not_accepted_outcome_lost",
                 code=ErrorCode.REMOTE_EFFECT_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is expected


# --- 4. rejections, 6. unclassified -------------------------------------------------------------


@pytest.mark.parametrize("status", [411, 413, 414, 415])
def test_pre_processing_rejection_is_proven(status: int) -> None:
    decision = _classify(response(status), ASYNC)
    _assert_move(decision, "sync_response_failed", "verifying_failed")
    assert decision.reason is SubmitReason.PROVEN_REJECTION
    assert decision.rejection_proven is True


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 410, 422, 499])
def test_other_client_errors_fail_without_proof_of_absence(status: int) -> None:
    decision = _classify(response(status), SYNC)
    _assert_move(decision, "sync_response_failed", "verifying_failed")
    assert decision.reason is SubmitReason.RECEIVER_REJECTED
    assert decision.rejection_proven is False


@pytest.mark.parametrize("status", [100, 204, 207, 299, 301, 303, 307, 600])
def test_unlisted_status_is_protocol_unknown(status: int) -> None:
    decision = _classify(response(status, {"/receipt_id": "rcpt_1"}), SYNC)
    _assert_move(decision, "sync_response_unclassified", "verifying_protocol_unknown",
                 code=ErrorCode.PROTOCOL_UNKNOWN, exit_class=ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert decision.reason is SubmitReason.UNCLASSIFIED_STATUS


# --- receipts, contract ---------------------------------------------------------------------------


def test_receipt_from_header_and_optional_fields() -> None:
    fields = {"id": Extractor(header="Location"), "token": Extractor(body_json_pointer="/token", required=False)}
    outcome = response(202, headers={"location": "mock/v1/dataset-jobs/job_9"})
    assert outcome.response is not None
    receipt = extract_receipt(outcome.response, fields)
    assert receipt is not None and receipt.receipt_id == "mock/v1/dataset-jobs/job_9"
    with_token = response(202, {"/token": "t1"}, headers={"location": "mock/v1/dataset-jobs/job_9"})
    assert with_token.response is not None
    other = extract_receipt(with_token.response, fields)
    assert other is not None and other.receipt_id == receipt.receipt_id
    assert other.receipt_digest != receipt.receipt_digest
    assert other.receipt_digest == hash_fields("restproof.runtime.receipt",
                                               {"id": "mock/v1/dataset-jobs/job_9", "token": "t1"})


def test_receipt_id_prefers_the_id_field_and_skips_missing_optional_fields() -> None:
    fields = {"note": Extractor(body_json_pointer="/note", required=False), "code": Extractor(body_json_pointer="/c"),
              "id": Extractor(body_json_pointer="/i")}
    outcome = response(202, {"/c": "c1", "/i": "i1"})
    assert outcome.response is not None
    receipt = extract_receipt(outcome.response, fields)
    assert receipt is not None and receipt.receipt_id == "i1"
    assert receipt.receipt_digest == hash_fields("restproof.runtime.receipt", {"code": "c1", "id": "i1"})


def test_receipt_id_is_the_first_field_by_name_without_an_id_field() -> None:
    fields = {"zeta": Extractor(body_json_pointer="/z"), "alpha": Extractor(body_json_pointer="/a")}
    outcome = response(202, {"/z": "zz", "/a": "aa"})
    assert outcome.response is not None
    receipt = extract_receipt(outcome.response, fields)
    assert receipt is not None and receipt.receipt_id == "aa"
    empty = response(202, {})
    assert empty.response is not None and extract_receipt(empty.response, {}) is None
    only_optional = {"note": Extractor(body_json_pointer="/note", required=False)}
    assert extract_receipt(empty.response, only_optional) is None


def test_classification_outside_submitting_is_a_contract_defect() -> None:
    with pytest.raises(PolicyContractError, match="request_not_started_retry"):
        _classify(not_started(), current_name="sealed")


def test_every_decision_is_a_listed_transition_from_submitting() -> None:
    statuses = sorted({*range(100, 600, 7), 200, 201, 202, 409, 413, 429, 503})
    outcomes = [not_started(), reached_peer(), *(response(s, {"/job_id": "j", "/receipt_id": "r"}) for s in statuses)]
    seen: set[str] = set()
    for prof in (SYNC, ASYNC, UNFENCED, no_fence(ASYNC_PROFILE)):
        for outcome in outcomes:
            for attempts in (1, 3):
                decision = _classify(outcome, prof, attempts_used=attempts, sends_used=attempts)
                if decision.move is None:
                    assert decision.action in (SubmitAction.REPLAY_SAME_KEY, SubmitAction.DEFER_REPLAY)
                    continue
                listed = CONTRACT.transition_by_id(decision.move.transition_id, SUBMITTING)
                assert listed == decision.move.transition
                assert CONTRACT.is_legal(decision.move.target)
                seen.add(decision.move.transition_id)
    # receipt_running is left to the first poll: a submit response is never taken as a RUNNING observation;
    # a request that never started always waits in RETRY_WAIT (request_not_started_final is not automatic
    # any more: never a dead end).
    assert seen == {t.id for t in CONTRACT.transitions_from(SUBMITTING)} - {"receipt_running",
                                                                          "request_not_started_final"}


def test_only_an_accepted_answer_carries_result_counters() -> None:
    assert _classify(response(201, {"/receipt_id": "r"}), SYNC).carries_result_counters is True
    assert _classify(response(409, {"/receipt_id": "r"}), SYNC).carries_result_counters is False
    assert _classify(response(413), SYNC).carries_result_counters is False


@pytest.mark.parametrize(("attempts", "sends"), [(0, 0), (0, 1), (2, 1)])
def test_context_must_describe_a_sent_attempt(attempts: int, sends: int) -> None:
    with pytest.raises(ValueError, match="attempts_used"):
        SubmitContext(attempts_used=attempts, sends_used=sends, remaining_budget_ms=1,
                      elapsed_since_first_send_ms=0, now=NOW)
    assert SubmitContext(attempts_used=1, sends_used=1, remaining_budget_ms=1, elapsed_since_first_send_ms=0,
                         now=NOW).sends_used == 1
