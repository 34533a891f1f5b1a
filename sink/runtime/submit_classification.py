"""Classify the transport outcome of one mutation request (seed: "Safe retry and remote fencing",
"Failure and partial-result policy"; execution step 9).

The operation is SUBMITTING (the critical transaction committed before the first byte). The
answer is either a design-contract transition from ``submitting`` with its error code and exit
class, or a same-key replay inside the live attempt. In order:

1. REQUEST_NOT_STARTED, proven (no request step started, no byte handed to the kernel):
   ``request_not_started_retry`` (RETRY_WAIT, NONE_PROVEN), always: a request that never started is
   never a dead end. A transient cause (connect, DNS, TLS, pool) carries the backoff before the
   next attempt when one is left in this wake-up's budget and the delay fits the remaining time;
   a local cause (credential or artifact unavailable: exit 3; authority or redirect refused:
   exit 2) carries none, because retrying at once cannot help. Either way the child waits in
   RETRY_WAIT and the next run or resume (the orchestrator's retry is the wake-up) retries it.
2. An accepted status with every required receipt field: ``receipt_accepted`` (async: ACCEPTED,
   UNDETERMINED) or ``sync_response_succeeded`` (sync: VERIFYING, the verifier derives the
   effect). An accepted status without its receipt is ``sync_response_unclassified``.
3. A duplicate status whose receipt proves the same key and intent: the fence is certified and
   payload-bound and the profile requires the receipt for a same-key duplicate. Then the
   operation resumes observation exactly as if accepted. A bare duplicate: outcome unknown.
4. 411/413/414/415: the receiver refused to process the content (RFC 9110): proven rejection,
   ``sync_response_failed``; the verifier records NONE_PROVEN. Other 4xx (409 aside) are a
   definite FAILED acknowledgement whose effect the verifier derives.
5. A 409 that is not a proven duplicate: ``request_outcome_unknown`` (UNKNOWN, exit 4), never a
   resend, fence or not (a conflict may mean the original is still being applied).
   A lost response (bytes may have reached the peer), 408, 429, any 5xx: the same, UNLESS the
   certified fence permits a same-key replay now (``retry_guard.may_replay_same_key``: live
   attempt, certified payload-bound fence, budget left, inside the key's retention) and the
   server's Retry-After fits the remaining budget; the replay then waits at least that long. When
   only the budget (replays or time) is spent and the same proof holds otherwise
   (``retry_guard.may_defer_replay``), after a lost answer or a transient status
   (``DEFERRABLE_STATUSES``), the attempt stays SUBMITTING and the next wake-up's takeover replays
   it: ``defer_replay``, no transition. A replay that never started proves nothing of the
   attempt's earlier send (``SubmitContext.replaying``): it counts as a lost answer. A Retry-After
   beyond the budget reports ``REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET`` (the delay is never
   shortened); the effect stays UNKNOWN until a reconciliation proves it.
6. Anything else (1xx, 3xx, an unlisted 2xx): ``sync_response_unclassified`` (PROTOCOL_UNKNOWN).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sink.canonical import hash_fields
from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_ack import Extractor
from sink.contracts.state import StateTuple
from sink.contracts.transport import (
    FailureKind,
    ResponseEvidence,
    SendCertainty,
    TransportEvidence,
    TransportOutcome,
    TransportPhase,
)
from sink.design.query import DesignContract
from sink.journal.records import Receipt
from sink.runtime import ContractMove, plan_move, scalar_of
from sink.runtime.backoff import JitterSource, RetryBlocked, next_retry_delay
from sink.runtime.retry_guard import (
    GuardReason,
    fence_permits_replay,
    may_defer_replay,
    may_replay_same_key,
)

PRE_PROCESSING_REJECTIONS = frozenset({411, 413, 414, 415})
"""Statuses whose RFC 9110 meaning is "refused before processing the content": proof of no effect."""

DEFERRABLE_STATUSES = frozenset({408, 429, 502, 503, 504})
"""Answers of a receiver (or its gateway) that could not take the request now: a replay by a later
wake-up can be answered. A 500 or another 5xx is the receiver's own failure once it may have
executed, which receivers that save their answer per key (Stripe) replay to every same-key retry:
no later wake-up can settle it, so the effect is UNKNOWN for the operator once the budget is spent."""

_PHASES_AFTER_START = frozenset({
    TransportPhase.REQUEST_HEADERS, TransportPhase.REQUEST_BODY, TransportPhase.RESPONSE_HEADERS,
    TransportPhase.RESPONSE_BODY, TransportPhase.COMPLETE,
})
_REQUEST_STEPS = ("send_request_headers", "send_request_body", "receive_response_headers", "receive_response_body")
LOCAL_FAILURES: Mapping[FailureKind | None, ExitClass] = {
    FailureKind.CREDENTIAL_UNAVAILABLE: ExitClass.UNAVAILABLE,
    FailureKind.BODY_UNAVAILABLE: ExitClass.UNAVAILABLE,
    FailureKind.AUTHORITY_REFUSED: ExitClass.INVALID_INPUT,
    FailureKind.REDIRECT_REFUSED: ExitClass.INVALID_INPUT,
}
_RECEIPT_PURPOSE = "restproof.runtime.receipt"


class SubmitAction(StrEnum):
    APPLY_TRANSITION = "apply_transition"
    REPLAY_SAME_KEY = "replay_same_key"
    """Stay in the SUBMITTING attempt and send the identical request again after the delay."""
    DEFER_REPLAY = "defer_replay"
    """Stay in the SUBMITTING attempt, send nothing more now: the next wake-up's takeover replays."""


