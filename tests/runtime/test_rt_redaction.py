"""No response content other than the receipt identity ever reaches a policy decision (which the
supervisor records and logs): sentinel values in bodies and headers never appear in decisions."""

from __future__ import annotations

from datetime import UTC, datetime

from rt_support import ASYNC_PROFILE, CONTRACT, SYNC_PROFILE, profile, response, tuple_named

from sink.contracts.transport import JsonScalar, TransportOutcome
from sink.runtime.backoff import DigestJitter
from sink.runtime.poll_classification import PollContext, classify_poll
from sink.runtime.submit_classification import SubmitContext, classify_submit
from sink.runtime.verification import ExpectedDelivery, VerificationEvidence, extract_counters, verify

SENTINEL = "SENTINEL-runtime-7f3a-CANARY"
NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)


def _leaky(status: int, **scalars: JsonScalar) -> TransportOutcome:
    return response(status, {"/detail": SENTINEL, "/row": SENTINEL, **scalars},
                    headers={"x-debug": SENTINEL, "retry-after": "1"})


def test_submit_decisions_hold_no_response_content() -> None:
    for prof in (profile(SYNC_PROFILE), profile(ASYNC_PROFILE)):
        for status in (200, 201, 202, 409, 413, 422, 429, 500, 503, 302):
            decision = classify_submit(
                _leaky(status, **{"/receipt_id": "rcpt_1", "/job_id": "job_1"}),
                profile=prof, current=tuple_named("submitting"),
                context=SubmitContext(1, 1, 600_000, 0, NOW), jitter=DigestJitter("op"), contract=CONTRACT,
            )
            assert SENTINEL not in repr(decision)


def test_poll_and_verification_decisions_hold_no_response_content() -> None:
    prof = profile(ASYNC_PROFILE)
    assert prof.acknowledgement.poll is not None and prof.poll_budget is not None
    for status in (200, 410, 500, 302):
        fields: dict[str, JsonScalar] = {"/phase": "complete", "/accepted_rows": 1, "/rejected_rows": 0}
        outcome = _leaky(status, **fields)
        decision = classify_poll(outcome, poll=prof.acknowledgement.poll,
                                 budget=prof.poll_budget, current=tuple_named("waiting_ack_running"),
                                 context=PollContext(0, 0, False), contract=CONTRACT)
        assert SENTINEL not in repr(decision)
        assert outcome.response is not None
        counters = extract_counters(outcome.response, prof.result_policy)
        verified = verify(VerificationEvidence(ExpectedDelivery(1), counters=counters),
                          current=tuple_named("verifying_succeeded"), contract=CONTRACT)
        assert SENTINEL not in repr(verified)
