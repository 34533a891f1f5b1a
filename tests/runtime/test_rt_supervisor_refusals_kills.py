"""The supervisor's refusals, pauses and takeover arithmetic through its ports (scripted transport,
SQLite journal in tmp_path, milliseconds per test): which refusal stops a child quietly, which is
recorded for good, which pauses it with a durable reason and which is raised; when a retry is due
and what the pause stores; how old a gone worker's attempt is; whose lease is contention. Each
test fails when its rule alone is broken."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from rt_ports import (
    AsyncRequests,
    Died,
    Failpoints,
    FastRig,
    JournalClock,
    accepted,
    drive,
    fast_rig,
    gone_after_send,
    reads,
    scripted_rig,
    submit_step,
)
from rt_support import ASYNC_PROFILE, no_fence, not_started, profile, reached_peer, response

from sink.contracts.errors import DeliveryError, ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.results import ChildStatus
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.contracts.transport import FailureKind
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import (
    Actor,
    ActorKind,
    Decision,
    LeaseKind,
    LeaseRequest,
    OperationRow,
    OperatorDecisionKind,
    OperatorDecisionRequest,
    TransitionRequest,
)
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import RouteResult
from sink.runtime.supervisor import Supervisor
from sink.testing import ScriptedTransport
from tests.supervisor.sv_support import SUMMARY, sync_profile

TWO_DAYS = ("2026-08-01", "2026-08-02")
OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="rc-1")


def _rig(work: Path, submits: list, **kwargs: object) -> FastRig:
    return scripted_rig(work, submits, **kwargs)  # type: ignore[arg-type]


def _run(rig: FastRig) -> RouteResult:
    return Supervisor(rig.ports, rig.config).run_parent(rig.parent_id)


class _Refusing:
    """A critical transaction that refuses with ``exc``; counts the calls."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.calls = 0

    def __call__(self, request: object) -> object:
        self.calls += 1
        raise self.exc


def _refuse(rig: FastRig, exc: Exception) -> _Refusing:
    refusing = _Refusing(exc)
    rig.journal.reserve_and_mark_submitting = refusing  # type: ignore[method-assign, assignment]
    return refusing


# ----- refusals of the journal (JournalRejection) ---------------------------------------------------
@pytest.mark.parametrize("reason", [RejectionReason.LEASE_NOT_HELD, RejectionReason.LEASE_HELD_BY_OTHER,
                                    RejectionReason.STALE_REVISION])
def test_a_refusal_meaning_another_live_worker_stops_the_child_quietly(
        tmp_path: Path, reason: RejectionReason) -> None:
    rig = _rig(tmp_path, [accepted()])
    refusing = _refuse(rig, JournalRejection(reason, "another worker acts on it"))
    op = rig.row().operation_id
    row = Supervisor(rig.ports, rig.config).drive_child(op)
    assert row.axes.execution_state is ExecutionState.SEALED and refusing.calls == 1
    assert rig.transport.sent == [] and rig.journal.transition_ids() == []
    assert (LeaseKind.MUTATION, op, "worker-1") in rig.journal.releases()


def test_an_orphan_marker_pauses_the_child_for_an_operator(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()])
    _refuse(rig, JournalRejection(RejectionReason.ORPHAN_MARKER, "attempt 1 is an orphan marker"))
    result = drive(rig)
    assert rig.row().decision == Decision(None, 4, "orphan_marker")
    assert (result.reason, result.exit_class) == ("orphan_marker", ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert rig.transport.sent == []


def test_any_other_journal_refusal_is_raised_and_the_lease_still_released(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()])
    _refuse(rig, JournalRejection(RejectionReason.MARKER_MISMATCH, "not the marker this submit published"))
    op = rig.row().operation_id
    with pytest.raises(JournalRejection) as raised:
        Supervisor(rig.ports, rig.config).drive_child(op)
    assert raised.value.reason is RejectionReason.MARKER_MISMATCH
    assert (LeaseKind.MUTATION, op, "worker-1") in rig.journal.releases()
    assert rig.transport.sent == []


# ----- refusals of the critical transaction (DeliveryError) -----------------------------------------
@pytest.mark.parametrize(("code", "word"), [(ErrorCode.STALE_GENERATION, "stale_generation"),
                                            (ErrorCode.APPEND_SCOPE_ALREADY_APPLIED, "append_scope_already_applied")])
def test_a_terminal_refusal_of_a_sealed_child_is_recorded_with_its_evidence(
        tmp_path: Path, code: ErrorCode, word: str) -> None:
    rig = _rig(tmp_path, [accepted()])
    refusing = _refuse(rig, DeliveryError(code, "refused for the test"))
    result = drive(rig)
    assert rig.journal.transition_ids() == ["admission_refused"]
    recorded = rig.journal.transitions()[-1]
    assert recorded.evidence_digest == facts_digest("restproof.runtime.refused", {"code": code.value})
    assert (recorded.lease_owner, recorded.decision.error_code, recorded.decision.reason) == (None, code, word)
    assert "journal.record_submit_result.before" in rig.failpoints.seen
    assert refusing.calls == 1 and rig.transport.sent == []
    assert (result.status, result.error_code, result.axes.execution_state) == (
        ChildStatus.BLOCKED, code, ExecutionState.FINALIZED)