class SubmitReason(StrEnum):
    """Stable words; stored with the transition as the decision's reason."""

    NOT_STARTED_RETRY = "request_not_started"
    NOT_STARTED_BUDGET_EXHAUSTED = "request_not_started_budget_spent"
    NOT_STARTED_LOCAL = "request_not_started_local"
    RETRY_AFTER_EXCEEDS_BUDGET = "retry_after_exceeds_budget"
    ACCEPTED = "accepted"
    ACCEPTED_WITHOUT_RECEIPT = "accepted_without_receipt"
    DUPLICATE_PROVEN = "duplicate_proven"
    DUPLICATE_UNPROVEN = "duplicate_unproven"
    BARE_CONFLICT = "bare_conflict"
    PROVEN_REJECTION = "proven_rejection"
    RECEIVER_REJECTED = "receiver_rejected"
    MAY_HAVE_REACHED_PEER = "may_have_reached_peer"
    FENCED_REPLAY = "fenced_replay"
    FENCED_REPLAY_DEFERRED = "fenced_replay_deferred"
    UNCLASSIFIED_STATUS = "unclassified_status"


@dataclass(frozen=True, slots=True)
class SubmitContext:
    """Counters and clocks of the attempt being classified (database clock for ``now``)."""

    attempts_used: int
    """The journal's attempt_count, the current attempt included."""
    sends_used: int
    """Requests sent for this operation, the one being classified included."""
    remaining_budget_ms: int
    """What is left of the operation's time budget (``timeouts.operation_total_ms``)."""
    elapsed_since_first_send_ms: int
    """Since the first send of the current attempt: bounds a fenced replay by the key retention."""
    now: datetime
    live_attempt: bool = True
    """The classifying worker made this attempt and holds its mutation lease."""
    replaying: bool = False
    """An earlier send of this attempt may have reached the receiver (an in-run replay, or a
    takeover's): a replay that never started proves nothing of that earlier send."""

    def __post_init__(self) -> None:
        if self.attempts_used < 1 or self.sends_used < self.attempts_used:
            raise ValueError("a classified request belongs to an attempt: 1 <= attempts_used <= sends_used")


@dataclass(frozen=True, slots=True)
class SubmitDecision:
    action: SubmitAction
    reason: SubmitReason
    move: ContractMove | None
    """The transition to apply (None only for a same-key replay, now or deferred: it stays in
    SUBMITTING)."""
    receipt: Receipt | None = None
    retry_delay_ms: int | None = None
    """Delay before the next attempt (RETRY_WAIT) or before the replay."""
    rejection_proven: bool = False
    """The receiver refused the content before processing it (for the verifier)."""
    replay_refused: str | None = None
    """Why no same-key replay was made now (the outcome became unknown, or the replay was
    deferred): a ``GuardReason`` value, or the backoff's ``retry_after_exceeds_budget`` /
    ``budget_exhausted``."""
    reason_word: str | None = None
    """The stable word stored with the transition (the reason, or the local failure's kind); None
    for a replay, now or deferred, which stores no transition."""

    @property
    def target(self) -> StateTuple | None:
        return None if self.move is None else self.move.target

    @property
    def carries_result_counters(self) -> bool:
        """Whether this response is the receiver's result of the request (its counters are
        evidence). A proven duplicate answers for an earlier request: its body holds no result,
        so the verifier gets ``counters=None`` and relies on the read-only summary."""
        return self.reason is SubmitReason.ACCEPTED


