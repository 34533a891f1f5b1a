"""One mutation attempt of one child (seed: "Execution algorithm" steps 8-9, "Zero-RPO mutation
admission": the pre-submit sequence), and the takeover of an attempt whose worker is gone.

In this order, each step durable before the next begins:

1. the retry guard (``retry_guard.may_start_attempt``) permits a new attempt in this wake-up;
2. the mutation lease is taken (database clock) and renewed by the lease keeper until the attempt's
   outcome is recorded, however long the request runs;
3. the attempt ordinal is the journal's ``attempt_count + 1``; its MAY_ATTEMPT marker is published
   create-if-absent, binding operation, parent, delivery key, generation, expected revision,
   journal epoch and mutation intent;
4. ``reserve_and_mark_submitting``: the one critical transaction (domain lock, overlap and append
   checks, capacity, attempt row, grant claim, CAS to SUBMITTING). If its COMMIT is unconfirmed
   (the journal went away with COMMIT in flight) nothing is sent: the worker rereads the journal
   when it returns (``sink.journal.reread``) and records what it proves, or, when it does not
   return in time, attests in the marker store that this grant's request never left;
5. only then the HTTP request; its outcome is classified (``submit_classification``) and recorded
   as one listed transition, with what it decided, before the lease is released. A same-key replay
   under a certified fence stays inside this attempt; nothing else ever sends the mutation again.
   When only the budget is spent under that fence the attempt stays SUBMITTING and
   ``ReplayDeferred`` is raised: the supervisor says so durably, releases the lease, and the next
   wake-up's ``take_over`` replays.

``take_over`` replays the request of a SUBMITTING attempt whose worker is gone, only under a
certified fence and within the fence's retention measured from the attempt row's creation on the
database clock (``retry_guard.may_take_over``): the receiver's proven-duplicate answer resolves it.

A refusal of the critical transaction (intent conflict, stale generation, overlap in flight, an
orphan marker, a closed gate) raises before any byte is sent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from sink.contracts.state import ExecutionState
from sink.contracts.transport import TransportOutcome
from sink.journal.markers import MayAttemptMarker
from sink.journal.outcome_records import MAX_NEXT_CHECK
from sink.journal.port import JournalRejection, JournalUnavailable, RejectionReason
from sink.journal.records import LeaseKind, OperationRow, ResultFacts, SubmitRequest
from sink.journal.reread import SubmitReread, must_reread, reread_submit
from sink.runtime import plan_move
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, facts_digest, outcome_digest
from sink.runtime.lease_keeper import LeaseKeeper
from sink.runtime.poll_timing import first_poll_delay_ms
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.retry_guard import ReplayDeferred, assert_mutation_permitted, may_start_attempt
from sink.runtime.submit_classification import (
    SubmitAction,
    SubmitContext,
    SubmitDecision,
    SubmitReason,
    classify_submit,
)
from sink.runtime.verification import extract_counters

REREAD_FOR_S = 10.0
"""How long a worker whose critical commit was unconfirmed waits for the journal to come back
before it attests that it sent nothing and stops (exit 3)."""
REREAD_EVERY_S = 0.5


class SentButNotRecorded(JournalUnavailable):
    """The journal went away after a mutation request was sent, before its outcome was recorded."""

    def __init__(self, operation_id: str, cause: JournalUnavailable) -> None:
        super().__init__(
            f"operation {operation_id}: the request was sent and may have reached the receiver, but its outcome "
            "could not be recorded; do not deliver it by another route: it resolves when the journal returns "
            "(the next run or resume observes or reconciles it)",
            outcome=cause.outcome, code=cause.code,
        )
        self.operation_id = operation_id


class CommitUnconfirmed(JournalUnavailable):
    """The critical commit's outcome is unknown and the journal did not return in time; nothing was sent."""


@dataclass(frozen=True, slots=True)
class AttemptResult:
    operation: OperationRow
    """The row after the recorded transition."""
    decision: SubmitDecision | None
    """None: no request was sent by this call (the attempt's grant was proven not sent)."""


