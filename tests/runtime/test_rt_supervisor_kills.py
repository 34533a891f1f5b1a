"""The supervisor through its ports (issue 14): which requests it sends, which journal writes it
makes, and the outcome and exit class of each child, with a scripted transport instead of a
receiver (milliseconds per test). Verification evidence, takeover, retry wait and abandonment,
leases, frontier promotion and the step bound each fail when their rule alone is broken."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from rt_ports import (
    AsyncRequests,
    Died,
    Failpoints,
    FastRig,
    FixedJitter,
    JournalClock,
    ScriptedTransport,
    accepted,
    fast_rig,
    reads,
    summary_of,
)
from rt_support import ASYNC_PROFILE, not_started, profile, reached_peer, response

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect
from sink.contracts.transport import FailureKind, TransportPhase
from sink.journal.records import Actor, ActorKind, LeaseKind, LeaseRequest, TransitionRequest
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import ChildStatus
from sink.runtime.rate_limiter import RateLimitWaitExceeded, RequestKind
from sink.runtime.submit_step import SubmitStep
from sink.runtime.supervisor import MAX_STEPS_PER_CHILD, ParentOutcome, Supervisor, SupervisorDefect
from tests.supervisor.sv_support import SUMMARY, admit, sync_profile

TWO_DAYS = ("2026-08-01", "2026-08-02")


def _run(rig: FastRig) -> ParentOutcome:
    return Supervisor(rig.ports, rig.config).run_parent(rig.parent_id)


def _sync_rig(work: Path, submits: list, *, days: tuple[str, ...] = ("2026-08-01",), summary: bool = True,
              **kwargs: object) -> FastRig:
    transport = ScriptedTransport(submits)
    rig = fast_rig(work, transport, days=days, profile=kwargs.pop("profile", None) or sync_profile(summary=summary),
                   **kwargs)  # type: ignore[arg-type]
    transport.read = reads(rig.children)
    return rig


def _with_summary_answers(rig: FastRig, **answers: object) -> None:
    rig.transport.read = reads(rig.children, **answers)  # type: ignore[arg-type]


def _async_profile() -> OperationProfile:
    return profile(ASYNC_PROFILE).model_copy(update={"verification": SUMMARY})


def _job(job: str = "job-1") -> object:
    return response(202, {"/job_id": job})


def _poll(phase: str = "complete", accepted_rows: int = 3) -> object:
    return response(200, {"/phase": phase, "/accepted_rows": accepted_rows, "/rejected_rows": 0})


def _verification_evidence(outcome: str, rows: int = 3) -> str:
    return facts_digest("restproof.runtime.verification", {"outcome": outcome, "rows": rows})


# ----- parents, width, frontier --------------------------------------------------------------------
def test_a_clean_sync_parent_completes_each_child_and_promotes_the_frontier(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted(), accepted(receipt="r-2")], days=TWO_DAYS)
    outcome = _run(rig)
    assert [c.status for c in outcome.children] == [ChildStatus.COMPLETED] * 2
    assert [c.exit_class for c in outcome.children] == [ExitClass.OK] * 2
    assert [c.ordinal for c in outcome.children] == [0, 1]
    assert outcome.frontier is not None and outcome.frontier.frontier_order == 1
    assert [c.axes.checkpoint_state for c in outcome.children] == [CheckpointState.PROMOTED] * 2
    verified = [t for t in rig.journal.transitions() if t.transition_id == "verified_full"]
    assert [t.evidence_digest for t in verified] == [_verification_evidence("full")] * 2
    assert all(t.lease_owner is None for t in verified)
    ops = [row.operation_id for row in rig.rows()]
    assert ("promote", (rig.parent_id, "worker-1")) in rig.journal.writes
    assert {(LeaseKind.MUTATION, op, "worker-1") for op in ops} <= set(rig.journal.releases())  # type: ignore[arg-type]
    for point in ("journal.promote_frontier.before", "journal.promote_frontier.after",
                  "journal.release_lease.before", "journal.release_lease.after",
                  "journal.record_verification.before", "http.summary.before_send",
                  "http.summary.before_record_result"):
        assert point in rig.failpoints.seen, point
    gets = rig.transport.gets()
    assert len(gets) == 2 and all(g.timeouts is rig.config.profile.timeouts for g in gets)


def test_sync_children_are_driven_side_by_side_up_to_the_width(tmp_path: Path) -> None:
    both_sent = threading.Barrier(2, timeout=3)

    def meet(_: object) -> object:
        both_sent.wait()  # breaks (and the test fails) unless both children are in flight at once
        return accepted()

    rig = _sync_rig(tmp_path, [meet, meet], days=TWO_DAYS)
    assert [c.status for c in _run(rig).children] == [ChildStatus.COMPLETED] * 2


def test_an_async_child_pending_without_wait_stops_the_parent(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job()])
    rig = fast_rig(tmp_path, transport, days=TWO_DAYS, profile=_async_profile(), requests=AsyncRequests,
                   wait_for_async=False)
    outcome = _run(rig)
    assert [c.status for c in outcome.children] == [ChildStatus.PENDING, ChildStatus.NOT_REACHED]
    assert [c.exit_class for c in outcome.children] == [ExitClass.OK] * 2
    assert len(transport.posts()) == 1 and transport.gets() == [], "no poll without --wait, no second child"
    first = rig.row(0)
    assert first.axes.execution_state is ExecutionState.WAITING
    continuation = [t for t in rig.journal.transitions() if t.transition_id == "continuation_pending"]
    assert [(t.evidence_digest, t.lease_owner) for t in continuation] == [
        (facts_digest("restproof.runtime.next_check", {"op": first.operation_id}), None)]
    assert outcome.frontier is None


def test_async_children_run_one_after_the_other_when_waited_for(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job("job-1"), _job("job-2")])
    rig = fast_rig(tmp_path, transport, days=TWO_DAYS, profile=_async_profile(), requests=AsyncRequests)
    transport.read = reads(rig.children, poll=_poll())  # type: ignore[assignment]
    outcome = _run(rig)
    assert [c.status for c in outcome.children] == [ChildStatus.COMPLETED] * 2
    assert len(transport.posts()) == 2
    ops = [row.operation_id for row in rig.rows()]
    assert {(LeaseKind.OBSERVATION, op, "worker-1") for op in ops} <= set(rig.journal.releases())  # type: ignore[arg-type]


def test_a_receiver_reported_partial_result_is_never_verified_full(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job()])
    rig = fast_rig(tmp_path, transport, profile=_async_profile(), requests=AsyncRequests)
    transport.read = reads(rig.children, poll=_poll("incomplete"))  # type: ignore[assignment]
    child = _run(rig).children[0]
    assert child.status is ChildStatus.BLOCKED
    assert child.axes.remote_effect is not RemoteEffect.FULLY_APPLIED
    assert child.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    verifications = [t for t in rig.journal.transition_ids() if str(t).startswith(("verified_", "reconciled_"))]
    assert len(verifications) == 1, "an open reconciliation is operator territory: no second automatic step"


def test_a_child_held_by_another_worker_is_unavailable_and_holds_the_frontier(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted()], days=TWO_DAYS)
    held = rig.row(0).operation_id
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, held, "worker-2", timedelta(seconds=30)))
    outcome = _run(rig)
    first, second = outcome.children
    assert (first.status, first.exit_class) == (ChildStatus.NOT_REACHED, ExitClass.UNAVAILABLE)
    assert second.status is ChildStatus.COMPLETED
    assert outcome.frontier is not None and outcome.frontier.promoted_operation_ids == ()
    assert len(rig.transport.posts()) == 1


@contextmanager
def _no_submit_admitted(kind: RequestKind) -> Iterator[None]:
    if kind is RequestKind.SUBMIT:
        raise RateLimitWaitExceeded(kind, 60_000)
    yield


def test_a_submit_the_rate_limits_do_not_admit_is_unavailable_and_nothing_is_sent(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [], days=TWO_DAYS)
    rig.limiter.admit = _no_submit_admitted  # type: ignore[method-assign]
    outcome = _run(rig)
    unavailable = (ChildStatus.NOT_REACHED, ExitClass.UNAVAILABLE)
    assert [(c.status, c.exit_class) for c in outcome.children] == [unavailable] * 2
    assert outcome.frontier is None and rig.transport.sent == []


def test_promote_if_eligible_promotes_only_when_some_child_completed(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted(), response(400)], days=TWO_DAYS)
    refused = rig.children[1]
    _with_summary_answers(rig, summary=lambda c: summary_of(c, rows=0) if c is refused else summary_of(c))
    supervisor = Supervisor(rig.ports, rig.config)
    assert supervisor.promote_if_eligible(rig.parent_id) is None
    assert not any(kind == "promote" for kind, _ in rig.journal.writes)
    outcome = _run(rig)
    assert [c.status for c in outcome.children] == [ChildStatus.COMPLETED, ChildStatus.BLOCKED]
    assert outcome.frontier is not None and outcome.frontier.frontier_order == 0
    again = supervisor.promote_if_eligible(rig.parent_id)
    assert again is not None and again.frontier_order == 0


# ----- the per-child steps -------------------------------------------------------------------------
def test_a_planned_child_is_recorded_sealed_with_its_payload_as_evidence(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted()], admitted=False)
    rig.journal.drop_sealing = True
    rig.parent_id = admit(rig.journal, rig.children)
    rig.journal.drop_sealing = False
    rig.journal.writes.clear()
    row = rig.row()
    assert row.axes.execution_state is ExecutionState.PLANNED
    outcome = Supervisor(rig.ports, rig.config).drive(row.operation_id)
    sealed = rig.journal.transitions()[0]
    assert (sealed.transition_id, sealed.lease_owner, sealed.evidence_digest) == (
        "plan_sealed", None, facts_digest("restproof.runtime.sealed", {"payload": row.descriptor.payload_digest}))
    assert rig.failpoints.seen[:2] == ["journal.record_sealed.before", "journal.record_sealed.after"]
    assert outcome.status is ChildStatus.COMPLETED


def test_a_child_that_never_settles_stops_at_the_step_bound(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [], admitted=False)
    rig.journal.drop_sealing = True
    rig.parent_id = admit(rig.journal, rig.children)
    rig.journal.writes.clear()
    with pytest.raises(SupervisorDefect):
        Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert MAX_STEPS_PER_CHILD == 64  # the documented bound, pinned: the import follows a change
    assert rig.journal.transition_ids() == ["plan_sealed"] * 64


def test_an_unknown_operation_is_a_supervisor_defect(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [])
    with pytest.raises(SupervisorDefect):
        Supervisor(rig.ports, rig.config).drive("no-such-operation")


def test_a_submitting_child_found_after_lease_expiry_is_recorded_unknown_never_resent(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _sync_rig(tmp_path, [accepted()], failpoints=Failpoints(die_at="http.submit.before_send"),
                      journal_clock=clock)
    row = first.row()
    with pytest.raises(Died):
        SubmitStep(first.ports, first.config).run(row, operation_started_ms=0)
    clock.advance(first.config.lease_ttl.total_seconds() + 1)
    second = _sync_rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False)
    outcome = Supervisor(second.ports, second.config).drive(row.operation_id)
    assert (outcome.status, outcome.error_code, outcome.exit_class) == (
        ChildStatus.BLOCKED, ErrorCode.REMOTE_EFFECT_UNKNOWN, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert outcome.axes.remote_effect is RemoteEffect.UNKNOWN
    recorded = second.journal.transitions()
    assert [(t.transition_id, t.lease_owner, t.evidence_digest) for t in recorded] == [
        ("request_outcome_unknown", "worker-2", facts_digest("restproof.runtime.takeover", {"attempts": 1}))]
    assert second.transport.sent == [] and first.transport.sent == []
    assert (LeaseKind.MUTATION, row.operation_id, "worker-2") in second.journal.releases()


def test_an_open_operator_reconciliation_stops_every_automatic_step(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [reached_peer()] * 3)
    lost = Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert lost.axes.remote_effect is RemoteEffect.UNKNOWN
    row = rig.row()
    operator = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-1")
    rig.journal.transition(TransitionRequest(row.operation_id, row.revision, "reconciliation_opened", actor=operator))
    rig.journal.writes.clear()
    sent = len(rig.transport.sent)
    outcome = Supervisor(rig.ports, rig.config).drive(row.operation_id)
    assert outcome.axes.execution_state is ExecutionState.VERIFYING
    assert (outcome.status, outcome.exit_class) == (ChildStatus.BLOCKED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert rig.journal.transitions() == [] and len(rig.transport.sent) == sent, "no verification, no request"


def test_a_finished_child_never_releases_a_lease_another_worker_holds(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted()])
    op = rig.row().operation_id
    Supervisor(rig.ports, rig.config).drive(op)
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op, "worker-2", timedelta(seconds=30)))
    rig.journal.writes.clear()
    outcome = Supervisor(rig.ports, rig.config).drive(op)
    assert outcome.status is ChildStatus.COMPLETED
    assert rig.journal.releases() == []
    lease = rig.journal.get_lease(LeaseKind.MUTATION, op)
    assert lease is not None and lease.owner == "worker-2"


def test_a_proven_not_started_attempt_waits_its_backoff_then_retries(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()])
    outcome = Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert outcome.status is ChildStatus.COMPLETED
    assert rig.clock.slept == [250], "the drawn backoff (half of 500 ms) is waited before the retry"
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(outcome.operation_id)] == [1, 2]


def test_a_zero_backoff_retry_does_not_wait(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()], jitter=lambda _: FixedJitter(0.0))
    outcome = Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert outcome.status is ChildStatus.COMPLETED and rig.clock.slept == []


def test_a_recovering_worker_finds_the_retry_due_without_waiting(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()])
    SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert rig.row().axes.execution_state is ExecutionState.RETRY_WAIT
    outcome = Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert outcome.status is ChildStatus.COMPLETED and rig.clock.slept == []


def test_a_retry_wait_with_its_attempt_budget_spent_is_abandoned_without_a_send(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started()])
    SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
    rig.journal.writes.clear()
    spent = sync_profile().model_copy(update={"submit_retry": sync_profile().submit_retry.model_copy(
        update={"max_attempts": 1})})
    outcome = Supervisor(rig.ports, replace(rig.config, profile=spent)).drive(rig.row().operation_id)
    abandoned = rig.journal.transitions()[0]
    assert (abandoned.transition_id, abandoned.lease_owner, abandoned.evidence_digest) == (
        "retry_abandoned", None, facts_digest("restproof.runtime.budget", {"attempts": 1}))
    assert len(rig.transport.posts()) == 1
    assert outcome.axes.execution_state is ExecutionState.FINALIZED
    assert outcome.axes.remote_effect is RemoteEffect.NONE_PROVEN


@pytest.mark.parametrize("attempts, failure, exit_class", [
    (3, FailureKind.CONNECT_ERROR, ExitClass.UNAVAILABLE),  # every attempt refused: the receiver is down
    (1, FailureKind.CREDENTIAL_UNAVAILABLE, ExitClass.UNAVAILABLE),
    (1, FailureKind.AUTHORITY_REFUSED, ExitClass.INVALID_INPUT),
])
def test_a_child_never_sent_exits_with_the_class_its_last_move_decided(
    tmp_path: Path, attempts: int, failure: FailureKind, exit_class: ExitClass
) -> None:
    # docs/runtime-policies.md: request_not_started_final is exit 3 (2 for a refused authority),
    # never 5, which claims a proven terminal receiver failure.
    phase, steps = (TransportPhase.CONNECT, None) if failure is FailureKind.CONNECT_ERROR else (None, ())
    refused = not_started(failure, phase) if steps is None else not_started(failure, phase, steps)
    rig = _sync_rig(tmp_path, [refused] * attempts)
    outcome = Supervisor(rig.ports, rig.config).drive(rig.row().operation_id)
    assert rig.journal.transition_ids()[-1] == "request_not_started_final"
    assert outcome.axes.remote_effect is RemoteEffect.NONE_PROVEN
    assert (outcome.status, outcome.exit_class) == (ChildStatus.BLOCKED, exit_class)


def test_a_never_sent_child_keeps_its_exit_class_after_a_sibling_is_promoted(tmp_path: Path) -> None:
    # The outcomes are re-read after a frontier promotion: a re-read must not turn the refused
    # child's decided exit 3 back into the 5 a journal-only derivation gives.
    base = sync_profile()
    serial = base.model_copy(update={"limits": base.limits.model_copy(update={"max_in_flight_children": 1})})
    refused = not_started(FailureKind.CREDENTIAL_UNAVAILABLE, None, ())
    rig = _sync_rig(tmp_path, [accepted(), refused], days=TWO_DAYS, profile=serial)
    outcome = _run(rig)
    assert outcome.frontier is not None and outcome.frontier.frontier_order == 0
    assert [(c.status, c.exit_class) for c in outcome.children] == [
        (ChildStatus.COMPLETED, ExitClass.OK), (ChildStatus.BLOCKED, ExitClass.UNAVAILABLE)]
    assert outcome.children[0].axes.checkpoint_state is CheckpointState.PROMOTED