def extract_receipt(response: ResponseEvidence, fields: Mapping[str, Extractor]) -> Receipt | None:
    """The receipt the profile's extractors name, or None when a required field is absent or not
    an identifier-safe scalar. The id is the ``id`` field, else the first field by name; the
    digest binds every extracted field, so two receipts differing in any field differ."""
    values: dict[str, str] = {}
    for name, extractor in fields.items():
        value = scalar_of(response, extractor)
        if isinstance(value, bool) or not isinstance(value, str | int):
            if extractor.required:
                return None
            continue
        values[name] = str(value)
    if not values:
        return None
    primary = values.get("id", values[min(values)])
    try:
        return Receipt(receipt_id=primary, receipt_digest=hash_fields(_RECEIPT_PURPOSE, dict(values)))
    except ValueError:
        return None  # not identifier-safe: it cannot name a receipt


def proves_not_started(evidence: TransportEvidence) -> bool:
    """REQUEST_NOT_STARTED holds only when every piece of evidence agrees that no request step
    started; a claimed NOT_STARTED contradicted by the phase or trace counts as reached."""
    if evidence.certainty is not SendCertainty.NOT_STARTED:
        return False
    if evidence.last_phase_started in _PHASES_AFTER_START:
        return False
    return not any(step in event for event in evidence.trace_steps for step in _REQUEST_STEPS)


def classify_submit(
    outcome: TransportOutcome,
    *,
    profile: OperationProfile,
    current: StateTuple,
    context: SubmitContext,
    jitter: JitterSource,
    contract: DesignContract,
) -> SubmitDecision:
    """The decision for one mutation request's outcome (see the module docstring for the rules)."""
    classifier = _Classifier(profile, current, context, jitter, contract)
    if outcome.response is None:
        if proves_not_started(outcome.evidence) and not context.replaying:
            return classifier.not_started(outcome.evidence.failure)
        return classifier.unknown_or_replay(SubmitReason.MAY_HAVE_REACHED_PEER, retry_after=None, deferrable=True)
    return classifier.response(outcome.response)