class SubmitStep:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig, keeper: LeaseKeeper) -> None:
        self._ports = ports
        self._config = config
        self._keeper = keeper
        self._moves = JournalMoves(ports.journal, ports.failpoint)

    def run(self, row: OperationRow, *, operation_started_ms: int, wake_attempts: int) -> AttemptResult:
        """A new attempt; ``wake_attempts``: attempts this wake-up (run or resume) already made."""
        ports, config = self._ports, self._config
        ports.submit_gate.assert_submit_allowed()  # revocation: before anything durable or sent
        verdict = may_start_attempt(row.axes, attempts_used=wake_attempts,
                                    max_attempts=config.profile.submit_retry.max_attempts)
        assert_mutation_permitted(verdict, row.operation_id)
        with ports.limiter.admit(RequestKind.SUBMIT), self._keeper.held(LeaseKind.MUTATION, row.operation_id):
            return self._attempt(row, operation_started_ms, wake_attempts + 1)

    def take_over(self, row: OperationRow, *, operation_started_ms: int, attempt_age_ms: int) -> AttemptResult:
        """Replay a gone worker's SUBMITTING attempt (the caller holds its mutation lease and the
        retry guard permitted it): same attempt, same key, same bytes."""
        with self._ports.limiter.admit(RequestKind.SUBMIT), self._keeper.held(LeaseKind.MUTATION, row.operation_id):
            return self._send_until_decided(row, operation_started_ms, wake_attempts=1,
                                            first_send_age_ms=attempt_age_ms, taken_over=True)

    def _attempt(self, row: OperationRow, operation_started_ms: int, wake_attempts: int) -> AttemptResult:
        ports, config = self._ports, self._config
        ordinal = row.attempt_count + 1
        marker = MayAttemptMarker(
            operation_namespace=row.operation_namespace, operation_id=row.operation_id, parent_id=row.parent_id,
            delivery_key=row.delivery_key, attempt_ordinal=ordinal, generation=row.descriptor.generation,
            expected_revision=row.revision, journal_epoch=ports.journal.gate_status().journal_epoch,
            mutation_intent_digest=row.descriptor.mutation_intent_digest,
            created_at_utc=ports.journal.now().isoformat(),
        )
        ports.failpoint(journal_point("publish_marker", "before"))
        stored = ports.markers.create_if_absent(marker)
        ports.failpoint(journal_point("publish_marker", "after"))
        request = SubmitRequest(
            operation_id=row.operation_id, expected_revision=row.revision, attempt_ordinal=ordinal,
            marker_digest=stored.digest, lease_owner=config.worker_id, capacity_scope=config.capacity_scope,
        )
        ports.failpoint(journal_point("reserve_submitting", "before"))
        try:
            grant = ports.journal.reserve_and_mark_submitting(request)
        except JournalUnavailable as exc:
            if not must_reread(exc):
                raise  # nothing of the transaction was committed: nothing sent, nothing to resolve
            return self._after_unconfirmed_commit(row, request, exc)
        ports.failpoint(journal_point("reserve_submitting", "after"))
        return self._send_until_decided(grant.operation, operation_started_ms, wake_attempts=wake_attempts)

    def _after_unconfirmed_commit(self, row: OperationRow, request: SubmitRequest,
                                  cause: JournalUnavailable) -> AttemptResult:
        """Nothing was sent. Reread when the journal returns; otherwise attest it and stop."""
        ports = self._ports
        deadline = time.monotonic() + REREAD_FOR_S
        while True:
            try:
                found = reread_submit(ports.journal, ports.markers, request)
                break
            except JournalUnavailable:
                if time.monotonic() >= deadline:
                    # The grant may exist: its claim names this attempt; say in the marker store (an
                    # independent failure domain) that its request never left, for whoever takes over.
                    ports.markers.attest_not_sent(row.operation_namespace, row.operation_id, request.attempt_ordinal)
                    raise CommitUnconfirmed(
                        f"operation {row.operation_id}: the critical commit's outcome is unknown and the journal "
                        "did not return; nothing was sent (the next run resumes the attempt)",
                        outcome=cause.outcome, code=cause.code) from None
                time.sleep(REREAD_EVERY_S)
        if found is SubmitReread.ORPHAN:
            raise JournalRejection(RejectionReason.ORPHAN_MARKER,
                                   f"operation {row.operation_id}: attempt {request.attempt_ordinal} is an orphan "
                                   "marker; retire it with evidence before any resend")
        fresh = ports.journal.get_operation(row.operation_id) or row
        if found is SubmitReread.NOT_GRANTED:
            return AttemptResult(fresh, None)  # nothing happened: the same attempt may be made again
        return AttemptResult(self.record_not_sent(fresh, "journal_outage_not_sent"), None)

    def record_not_sent(self, row: OperationRow, reason: str) -> OperationRow:
        """The SUBMITTING attempt provably never sent its request: REQUEST_NOT_STARTED, retry now."""
        with self._keeper.held(LeaseKind.MUTATION, row.operation_id):
            move = plan_move(self._ports.contract, row.axes, "request_not_started_retry")
            return self._moves.apply(row, move, write="record_submit_result", lease_owner=self._config.worker_id,
                                     evidence_digest=facts_digest("restproof.runtime.not_sent",
                                                                  {"attempt": row.attempt_count, "reason": reason}),
                                     reason=reason, next_check_after=timedelta(0))

    def _send_until_decided(self, submitting: OperationRow, operation_started_ms: int, *, wake_attempts: int,
                            first_send_age_ms: int = 0, taken_over: bool = False) -> AttemptResult:
        """Send the attempt's request, replaying it under the fence, until a decision is recorded.
        ``taken_over``: a gone worker's (or a deferring run's) attempt, whose sends may have reached."""
        ports, profile = self._ports, self._config.profile
        request = ports.requests.mutation_request(submitting)
        jitter = ports.jitter_for(submitting.operation_id)
        first_send_ms = ports.clock.monotonic_ms() - first_send_age_ms
        sends = 0
        while True:
            if sends:
                # A replay is one more submit for the rate limit; it follows a wait (Retry-After, backoff).
                ports.limiter.take_token(RequestKind.SUBMIT)
            ports.failpoint(request_point("submit", "before_send"))
            outcome: TransportOutcome = ports.transport.send(request, timeouts=profile.timeouts,
                                                             observer=boundary_observer("submit", ports.failpoint))
            sends += 1
            ports.failpoint(request_point("submit", "before_record_result"))
            now_ms = ports.clock.monotonic_ms()
            context = SubmitContext(
                attempts_used=wake_attempts,
                sends_used=wake_attempts - 1 + sends,
                remaining_budget_ms=max(0, profile.timeouts.operation_total_ms - (now_ms - operation_started_ms)),
                elapsed_since_first_send_ms=now_ms - first_send_ms,
                now=ports.journal.now(),
                replaying=sends > 1 or taken_over,
            )
            decision = classify_submit(
                outcome, profile=profile, current=submitting.axes, context=context, jitter=jitter,
                contract=ports.contract,
            )
            if decision.action is SubmitAction.REPLAY_SAME_KEY:
                ports.clock.sleep_ms(decision.retry_delay_ms or 0)  # the keeper renews the lease meanwhile
                continue
            if decision.action is SubmitAction.DEFER_REPLAY:
                raise ReplayDeferred(submitting.operation_id)  # no transition: the attempt stays SUBMITTING
            if decision.move is None:  # pragma: no cover - classify_submit always names a move here
                raise RuntimeError("a submit decision without a replay must name a transition")
            try:
                recorded = self._moves.apply(
                    submitting, decision.move, write="record_submit_result", lease_owner=self._config.worker_id,
                    evidence_digest=outcome_digest(outcome), receipt=decision.receipt, reason=decision.reason_word,
                    facts=self._facts(outcome, decision), next_check_after=self._next_check(decision),
                )
            except JournalUnavailable as exc:
                raise SentButNotRecorded(submitting.operation_id, exc) from None
            return AttemptResult(operation=recorded, decision=decision)

    def _facts(self, outcome: TransportOutcome, decision: SubmitDecision) -> ResultFacts:
        """The answer's counters (when it is the receiver's result of this request) for verification."""
        counters = None
        # A proven duplicate answers for an earlier request: its body is no result of this one.
        if outcome.response is not None and decision.reason is not SubmitReason.DUPLICATE_PROVEN:
            counters = extract_counters(outcome.response, self._config.profile.result_policy)
        return ResultFacts(
            accepted_rows=None if counters is None else counters.accepted,
            rejected_rows=None if counters is None else counters.rejected,
            rejection_proven=decision.rejection_proven,
        )

    def _next_check(self, decision: SubmitDecision) -> timedelta | None:
        """When the next automatic step is due: the retry after the backoff (a transient not-started
        cause; a local one waits for the next wake-up), or the first poll of an accepted job."""
        target = decision.target
        if target is None:
            return None
        if decision.reason is SubmitReason.RETRY_AFTER_EXCEEDS_BUDGET and decision.retry_delay_ms is not None:
            # The server's window: no retry, even after a reconciliation, before it ends.
            return min(timedelta(milliseconds=decision.retry_delay_ms), MAX_NEXT_CHECK)
        if target.execution_state is ExecutionState.RETRY_WAIT:
            return None if decision.retry_delay_ms is None else timedelta(milliseconds=decision.retry_delay_ms)
        if target.execution_state is ExecutionState.ACCEPTED and self._config.profile.poll_budget is not None:
            return timedelta(milliseconds=first_poll_delay_ms(self._config.profile))
        return None
