"""One mutation attempt of one child (seed: "Execution algorithm" steps 8-9, "Zero-RPO mutation
admission": the pre-submit sequence).

In this order, each step durable before the next begins:

1. the retry guard (``retry_guard.may_start_attempt``) permits a new attempt;
2. the mutation lease is taken (database clock);
3. the attempt ordinal is the journal's ``attempt_count + 1``; its MAY_ATTEMPT marker is published
   create-if-absent, binding operation, parent, delivery key, generation, expected revision,
   journal epoch and mutation intent;
4. ``reserve_and_mark_submitting``: the one critical transaction (domain lock, overlap and append
   checks, capacity, attempt row, grant claim, CAS to SUBMITTING);
5. only then the HTTP request; its outcome is classified (``submit_classification``) and recorded
   as one listed transition before the lease is released. A same-key replay under a certified
   fence stays inside this attempt; nothing else ever sends the mutation again.

A refusal of the critical transaction (intent conflict, stale generation, overlap in flight, an
orphan marker, a closed gate) raises before any byte is sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.contracts.transport import ResponseEvidence, TransportOutcome
from sink.journal.markers import MayAttemptMarker
from sink.journal.records import LeaseKind, OperationRow, SubmitRequest
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, outcome_digest
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.retry_guard import assert_mutation_permitted, may_start_attempt
from sink.runtime.submit_classification import SubmitAction, SubmitContext, SubmitDecision, classify_submit


@dataclass(frozen=True, slots=True)
class AttemptResult:
    operation: OperationRow
    """The row after the recorded transition."""
    decision: SubmitDecision
    response: ResponseEvidence | None
    """The last response of the attempt (its counters feed verification), if one arrived."""


class SubmitStep:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig) -> None:
        self._ports = ports
        self._config = config
        self._moves = JournalMoves(ports.journal, ports.failpoint)

    def run(self, row: OperationRow, *, operation_started_ms: int) -> AttemptResult:
        ports, config = self._ports, self._config
        ports.submit_gate.assert_submit_allowed()  # revocation: before anything durable or sent
        verdict = may_start_attempt(
            row.axes, attempts_used=row.attempt_count, max_attempts=config.profile.submit_retry.max_attempts
        )
        assert_mutation_permitted(verdict, row.operation_id)
        # The limits are asked before anything durable: a wait for a token never runs down a
        # mutation lease in SUBMITTING. The active-request slot is held until the result is recorded.
        with ports.limiter.admit(RequestKind.SUBMIT):
            return self._attempt(row, operation_started_ms)

    def _attempt(self, row: OperationRow, operation_started_ms: int) -> AttemptResult:
        ports, config = self._ports, self._config
        self._lease(LeaseKind.MUTATION, row.operation_id)
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
        ports.failpoint(journal_point("reserve_submitting", "before"))
        grant = ports.journal.reserve_and_mark_submitting(
            SubmitRequest(
                operation_id=row.operation_id, expected_revision=row.revision, attempt_ordinal=ordinal,
                marker_digest=stored.digest, lease_owner=config.worker_id, capacity_scope=config.capacity_scope,
            )
        )
        ports.failpoint(journal_point("reserve_submitting", "after"))
        return self._send_until_decided(grant.operation, operation_started_ms)

    def _lease(self, kind: LeaseKind, subject: str) -> None:
        self._moves.lease(kind, subject, self._config.worker_id, self._config.lease_ttl)

    def _send_until_decided(self, submitting: OperationRow, operation_started_ms: int) -> AttemptResult:
        ports, profile = self._ports, self._config.profile
        request = ports.requests.mutation_request(submitting)
        jitter = ports.jitter_for(submitting.operation_id)
        first_send_ms = ports.clock.monotonic_ms()
        sends = 0
        while True:
            if sends:
                # A replay is one more submit for the rate limit; it follows a wait (Retry-After,
                # backoff): renew the mutation lease after it, so the attempt is still provably ours
                # when its outcome is recorded.
                ports.limiter.take_token(RequestKind.SUBMIT)
                self._lease(LeaseKind.MUTATION, submitting.operation_id)
            ports.failpoint(request_point("submit", "before_send"))
            outcome: TransportOutcome = ports.transport.send(request, timeouts=profile.timeouts,
                                                             observer=boundary_observer("submit", ports.failpoint))
            sends += 1
            ports.failpoint(request_point("submit", "before_record_result"))
            now_ms = ports.clock.monotonic_ms()
            context = SubmitContext(
                attempts_used=submitting.attempt_count,
                sends_used=submitting.attempt_count - 1 + sends,
                remaining_budget_ms=max(0, profile.timeouts.operation_total_ms - (now_ms - operation_started_ms)),
                elapsed_since_first_send_ms=now_ms - first_send_ms,
                now=ports.journal.now(),
            )
            decision = classify_submit(
                outcome, profile=profile, current=submitting.axes, context=context, jitter=jitter,
                contract=ports.contract,
            )
            if decision.action is SubmitAction.REPLAY_SAME_KEY:
                ports.clock.sleep_ms(decision.retry_delay_ms or 0)
                continue
            if decision.move is None:  # pragma: no cover - classify_submit always names a move here
                raise RuntimeError("a submit decision without a replay must name a transition")
            self._lease(LeaseKind.MUTATION, submitting.operation_id)  # renew: the request may have been long
            recorded = self._moves.apply(
                submitting, decision.move, write="record_submit_result", lease_owner=self._config.worker_id,
                evidence_digest=outcome_digest(outcome), receipt=decision.receipt,
            )
            return AttemptResult(operation=recorded, decision=decision, response=outcome.response)
