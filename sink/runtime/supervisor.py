"""The delivery supervisor: the ONLY code that moves operation state (seed: "Execution algorithm"
steps 8-15, "Generic pseudocode", "Durable continuation contract").

It reads every child's state from the journal, never from process memory, and takes the one next
step that state permits:

* SEALED / RETRY_WAIT (effect NONE_PROVEN): a new attempt (``SubmitStep``), only under the retry
  guard; a proven not-started attempt waits its backoff, then the guarded ``retry_due``.
* SUBMITTING found by this process: another worker's attempt (crashed, or still running). Lease
  expiry never authorises a second mutation: once the mutation lease is ours the outcome is
  recorded as lost (UNKNOWN), to be observed or reconciled, never re-sent.
* ACCEPTED: the next check is made durable (``continuation_pending``); WAITING: read-only polling
  (``ObserveStep``) or, without ``--wait``, a pending result.
* VERIFYING: the verifier sets effect, verification and checkpoint eligibility independently.
* FINALIZED: nothing automatic remains; an eligible child joins the contiguous frontier, promoted
  under the checkpoint lease.

Async profiles run one child at a time (V1 ``max_in_flight_children: 1``): the next child starts
only after the previous one is terminal. Sync profiles drive up to ``limits.max_in_flight_children``
children side by side (``child_pool``), each in the same per-child order. Every write passes its
named failpoint.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import ExecutionState
from sink.contracts.transport import ResponseEvidence
from sink.journal.port import CapacityExhausted, JournalRejection, LeaseUnavailable
from sink.journal.records import FrontierResult, LeaseKind, OperationRow
from sink.runtime import plan_move
from sink.runtime.child_pool import drive_all, sync_child_width
from sink.runtime.failpoints import journal_point, request_point
from sink.runtime.journal_moves import JournalMoves, boundary_observer, facts_digest
from sink.runtime.observe_step import ObserveStep
from sink.runtime.outcome import ChildOutcome, ChildStatus, outcome_of
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.submit_step import SubmitStep
from sink.runtime.verification import (
    ExpectedDelivery,
    ReceiverSummary,
    VerificationEvidence,
    extract_counters,
    verify,
)

MAX_STEPS_PER_CHILD = 64
"""Every step moves the tuple forward along an acyclic contract path; a loop is a defect."""
TAKEOVER_PURPOSE = "restproof.runtime.takeover"


class SupervisorDefect(RuntimeError):
    """The supervisor met a state it has no rule for (never an input problem)."""


@dataclass(frozen=True, slots=True)
class ParentOutcome:
    parent_id: str
    children: tuple[ChildOutcome, ...]
    frontier: FrontierResult | None


@dataclass(slots=True)
class _Memory:
    """What this process saw while driving one child; lost on a crash, so only ever an
    optimisation over what the journal says (counters for verification, the last error code)."""

    response: ResponseEvidence | None = None
    rejection_proven: bool = False
    receiver_reported_partial: bool = False
    error_code: ErrorCode | None = None
    exit_class: ExitClass | None = None
    """The exit class the last move decided (a never-sent child: 3 or 2, which no code implies)."""
    retry_delay_ms: int = 0


class Supervisor:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig) -> None:
        self._ports = ports
        self._config = config
        self._moves = JournalMoves(ports.journal, ports.failpoint)
        self._submit = SubmitStep(ports, config)
        self._observe = ObserveStep(ports, config)

    def run_parent(self, parent_id: str) -> ParentOutcome:
        parent = self._ports.journal.load_parent(parent_id)
        async_family = self._config.profile.protocol_family == "async_bulk_job"
        outcomes: list[ChildOutcome] = []
        children = sorted(parent.children, key=lambda child: child.descriptor.ordinal)
        width = sync_child_width(self._config.profile)
        if width > 1:
            outcomes = drive_all(self._drive_or_unavailable, [child.operation_id for child in children], width)
        else:
            for index, child in enumerate(children):
                outcome = self._drive_or_unavailable(child.operation_id)
                outcomes.append(outcome)
                if async_family and outcome.status is ChildStatus.PENDING:
                    outcomes.extend(outcome_of(later) for later in children[index + 1:])
                    break
        frontier = self._promote(parent_id) if any(o.status is ChildStatus.COMPLETED for o in outcomes) else None
        if frontier is not None and frontier.promoted_operation_ids:
            # Only the promoted children changed: re-reading the others would re-derive their exit
            # class from the journal alone and lose the one their last move decided.
            promoted = set(frontier.promoted_operation_ids)
            outcomes = [self._reread_outcome(o) if o.operation_id in promoted else o for o in outcomes]
        return ParentOutcome(parent_id, tuple(outcomes), frontier)

    def _drive_or_unavailable(self, operation_id: str) -> ChildOutcome:
        try:
            return self.drive(operation_id)
        except (CapacityExhausted, LeaseUnavailable):
            # Another worker holds the child, or every remote-job slot is held (an unknown effect
            # keeps its slot until reconciled), or the rate limits did not admit the request in
            # time: nothing was sent; try again later.
            return replace(outcome_of(self._row(operation_id)), exit_class=ExitClass.UNAVAILABLE)

    def drive(self, operation_id: str) -> ChildOutcome:
        """Take steps on one child until it is terminal, pending, or blocked."""
        memory = _Memory()
        started_ms = self._ports.clock.monotonic_ms()
        for _ in range(MAX_STEPS_PER_CHILD):
            row = self._row(operation_id)
            state = row.axes.execution_state
            if state is ExecutionState.FINALIZED or outcome_of(row).status is ChildStatus.BLOCKED:
                # Finalized, or an operator reconciliation is open: nothing automatic remains.
                self._release(row)
                outcome = outcome_of(row, memory.error_code)
                if memory.exit_class is not None:  # a move with a code carries that code's own class
                    outcome = replace(outcome, exit_class=memory.exit_class)
                return outcome
            if state is ExecutionState.PLANNED:
                # Admission wrote the complete topology with every payload sealed: the child may
                # now be offered for submission (``plan_sealed``).
                move = plan_move(self._ports.contract, row.axes, "plan_sealed")
                self._moves.apply(row, move, write="record_sealed", lease_owner=None,
                                  evidence_digest=facts_digest("restproof.runtime.sealed",
                                                               {"payload": row.descriptor.payload_digest}))
            elif state in (ExecutionState.SEALED, ExecutionState.RETRY_WAIT):
                self._attempt(row, memory, started_ms)
            elif state is ExecutionState.SUBMITTING:
                self._take_over(row, memory)
            elif state is ExecutionState.ACCEPTED:
                move = plan_move(self._ports.contract, row.axes, "continuation_pending")
                self._moves.apply(row, move, write="record_continuation", lease_owner=None,
                                  evidence_digest=facts_digest("restproof.runtime.next_check", {"op": operation_id}))
            elif state is ExecutionState.WAITING:
                if not self._config.wait_for_async:
                    return outcome_of(row)
                observed = self._observe.run(row, operation_started_ms=started_ms)
                memory.response = observed.last_response
                memory.receiver_reported_partial = observed.receiver_reported_partial
            elif state is ExecutionState.VERIFYING:
                self._verify(row, memory)
            else:
                raise SupervisorDefect(f"no rule for {state} (operation {operation_id})")
        raise SupervisorDefect(f"operation {operation_id} did not settle within {MAX_STEPS_PER_CHILD} steps")

    # ----- steps ---------------------------------------------------------------------------------
    def _attempt(self, row: OperationRow, memory: _Memory, started_ms: int) -> None:
        if row.axes.execution_state is ExecutionState.RETRY_WAIT and memory.retry_delay_ms:
            # A live worker waits the backoff it drew; a recovering one finds the retry due.
            self._ports.clock.sleep_ms(memory.retry_delay_ms)
            memory.retry_delay_ms = 0
        budget = self._config.profile.submit_retry.max_attempts
        if row.axes.execution_state is ExecutionState.RETRY_WAIT and row.attempt_count >= budget:
            move = plan_move(self._ports.contract, row.axes, "retry_abandoned")
            self._moves.apply(row, move, write="record_retry_abandoned", lease_owner=None,
                              evidence_digest=facts_digest("restproof.runtime.budget", {"attempts": row.attempt_count}))
            return
        result = self._submit.run(row, operation_started_ms=started_ms)
        memory.response = result.response
        memory.rejection_proven = result.decision.rejection_proven
        memory.retry_delay_ms = result.decision.retry_delay_ms or 0
        if result.decision.move is not None:
            memory.error_code = result.decision.move.error_code
            memory.exit_class = result.decision.move.exit_class

    def _take_over(self, row: OperationRow, memory: _Memory) -> None:
        """A SUBMITTING child this process did not send: wait for the mutation lease, then record
        the outcome as lost. Never a resend (seed: "Lease separation")."""
        self._lease(LeaseKind.MUTATION, row.operation_id)
        move = plan_move(self._ports.contract, row.axes, "request_outcome_unknown",
                         error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN)
        self._moves.apply(row, move, write="record_submit_result", lease_owner=self._config.worker_id,
                          evidence_digest=facts_digest(TAKEOVER_PURPOSE, {"attempts": row.attempt_count}))
        memory.error_code = ErrorCode.REMOTE_EFFECT_UNKNOWN

    def _verify(self, row: OperationRow, memory: _Memory) -> None:
        profile = self._config.profile
        expected: ExpectedDelivery = self._ports.requests.expected(row)
        counters = None if memory.response is None else extract_counters(memory.response, profile.result_policy)
        if counters is not None and counters.accepted is None and counters.rejected is None:
            counters = None  # an answer without counters (a proven duplicate): the summary decides
        evidence = VerificationEvidence(
            expected=expected, counters=counters, summary=self.read_summary(row),
            receiver_reported_partial=memory.receiver_reported_partial,
            rejection_proven=memory.rejection_proven, all_rows_accounted=profile.result_policy.all_rows_accounted,
        )
        decision = verify(evidence, current=row.axes, contract=self._ports.contract)
        self._moves.apply(row, decision.move, write="record_verification", lease_owner=None,
                          evidence_digest=facts_digest("restproof.runtime.verification",
                                                       {"outcome": decision.outcome.value, "rows": expected.rows}))
        memory.error_code = decision.move.error_code
        memory.exit_class = decision.move.exit_class

    def read_summary(self, row: OperationRow) -> ReceiverSummary | None:
        """The profile's certified read-only summary of the child's scope, if it has one and the
        receiver answered it within bounds; None otherwise (verification then rests on counters)."""
        spec = self._config.profile.verification
        request = self._ports.requests.summary_request(row)
        if spec is None or spec.summary is None or request is None:
            return None
        with self._ports.limiter.admit(RequestKind.SUMMARY):
            self._ports.failpoint(request_point("summary", "before_send"))
            outcome = self._ports.transport.send(request, timeouts=self._config.profile.timeouts,
                                                 observer=boundary_observer("summary", self._ports.failpoint))
        self._ports.failpoint(request_point("summary", "before_record_result"))
        response = outcome.response
        if response is None or response.status != 200:
            return None
        rows = response.scalars.get(spec.summary.row_count.body_json_pointer or "")
        digest = response.scalars.get(spec.summary.content_digest.body_json_pointer or "")
        if isinstance(rows, bool) or not isinstance(rows, int) or not isinstance(digest, str):
            return None
        return ReceiverSummary(row_count=rows, content_digest=digest)

    def promote_if_eligible(self, parent_id: str) -> FrontierResult | None:
        """Promote the contiguous frontier when some child is eligible (after a reconciliation)."""
        admitted = self._ports.journal.load_parent(parent_id)
        if not any(outcome_of(child).status is ChildStatus.COMPLETED for child in admitted.children):
            return None
        return self._promote(parent_id)

    def _promote(self, parent_id: str) -> FrontierResult:
        self._lease(LeaseKind.CHECKPOINT, parent_id)
        self._ports.failpoint(journal_point("promote_frontier", "before"))
        result = self._ports.journal.promote_frontier(parent_id, lease_owner=self._config.worker_id)
        self._ports.failpoint(journal_point("promote_frontier", "after"))
        self._release_subject(LeaseKind.CHECKPOINT, parent_id)
        return result

    # ----- plumbing ------------------------------------------------------------------------------
    def _lease(self, kind: LeaseKind, subject: str) -> None:
        self._moves.lease(kind, subject, self._config.worker_id, self._config.lease_ttl)

    def _release(self, row: OperationRow) -> None:
        for kind in (LeaseKind.MUTATION, LeaseKind.OBSERVATION):
            self._release_subject(kind, row.operation_id)

    def _release_subject(self, kind: LeaseKind, subject: str) -> None:
        lease = self._ports.journal.get_lease(kind, subject)
        if lease is None or lease.owner != self._config.worker_id:
            return
        self._ports.failpoint(journal_point("release_lease", "before"))
        # Expired and taken by another worker meanwhile: then it is theirs, nothing to release.
        with contextlib.suppress(JournalRejection):
            self._ports.journal.release_lease(kind, subject, self._config.worker_id)
        self._ports.failpoint(journal_point("release_lease", "after"))

    def _row(self, operation_id: str) -> OperationRow:
        row = self._ports.journal.get_operation(operation_id)
        if row is None:
            raise SupervisorDefect(f"operation {operation_id} is not in the journal")
        return row

    def _reread_outcome(self, outcome: ChildOutcome) -> ChildOutcome:
        return outcome_of(self._row(outcome.operation_id), outcome.error_code)