def test_a_stale_generation_met_by_a_retry_is_raised_never_recorded(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [not_started()])
    submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    rig.journal_clock.advance(1)  # the retry is due
    _refuse(rig, DeliveryError(ErrorCode.STALE_GENERATION, "refused for the test"))
    rig.journal.writes.clear()
    with pytest.raises(DeliveryError) as raised:
        Supervisor(rig.ports, rig.config).drive_child(rig.row().operation_id)
    assert raised.value.code is ErrorCode.STALE_GENERATION
    assert rig.journal.transitions() == [] and rig.row().axes.execution_state is ExecutionState.RETRY_WAIT


@pytest.mark.parametrize(("code", "word"), [(ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, "overlapping_effect_in_flight"),
                                            (ErrorCode.JOURNAL_EPOCH_BLOCKED, "journal_epoch_blocked")])
def test_a_refusal_waiting_for_a_reconciliation_elsewhere_is_paused_after_one_try(
        tmp_path: Path, code: ErrorCode, word: str) -> None:
    rig = _rig(tmp_path, [accepted()])
    refusing = _refuse(rig, DeliveryError(code, "refused for the test"))
    result = drive(rig)
    assert refusing.calls == 1, "this run stops the child: no second try"
    assert rig.row().decision == Decision(code, None, word)
    assert rig.journal.transition_ids() == [] and rig.transport.sent == []
    assert (result.error_code, result.axes.execution_state) == (code, ExecutionState.SEALED)


def test_any_other_refusal_of_the_critical_transaction_is_raised(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()])
    _refuse(rig, DeliveryError(ErrorCode.UNSAFE_RETRY, "refused for the test"))
    with pytest.raises(DeliveryError) as raised:
        Supervisor(rig.ports, rig.config).drive_child(rig.row().operation_id)
    assert raised.value.code is ErrorCode.UNSAFE_RETRY
    assert rig.journal.transition_ids() == [] and rig.transport.sent == []


# ----- pauses -------------------------------------------------------------------------------------------
def test_a_deferred_replay_is_paused_as_unavailable_with_its_reason(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [reached_peer()] * 3)
    drive(rig)
    assert rig.row().decision == Decision(None, 3, "fenced_replay_due")


def _due_in(rig: FastRig, milliseconds: int) -> OperationRow:
    """A child proven not started (RETRY_WAIT) whose retry a pause made due in ``milliseconds``."""
    submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    op = rig.row().operation_id
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op, "worker-1", timedelta(seconds=30)))
    rig.journal.record_pause(op, lease_kind=LeaseKind.MUTATION, lease_owner="worker-1",
                             decision=Decision(None, 3, "rate_limited"),
                             next_check_after=timedelta(milliseconds=milliseconds))
    rig.journal.release_lease(LeaseKind.MUTATION, op, "worker-1")
    rig.journal.writes.clear()
    return rig.row()


def test_a_retry_due_later_than_the_longest_backoff_is_left_for_a_later_run(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [not_started(), accepted()])
    waiting = _due_in(rig, 60_000)
    assert waiting.next_check_at == rig.journal_clock.now + timedelta(seconds=60)
    result = drive(rig)
    assert rig.clock.slept == [] and len(rig.transport.posts()) == 1, "no wait, no attempt in this run"
    row = rig.row()
    assert row.decision == Decision(None, 3, "retry_not_due")
    assert row.next_check_at == waiting.next_check_at, "the pause keeps the retry's due time"
    assert row.axes.execution_state is ExecutionState.RETRY_WAIT
    assert (result.reason, result.exit_class) == ("retry_not_due", ExitClass.UNAVAILABLE)


def test_a_retry_due_exactly_at_the_longest_backoff_is_waited_for(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [not_started(), accepted()])
    longest = rig.config.profile.submit_retry.max_delay_ms
    _due_in(rig, longest)
    assert drive(rig).status is ChildStatus.COMPLETED
    assert rig.clock.slept == [longest] and len(rig.transport.posts()) == 2


def test_a_retry_due_in_one_millisecond_waits_that_millisecond(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [not_started(), accepted()])
    _due_in(rig, 1)
    assert drive(rig).status is ChildStatus.COMPLETED
    assert rig.clock.slept == [1]


def test_the_supervisors_leases_pass_their_failpoints(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()], failpoints=Failpoints(die_at="journal.acquire_lease.before"))
    with pytest.raises(Died):
        Supervisor(rig.ports, rig.config).drive_child(rig.row().operation_id)
    assert rig.transport.sent == [] and not any(kind == "acquire" for kind, _ in rig.journal.writes)


# ----- parents ------------------------------------------------------------------------------------------
def _serial(base: OperationProfile) -> OperationProfile:
    return base.model_copy(update={"limits": base.limits.model_copy(update={"max_in_flight_children": 1})})