class _Classifier:
    def __init__(self, profile: OperationProfile, current: StateTuple, context: SubmitContext,
                 jitter: JitterSource, contract: DesignContract) -> None:
        self.profile = profile
        self.current = current
        self.context = context
        self.jitter = jitter
        self.contract = contract

    def _apply(self, transition_id: str, reason: SubmitReason, *, error_code: ErrorCode | None = None,
               exit_class: ExitClass | None = None, receipt: Receipt | None = None,
               retry_delay_ms: int | None = None, rejection_proven: bool = False,
               replay_refused: str | None = None, reason_word: str | None = None) -> SubmitDecision:
        move = plan_move(self.contract, self.current, transition_id, error_code=error_code, exit_class=exit_class)
        return SubmitDecision(SubmitAction.APPLY_TRANSITION, reason, move, receipt=receipt,
                              retry_delay_ms=retry_delay_ms, rejection_proven=rejection_proven,
                              replay_refused=replay_refused, reason_word=reason_word or reason.value)

    def not_started(self, failure: FailureKind | None) -> SubmitDecision:
        local = LOCAL_FAILURES.get(failure)
        if local is not None:
            # Nothing reached the receiver, and retrying now cannot help: wait in RETRY_WAIT for a
            # fix and the next run, which retries within policy (reason: the failure, e.g.
            # credential_unavailable, so the result can name what is missing).
            assert failure is not None
            return self._apply("request_not_started_retry", SubmitReason.NOT_STARTED_LOCAL, exit_class=local,
                               reason_word=failure.value)
        budget = self.profile.submit_retry
        if self.context.attempts_used >= budget.max_attempts:
            return self._apply("request_not_started_retry", SubmitReason.NOT_STARTED_BUDGET_EXHAUSTED,
                               exit_class=ExitClass.UNAVAILABLE)
        delay = next_retry_delay(
            self.context.attempts_used - 1, initial_delay_ms=budget.initial_delay_ms,
            max_delay_ms=budget.max_delay_ms, remaining_budget_ms=self.context.remaining_budget_ms,
            jitter=self.jitter,
        )
        if isinstance(delay, RetryBlocked):
            return self._apply("request_not_started_retry", SubmitReason.NOT_STARTED_BUDGET_EXHAUSTED,
                               exit_class=ExitClass.UNAVAILABLE)
        return self._apply("request_not_started_retry", SubmitReason.NOT_STARTED_RETRY, retry_delay_ms=delay.delay_ms,
                           exit_class=ExitClass.UNAVAILABLE)

    def response(self, response: ResponseEvidence) -> SubmitDecision:
        ack = self.profile.acknowledgement
        status = response.status
        if status in ack.accepted_statuses:
            return self._accepted(response, SubmitReason.ACCEPTED)
        if ack.duplicate is not None and status in ack.duplicate.statuses:
            if ack.duplicate.requires_receipt_for_same_delivery_key and fence_permits_replay(
                self.profile.mutation_fence
            ) and extract_receipt(response, ack.receipt) is not None:
                return self._accepted(response, SubmitReason.DUPLICATE_PROVEN)
            return self._unknown(SubmitReason.DUPLICATE_UNPROVEN)
        if status in PRE_PROCESSING_REJECTIONS:
            return self._apply("sync_response_failed", SubmitReason.PROVEN_REJECTION, rejection_proven=True)
        if status == 409:
            return self._unknown(SubmitReason.BARE_CONFLICT)
        if status not in (408, 429) and 400 <= status <= 499:
            return self._apply("sync_response_failed", SubmitReason.RECEIVER_REJECTED)
        if status in (408, 429) or 500 <= status <= 599:
            return self.unknown_or_replay(SubmitReason.MAY_HAVE_REACHED_PEER,
                                          retry_after=response.headers.get("retry-after"),
                                          deferrable=status in DEFERRABLE_STATUSES)
        return self._apply("sync_response_unclassified", SubmitReason.UNCLASSIFIED_STATUS,
                           error_code=ErrorCode.PROTOCOL_UNKNOWN)

    def _accepted(self, response: ResponseEvidence, reason: SubmitReason) -> SubmitDecision:
        fields = self.profile.acknowledgement.receipt
        receipt = extract_receipt(response, fields)
        if fields and receipt is None:
            return self._apply("sync_response_unclassified", SubmitReason.ACCEPTED_WITHOUT_RECEIPT,
                               error_code=ErrorCode.PROTOCOL_UNKNOWN)
        if self.profile.protocol_family == "async_bulk_job":
            return self._apply("receipt_accepted", reason, receipt=receipt)
        return self._apply("sync_response_succeeded", reason, receipt=receipt)

    def _unknown(self, reason: SubmitReason, replay_refused: str | None = None,
                 server_floor_ms: int | None = None) -> SubmitDecision:
        if replay_refused == "retry_after_exceeds_budget":
            # The server asked for a longer wait than the budget has: never shortened, never retried
            # early (seed "Safe retry"); the effect stays unknown until a reconciliation proves it,
            # and the server's window is kept as the earliest next attempt.
            return self._apply("request_outcome_unknown", SubmitReason.RETRY_AFTER_EXCEEDS_BUDGET,
                               error_code=ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET, replay_refused=replay_refused,
                               retry_delay_ms=server_floor_ms)
        return self._apply("request_outcome_unknown", reason, error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN,
                           replay_refused=replay_refused)

    def unknown_or_replay(self, reason: SubmitReason, *, retry_after: str | None,
                          deferrable: bool) -> SubmitDecision:
        if not fence_permits_replay(self.profile.mutation_fence):
            return self._unknown(reason, GuardReason.FENCE_NOT_CERTIFIED.value)
        budget = self.profile.submit_retry
        delay = next_retry_delay(
            self.context.sends_used - 1, initial_delay_ms=budget.initial_delay_ms, max_delay_ms=budget.max_delay_ms,
            remaining_budget_ms=self.context.remaining_budget_ms, jitter=self.jitter, retry_after=retry_after,
            now=self.context.now,
        )
        if isinstance(delay, RetryBlocked):
            if delay.error_code is None and deferrable:  # this wake-up's time is spent, nothing else
                return self._defer_or_unknown(reason, delay.reason)
            # RETRY_AFTER_EXCEEDS_BUDGET: the server's delay is why.
            return self._unknown(reason, delay.reason, delay.server_floor_ms)
        verdict = may_replay_same_key(
            self.current, profile=self.profile, sends_used=self.context.sends_used,
            live_attempt=self.context.live_attempt,
            elapsed_since_first_send_ms=self.context.elapsed_since_first_send_ms, delay_ms=delay.delay_ms,
        )
        if verdict.permitted:
            return SubmitDecision(SubmitAction.REPLAY_SAME_KEY, SubmitReason.FENCED_REPLAY, None,
                                  retry_delay_ms=delay.delay_ms)
        if verdict.reason is GuardReason.BUDGET_EXHAUSTED and deferrable:
            return self._defer_or_unknown(reason, verdict.reason.value)
        return self._unknown(reason, verdict.reason.value)

    def _defer_or_unknown(self, reason: SubmitReason, spent: str) -> SubmitDecision:
        """Only the budget is spent: a later wake-up replays when the fence still permits it."""
        verdict = may_defer_replay(self.current, profile=self.profile, live_attempt=self.context.live_attempt,
                                   elapsed_since_first_send_ms=self.context.elapsed_since_first_send_ms)
        if not verdict.permitted:
            return self._unknown(reason, verdict.reason.value)
        return SubmitDecision(SubmitAction.DEFER_REPLAY, SubmitReason.FENCED_REPLAY_DEFERRED, None,
                              replay_refused=spent)
