"""The delivery supervisor: the ONLY code that moves operation state (seed: "Execution algorithm"
steps 8-15, "Generic pseudocode", "Durable continuation contract").

It reads every child's state from the journal, never from process memory, and takes the one next
step that state permits:

* SEALED / RETRY_WAIT (effect NONE_PROVEN): a new attempt (``SubmitStep``), only under the retry
  guard and within this wake-up's budget; a proven not-started attempt waits its backoff, then the
  guarded ``retry_due``; a run that finds a child in RETRY_WAIT is the wake-up that retries it.
* SUBMITTING found by this process: another worker's attempt whose lease expired (that worker is
  gone), or one deferred by an earlier wake-up whose budget was spent under a certified fence
  (its lease released, the pause says ``fenced_replay_due``). Its request is replayed only under
  a certified fence within the fence's retention (``take_over``); a grant attested never sent is
  REQUEST_NOT_STARTED; otherwise the outcome is recorded as lost (UNKNOWN), to be reconciled.
* ACCEPTED: the next check is made durable (``continuation_pending``); WAITING: read-only polling
  (``ObserveStep``) until terminal (``--mode wait``), one bounded pass (``resume --mode detach``),
  or none right after this process's own submit (``run --mode detach``).
* VERIFYING: the verifier sets effect, verification and checkpoint eligibility independently.
* FINALIZED, abandoned, or an open operator reconciliation: nothing automatic remains; an
  eligible child joins the contiguous frontier, promoted under the checkpoint lease.

Every lease is renewed by the ``LeaseKeeper`` while its step runs. Another live worker holding a
child, a full capacity scope or a rate limit stops that child for this run (contention: exit 3,
never an unknown effect). The result is read back from the journal (``outcome.read_result``).
Async profiles run one child at a time (V1 ``max_in_flight_children: 1``): the next child starts
only after the previous one is terminal. Sync profiles drive up to ``limits.max_in_flight_children``
children side by side (``child_pool``). Every write passes its named failpoint.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import ExecutionState
from sink.journal.port import CapacityExhausted, JournalRejection, LeaseUnavailable, RejectionReason
from sink.journal.records import Decision, FrontierResult, LeaseKind, OperationRow
from sink.runtime import plan_move
from sink.runtime.child_pool import drive_all, sync_child_width
from sink.runtime.failpoints import journal_point
from sink.runtime.journal_moves import JournalMoves, facts_digest
from sink.runtime.lease_keeper import LeaseKeeper
from sink.runtime.observe_step import ObservationMode, ObserveStep
from sink.runtime.outcome import UNRESOLVED_EFFECTS, RouteResult, is_completed, read_result
from sink.runtime.poll_timing import first_poll_delay_ms
from sink.runtime.ports import SupervisorConfig, SupervisorPorts
from sink.runtime.rate_limiter import RateLimitWaitExceeded
from sink.runtime.retry_guard import ReplayDeferred, RetryBudgetExhausted, may_take_over
from sink.runtime.submit_step import SubmitStep
from sink.runtime.verification import ReceiverSummary
from sink.runtime.verify_step import VerifyStep

MAX_STEPS_PER_CHILD = 64
"""Every step moves the tuple forward along an acyclic contract path; a loop is a defect."""
TAKEOVER_PURPOSE = "restproof.runtime.takeover"
CONTENTION = frozenset({RejectionReason.LEASE_NOT_HELD, RejectionReason.LEASE_HELD_BY_OTHER,
                        RejectionReason.STALE_REVISION})
"""Refusals that mean another live worker acts on the child now: stop, never guess."""
TERMINAL_REFUSALS = frozenset({ErrorCode.STALE_GENERATION, ErrorCode.APPEND_SCOPE_ALREADY_APPLIED})


def _word(code: ErrorCode) -> str:
    return code.value.removeprefix("REST_DELIVERY_").lower()


class SupervisorDefect(RuntimeError):
    """The supervisor met a state it has no rule for (never an input problem)."""


class Supervisor:
    def __init__(self, ports: SupervisorPorts, config: SupervisorConfig) -> None:
        self._ports = ports
        self._config = config
        self._moves = JournalMoves(ports.journal, ports.failpoint)
        self._keeper = LeaseKeeper(ports.journal, config.worker_id, config.lease_ttl, failpoint=ports.failpoint)
        self._submit = SubmitStep(ports, config, self._keeper)
        self._observe = ObserveStep(ports, config, self._keeper)
        self._verify = VerifyStep(ports, config)
        self._wake_attempts: dict[str, int] = {}
        """Attempts this process (one wake-up) made per child: bounds its work, decides nothing."""
        self._accepted_here: set[str] = set()

    def close(self) -> None:
        self._keeper.close()

    # ----- a parent ------------------------------------------------------------------------------
    def run_parent(self, parent_id: str) -> RouteResult:
        parent = self._ports.journal.load_parent(parent_id)
        children = [child.operation_id for child in sorted(parent.children, key=lambda c: c.descriptor.ordinal)]
        width = sync_child_width(self._config.profile)
        if width > 1:
            drive_all(self.drive_child, children, width)
        else:
            serial = self._config.profile.protocol_family == "async_bulk_job"
            for operation_id in children:
                row = self.drive_child(operation_id)
                if serial and row.axes.execution_state is not ExecutionState.FINALIZED and not row.abandoned:
                    break  # V1 async: the next child starts only after this one is terminal
        self.promote_if_eligible(parent_id)
        return self.result(parent_id)

    def result(self, parent_id: str) -> RouteResult:
        return read_result(self._ports.journal, parent_id, capacity_scope=self._config.capacity_scope,
                           viewer=self._config.worker_id)

    def drive_child(self, operation_id: str) -> OperationRow:
        """Drive one child as far as this run may; stop it on contention (its result says why)."""
        try:
            self.drive(operation_id)
        except ReplayDeferred:
            # The attempt stays SUBMITTING under its certified fence; its lease is released below,
            # and the next run or resume takes it over and replays the same request.
            self._pause(operation_id, Decision(None, 3, "fenced_replay_due"))
        except RetryBudgetExhausted:
            pass  # this wake-up's attempts are spent: RETRY_WAIT waits for the next run
        except LeaseUnavailable:
            pass  # another live worker holds the child
        except CapacityExhausted as exc:
            reason = "rate_limited" if isinstance(exc, RateLimitWaitExceeded) else "capacity_exhausted"
            self._pause(operation_id, Decision(None, 3, reason))
        except JournalRejection as exc:
            if exc.reason is RejectionReason.ORPHAN_MARKER:
                # Possible remote effect of an attempt the journal does not hold: an operator
                # retires the marker on evidence (``delivery retire-marker``) before any resend.
                self._pause(operation_id, Decision(None, 4, "orphan_marker"))
            elif exc.reason not in CONTENTION:
                raise
        finally:
            self._release(operation_id)
        return self._row(operation_id)

    # ----- one child -----------------------------------------------------------------------------
    def drive(self, operation_id: str) -> None:
        """Take steps on one child until it is terminal, pending, or stopped."""
        started_ms = self._ports.clock.monotonic_ms()
        for _ in range(MAX_STEPS_PER_CHILD):
            row = self._row(operation_id)
            state = row.axes.execution_state
            if row.abandoned or state is ExecutionState.FINALIZED or (
                    state is ExecutionState.VERIFYING and row.axes.remote_effect in UNRESOLVED_EFFECTS):
                return  # nothing automatic remains (an open reconciliation is operator territory)
            if state is ExecutionState.PLANNED:
                # Admission wrote the complete topology with every payload sealed (``plan_sealed``).
                move = plan_move(self._ports.contract, row.axes, "plan_sealed")
                self._moves.apply(row, move, write="record_sealed", lease_owner=None,
                                  evidence_digest=facts_digest("restproof.runtime.sealed",
                                                               {"payload": row.descriptor.payload_digest}))
            elif state in (ExecutionState.SEALED, ExecutionState.RETRY_WAIT):
                if not self._attempt(row, started_ms):
                    return
            elif state is ExecutionState.SUBMITTING:
                self._take_over(row, started_ms)
            elif state is ExecutionState.ACCEPTED:
                move = plan_move(self._ports.contract, row.axes, "continuation_pending")
                self._moves.apply(row, move, write="record_continuation", lease_owner=None,
                                  evidence_digest=facts_digest("restproof.runtime.next_check", {"op": operation_id}),
                                  next_check_after=self._first_poll())
            elif state is ExecutionState.WAITING:
                if not self._config.wait_for_async and operation_id in self._accepted_here:
                    return  # detached: return pending right after this process's own submit
                mode = ObservationMode.UNTIL_TERMINAL if self._config.wait_for_async else ObservationMode.ONE_PASS
                if self._observe.run(row, mode=mode).axes.execution_state is ExecutionState.WAITING:
                    return  # one pass done, or paused: the next run or resume observes again
            elif state is ExecutionState.VERIFYING:
                self._verify.run(row)
            else:  # pragma: no cover - every execution state has a branch above
                raise SupervisorDefect(f"no rule for {state} (operation {operation_id})")
        raise SupervisorDefect(f"operation {operation_id} did not settle within {MAX_STEPS_PER_CHILD} steps")

    def _first_poll(self) -> timedelta | None:
        if self._config.profile.poll_budget is None:
            return None
        return timedelta(milliseconds=first_poll_delay_ms(self._config.profile))

    def _attempt(self, row: OperationRow, started_ms: int) -> bool:
        """One new attempt; False when this wake-up stops here (the child waits for the next)."""
        wake = self._wake_attempts.get(row.operation_id, 0)
        if row.axes.execution_state is ExecutionState.RETRY_WAIT:
            if wake and row.next_check_at is None:
                return False  # a local cause (a missing credential): retrying now cannot help
            if not self._sleep_until_due(row):
                return False  # due later than a backoff (a server's Retry-After window): a later run
        self._wake_attempts[row.operation_id] = wake + 1
        try:
            result = self._submit.run(row, operation_started_ms=started_ms, wake_attempts=wake)
        except DeliveryError as exc:
            return self._refused(row, exc)
        if result.operation.axes.execution_state is ExecutionState.ACCEPTED:
            self._accepted_here.add(row.operation_id)
        return True

    def _refused(self, row: OperationRow, exc: DeliveryError) -> bool:
        """The critical transaction refused the submit before anything was sent."""
        if exc.code in TERMINAL_REFUSALS and row.axes.execution_state is ExecutionState.SEALED:
            # A stale generation stays refused for good: record it (``admission_refused``).
            move = plan_move(self._ports.contract, row.axes, "admission_refused", error_code=exc.code)
            self._moves.apply(row, move, write="record_submit_result", lease_owner=None,
                              evidence_digest=facts_digest("restproof.runtime.refused", {"code": exc.code.value}),
                              reason=_word(exc.code))
            return True
        if exc.code in (ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, ErrorCode.JOURNAL_EPOCH_BLOCKED):
            # Waits for a reconciliation elsewhere; the next run tries again. Said durably.
            self._pause(row.operation_id, Decision(exc.code, None, _word(exc.code)))
            return False
        raise exc

    def _take_over(self, row: OperationRow, started_ms: int) -> None:
        """A SUBMITTING child this process did not send, whose worker is gone (its mutation lease
        expired; taking it raises LeaseUnavailable while that worker is alive)."""
        ports = self._ports
        with self._keeper.held(LeaseKind.MUTATION, row.operation_id):
            row = self._row(row.operation_id)
            if row.axes.execution_state is not ExecutionState.SUBMITTING:
                return
            if ports.markers.not_sent_attested(row.operation_namespace, row.operation_id, row.attempt_count):
                # Its worker's critical commit was unconfirmed and it stopped without sending.
                self._submit.record_not_sent(row, "attested_not_sent")
                return
            attempts = ports.journal.list_attempts(row.operation_id)
            age_ms = -1 if not attempts else int((ports.journal.now() - attempts[-1].created_at).total_seconds() * 1000)
            verdict = may_take_over(row.axes, profile=self._config.profile, attempt_age_ms=age_ms)
            if verdict.permitted:
                ports.submit_gate.assert_submit_allowed()
                self._wake_attempts[row.operation_id] = self._wake_attempts.get(row.operation_id, 0) + 1
                self._submit.take_over(row, operation_started_ms=started_ms, attempt_age_ms=age_ms)
                return
            move = plan_move(ports.contract, row.axes, "request_outcome_unknown",
                             error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN)
            self._moves.apply(row, move, write="record_submit_result", lease_owner=self._config.worker_id,
                              evidence_digest=facts_digest(TAKEOVER_PURPOSE, {"attempts": row.attempt_count,
                                                                              "guard": verdict.reason.value}),
                              reason="worker_lost_after_send")

    def read_summary(self, row: OperationRow) -> ReceiverSummary | None:
        return self._verify.read_summary(row)

    # ----- checkpoint ----------------------------------------------------------------------------
    def promote_if_eligible(self, parent_id: str) -> FrontierResult | None:
        """Promote the contiguous frontier when some child is eligible."""
        admitted = self._ports.journal.load_parent(parent_id)
        if not any(is_completed(child.axes) for child in admitted.children):
            return None
        with self._keeper.held(LeaseKind.CHECKPOINT, parent_id):
            self._ports.failpoint(journal_point("promote_frontier", "before"))
            result = self._ports.journal.promote_frontier(parent_id, lease_owner=self._config.worker_id)
            self._ports.failpoint(journal_point("promote_frontier", "after"))
        self._release_subject(LeaseKind.CHECKPOINT, parent_id)
        return result

    # ----- plumbing ------------------------------------------------------------------------------
    def _sleep_until_due(self, row: OperationRow) -> bool:
        """Wait until the retry is due (``retry_time_reached``); False, without waiting, when it is due
        later than the longest backoff: the wait belongs to a later run, and the pause says why."""
        if row.next_check_at is None:
            return True
        remaining_ms = int((row.next_check_at - self._ports.journal.now()).total_seconds() * 1000)
        if remaining_ms > self._config.profile.submit_retry.max_delay_ms:
            self._pause(row.operation_id, Decision(None, 3, "retry_not_due"),
                        next_check_after=timedelta(milliseconds=remaining_ms))
            return False
        if remaining_ms > 0:
            self._ports.clock.sleep_ms(remaining_ms)
        return True

    def _pause(self, operation_id: str, decision: Decision, next_check_after: timedelta | None = None) -> None:
        """Say durably why this run stops the child (under its mutation lease, if still ours)."""
        with contextlib.suppress(LeaseUnavailable), self._keeper.held(LeaseKind.MUTATION, operation_id):
            self._ports.journal.record_pause(operation_id, lease_kind=LeaseKind.MUTATION,
                                             lease_owner=self._config.worker_id, decision=decision,
                                             next_check_after=next_check_after)

    def _release(self, operation_id: str) -> None:
        for kind in (LeaseKind.MUTATION, LeaseKind.OBSERVATION):
            self._release_subject(kind, operation_id)

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