def test_a_serial_sync_parent_drives_the_next_child_past_a_blocked_one(tmp_path: Path) -> None:
    missing = not_started(FailureKind.CREDENTIAL_UNAVAILABLE, None, ())
    rig = _rig(tmp_path, [missing, accepted()], days=TWO_DAYS, profile=_serial(sync_profile()))
    result = _run(rig)
    assert [c.status for c in result.children] == [ChildStatus.BLOCKED, ChildStatus.COMPLETED]
    assert len(rig.transport.posts()) == 2


def test_an_abandoned_async_child_is_left_alone_and_does_not_hold_back_the_next(tmp_path: Path) -> None:
    transport = ScriptedTransport([response(202, {"/job_id": "job-2"})])
    async_profile = profile(ASYNC_PROFILE).model_copy(update={"verification": SUMMARY})
    rig = fast_rig(tmp_path, transport, days=TWO_DAYS, profile=async_profile, requests=AsyncRequests)
    transport.read = reads(rig.children, poll=response(200, {"/phase": "complete", "/accepted_rows": 3,
                                                             "/rejected_rows": 0}))
    first = rig.row(0)
    assert first.axes.execution_state is ExecutionState.SEALED
    rig.journal.record_operator_decision(OperatorDecisionRequest(
        first.operation_id, OperatorDecisionKind.ABANDON, first.revision, OPERATOR,
        facts_digest("test.abandon", {"op": first.operation_id})))
    result = _run(rig)
    assert [c.status for c in result.children][1] is ChildStatus.COMPLETED
    [post] = transport.posts()
    second = rig.ports.requests.mutation_request(rig.row(1))
    assert post.request.body is not None and second.body is not None
    assert (post.request.path_and_query, post.request.body.digest) == (second.path_and_query, second.body.digest)
    assert rig.row(0).axes.execution_state is ExecutionState.SEALED and rig.row(0).attempt_count == 0


def test_the_result_never_counts_the_readers_own_lease_as_contention(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [])
    op = rig.row().operation_id
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op, "worker-1", timedelta(seconds=30)))
    [own] = Supervisor(rig.ports, rig.config).result(rig.parent_id).children
    [other] = Supervisor(rig.ports, replace(rig.config, worker_id="worker-2")).result(rig.parent_id).children
    assert (own.held_by, other.held_by) == (None, "worker-1")


# ----- takeover -----------------------------------------------------------------------------------------
def _died_after_send(work: Path, profile_: OperationProfile, clock: JournalClock) -> FastRig:
    return gone_after_send(_rig(work, [accepted()], failpoints=Failpoints(die_at="http.submit.after_body_sent"),
                                journal_clock=clock, profile=profile_), clock)


def test_a_takeover_a_minute_inside_the_keys_retention_replays(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _died_after_send(tmp_path, sync_profile(), clock)
    retention = first.config.profile.mutation_fence.retention_ttl_seconds or 0
    clock.advance(retention - 60 - (first.config.lease_ttl.total_seconds() + 1))  # the attempt is R - 60 s old
    second = _rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False)
    result = drive(second, first.row().operation_id)
    assert result.status is ChildStatus.COMPLETED and len(second.transport.posts()) == 1


def test_a_takeover_without_a_fence_stores_the_unknown_effects_code(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _died_after_send(tmp_path, no_fence(), clock)
    second = _rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False,
                  profile=no_fence())
    drive(second, first.row().operation_id)
    row = first.row()
    assert row.axes.remote_effect is RemoteEffect.UNKNOWN
    assert row.decision == Decision(ErrorCode.REMOTE_EFFECT_UNKNOWN, 4, "worker_lost_after_send")
    assert second.transport.sent == []


def test_a_takeover_counts_as_one_of_this_wake_ups_attempts(tmp_path: Path) -> None:
    # A gone worker's attempt is taken over (its replay answered by a bare conflict: UNKNOWN); an
    # operator then proves its absence and makes the retry due at once. The same process (one
    # wake-up) has spent one of its three attempts on the takeover: two new attempts remain.
    clock = JournalClock()
    first = _died_after_send(tmp_path, sync_profile(), clock)
    op = first.row().operation_id
    second = _rig(tmp_path, [response(409)] + [not_started()] * 3, worker="worker-2", journal_clock=clock,
                  admitted=False)
    supervisor = Supervisor(second.ports, second.config)
    supervisor.drive_child(op)
    lost = first.row()
    assert (lost.axes.execution_state, lost.axes.remote_effect) == (ExecutionState.FINALIZED, RemoteEffect.UNKNOWN)
    opened = second.journal.transition(TransitionRequest(op, lost.revision, "reconciliation_opened", actor=OPERATOR))
    second.journal.transition(TransitionRequest(
        op, opened.revision, "reconciled_absence_proven", actor=replace(OPERATOR, reconciliation_id="rc-2"),
        evidence_digest=facts_digest("test.absence", {"op": op}), next_check_after=timedelta(0)))
    supervisor.drive_child(op)
    assert len(second.transport.posts()) == 1 + 2
    assert first.row().axes.execution_state is ExecutionState.RETRY_WAIT
