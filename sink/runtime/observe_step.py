"""Read-only receipt polling of an accepted async child (seed: "Execution algorithm" step 11,
"Durable continuation contract": ``poll_receipt`` is the only automatic continuation).

Under the observation lease, GET the certified receipt URL, classify the answer
(``poll_classification``), append the bounded observation, and apply the listed transition. Never
a mutation: an expired receipt keeps the effect unknown, an external cancel is only observed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.contracts.state import ExecutionState
from sink.contracts.transport import ResponseEvidence
from sink.journal.records import LeaseKind, OperationRow
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, outcome_digest
from sink.runtime.poll_classification import PollContext, classify_poll
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind


class ReceiptMissing(RuntimeError):
    """An accepted child without a durable receipt: nothing to observe (a journal defect)."""


@dataclass(frozen=True, slots=True)
class ObservationResult:
    operation: OperationRow
    last_response: ResponseEvidence | None
    receiver_reported_partial: bool


class ObserveStep:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig) -> None:
        self._ports = ports
        self._config = config
        self._moves = JournalMoves(ports.journal, ports.failpoint)

    def run(self, row: OperationRow, *, operation_started_ms: int) -> ObservationResult:
        ports, config = self._ports, self._config
        profile = config.profile
        poll, budget = profile.acknowledgement.poll, profile.poll_budget
        receipt = ports.journal.get_receipt(row.operation_id)
        request = None if receipt is None else ports.requests.poll_request(row, receipt)
        if poll is None or budget is None or receipt is None or request is None:
            raise ReceiptMissing(f"operation {row.operation_id} is waiting without a pollable receipt")
        self._moves.lease(LeaseKind.OBSERVATION, row.operation_id, config.worker_id, config.lease_ttl)
        errors, polls, delay_ms = 0, row.observation_count, budget.initial_delay_ms
        deadline_ms = min(profile.timeouts.operation_total_ms, profile.timeouts.receiver_expiry_ms or 2**62)
        last: ResponseEvidence | None = None
        while True:
            with ports.limiter.admit(RequestKind.POLL):
                ports.failpoint(request_point("poll", "before_send"))
                outcome = ports.transport.send(request, timeouts=profile.timeouts,
                                               observer=boundary_observer("poll", ports.failpoint))
            ports.failpoint(request_point("poll", "before_record_result"))
            elapsed = ports.clock.monotonic_ms() - operation_started_ms
            decision = classify_poll(
                outcome, poll=poll, budget=budget, current=row.axes,
                context=PollContext(
                    polls_made=polls, consecutive_errors=errors, deadline_passed=elapsed >= deadline_ms
                ),
                contract=ports.contract,
            )
            polls, errors = polls + 1, decision.consecutive_errors
            if outcome.response is not None:
                last = outcome.response
            digest = outcome_digest(outcome)
            if decision.observation is not None:
                ports.failpoint(journal_point("record_observation", "before"))
                ports.journal.record_observation(
                    row.operation_id, observation_ordinal=row.observation_count + 1,
                    acknowledgement_state=decision.observation, evidence_digest=digest,
                    lease_owner=config.worker_id,
                )
                ports.failpoint(journal_point("record_observation", "after"))
                row = self._reread(row)
            if decision.move is not None:
                row = self._moves.apply(row, decision.move, write="record_poll_result",
                                        lease_owner=config.worker_id, evidence_digest=digest)
            if row.axes.execution_state is not ExecutionState.WAITING:
                return ObservationResult(row, last, decision.receiver_reported_partial)
            ports.clock.sleep_ms(delay_ms)
            delay_ms = min(budget.max_delay_ms, delay_ms * 2)

    def _reread(self, row: OperationRow) -> OperationRow:
        fresh = self._ports.journal.get_operation(row.operation_id)
        if fresh is None:  # pragma: no cover - an admitted operation is never deleted
            raise ReceiptMissing(f"operation {row.operation_id} vanished from the journal")
        return fresh
