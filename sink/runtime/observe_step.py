"""Read-only receipt polling of an accepted async child (seed: "Execution algorithm" step 11,
"Durable continuation contract": ``poll_receipt`` is the only automatic continuation).

Under the observation lease, renewed by the lease keeper for as long as the worker polls and
sleeps (a 30-minute job, a poll answered after 20 s), GET the certified receipt URL when its next
check is due (``poll_timing``), classify the answer (``poll_classification``), append the bounded
observation with the next check, and apply the listed transition with the receiver's counters.
Never a mutation: an expired receipt keeps the effect unknown, an external cancel is only observed.

``ObservationMode``: UNTIL_TERMINAL polls until a terminal answer (``--mode wait``); ONE_PASS polls
once now (``resume --mode detach``: one bounded observation pass, then pending or complete).
A pass that meets only errors (the error budget) or the rate limits pauses with a durable note
(exit 3, the child stays WAITING): the receipt did not expire because the receiver failed.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum

from sink.contracts.state import ExecutionState
from sink.contracts.transport import ResponseEvidence, TransportOutcome
from sink.journal.records import NO_DECISION, Decision, LeaseKind, OperationRow, ResultFacts
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, outcome_digest
from sink.runtime.lease_keeper import LeaseKeeper
from sink.runtime.poll_classification import PollContext, PollDecision, PollReason, classify_poll
from sink.runtime.poll_timing import next_poll_delay_ms
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RateLimitWaitExceeded, RequestKind
from sink.runtime.verification import extract_counters

RECEIVER_UNAVAILABLE = Decision(None, 3, "receiver_unavailable")
RATE_LIMITED = Decision(None, 3, "rate_limited")


class ReceiptMissing(RuntimeError):
    """An accepted child without a durable receipt: nothing to observe (a journal defect)."""


class ObservationMode(StrEnum):
    UNTIL_TERMINAL = "until_terminal"
    ONE_PASS = "one_pass"  # noqa: S105 - a mode name, not a password


class ObserveStep:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig, keeper: LeaseKeeper) -> None:
        self._ports = ports
        self._config = config
        self._keeper = keeper
        self._moves = JournalMoves(ports.journal, ports.failpoint)

    def run(self, row: OperationRow, *, mode: ObservationMode) -> OperationRow:
        ports, profile = self._ports, self._config.profile
        poll, budget = profile.acknowledgement.poll, profile.poll_budget
        receipt = ports.journal.get_receipt(row.operation_id)
        request = None if receipt is None else ports.requests.poll_request(row, receipt)
        if poll is None or budget is None or receipt is None or request is None:
            raise ReceiptMissing(f"operation {row.operation_id} is waiting without a pollable receipt")
        attempts = ports.journal.list_attempts(row.operation_id)
        # The certified deadline runs from the submission, on the database clock, whichever
        # process polls: min(operation total, receiver expiry) after the attempt was created.
        deadline_ms = min(profile.timeouts.operation_total_ms, profile.timeouts.receiver_expiry_ms or 2**62)
        deadline = None if not attempts else attempts[-1].created_at + timedelta(milliseconds=deadline_ms)
        with self._keeper.held(LeaseKind.OBSERVATION, row.operation_id):
            errors = 0
            first = True
            while True:
                if not (first and mode is ObservationMode.ONE_PASS):
                    self._wait_until_due(row)
                first = False
                try:
                    with ports.limiter.admit(RequestKind.POLL):
                        ports.failpoint(request_point("poll", "before_send"))
                        outcome = ports.transport.send(request, timeouts=profile.timeouts,
                                                       observer=boundary_observer("poll", ports.failpoint))
                except RateLimitWaitExceeded:
                    return self._pause(row, RATE_LIMITED, answered=False)
                ports.failpoint(request_point("poll", "before_record_result"))
                decision = classify_poll(
                    outcome, poll=poll, budget=budget, current=row.axes,
                    context=PollContext(polls_made=row.observation_count, consecutive_errors=errors,
                                        deadline_passed=deadline is not None and ports.journal.now() >= deadline),
                    contract=ports.contract,
                )
                errors = decision.consecutive_errors
                row = self._record(row, outcome, decision)
                if row.axes.execution_state is not ExecutionState.WAITING:
                    return row
                if decision.reason is PollReason.ERROR_BUDGET_EXHAUSTED:
                    return self._pause(row, RECEIVER_UNAVAILABLE, answered=False)
                if mode is ObservationMode.ONE_PASS:
                    if decision.observation is None:  # this pass got no answer at all
                        return self._pause(row, RECEIVER_UNAVAILABLE, answered=False)
                    return row

    def _next_check(self, row: OperationRow, *, answered: bool) -> timedelta:
        delay = next_poll_delay_ms(self._config.profile, answered=answered, polls_made=row.observation_count)
        return timedelta(milliseconds=delay)

    def _wait_until_due(self, row: OperationRow) -> None:
        due = row.next_check_at
        if due is None:
            return
        remaining_ms = int((due - self._ports.journal.now()).total_seconds() * 1000)
        # Never longer than the profile's longest poll wait (a next check further out is not ours).
        longest = max(next_poll_delay_ms(self._config.profile, answered=answered, polls_made=row.observation_count)
                      for answered in (True, False))
        if remaining_ms > 0:
            # Sleeping holds the observation lease: the keeper renews it meanwhile.
            self._ports.clock.sleep_ms(min(remaining_ms, longest))

    def _record(self, row: OperationRow, outcome: TransportOutcome, decision: PollDecision) -> OperationRow:
        ports, config = self._ports, self._config
        digest = outcome_digest(outcome)
        terminal = decision.move is not None and decision.move.target.execution_state is not ExecutionState.WAITING
        next_check = None if terminal else self._next_check(row, answered=decision.observation is not None)
        if decision.observation is not None:
            ports.failpoint(journal_point("record_observation", "before"))
            ports.journal.record_observation(
                row.operation_id, observation_ordinal=row.observation_count + 1,
                acknowledgement_state=decision.observation, evidence_digest=digest, lease_owner=config.worker_id,
                next_check_after=next_check,
            )
            ports.failpoint(journal_point("record_observation", "after"))
            row = self._reread(row)
        elif not terminal and decision.move is None:
            # A transient error: nothing observed; the next check is a retry interval away.
            row = ports.journal.record_pause(row.operation_id, lease_kind=LeaseKind.OBSERVATION,
                                             lease_owner=config.worker_id, decision=NO_DECISION,
                                             next_check_after=next_check)
        if decision.move is not None:
            facts = self._facts(outcome.response, decision) if terminal else None
            row = self._moves.apply(row, decision.move, write="record_poll_result", lease_owner=config.worker_id,
                                    evidence_digest=digest, reason=decision.reason.value, facts=facts,
                                    next_check_after=next_check)
        return row

    def _facts(self, response: ResponseEvidence | None, decision: PollDecision) -> ResultFacts:
        """The terminal answer's counters and "partially done" word, kept for verification."""
        counters = None if response is None else extract_counters(response, self._config.profile.result_policy)
        return ResultFacts(
            accepted_rows=None if counters is None else counters.accepted,
            rejected_rows=None if counters is None else counters.rejected,
            receiver_reported_partial=decision.receiver_reported_partial,
        )

    def _pause(self, row: OperationRow, decision: Decision, *, answered: bool) -> OperationRow:
        return self._ports.journal.record_pause(
            row.operation_id, lease_kind=LeaseKind.OBSERVATION, lease_owner=self._config.worker_id,
            decision=decision, next_check_after=self._next_check(row, answered=answered),
        )

    def _reread(self, row: OperationRow) -> OperationRow:
        fresh = self._ports.journal.get_operation(row.operation_id)
        if fresh is None:  # pragma: no cover - an admitted operation is never deleted
            raise ReceiptMissing(f"operation {row.operation_id} vanished from the journal")
        return fresh
