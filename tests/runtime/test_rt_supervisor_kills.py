"""The supervisor through its ports: which requests it sends, which journal writes it makes, and
the result of each child read back from the journal, with a scripted transport instead of a
receiver (milliseconds per test). Takeover, retry wait and the wake-up budget, contention,
capacity, refusals, leases, frontier promotion and the step bound each fail when their rule alone
is broken."""

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
    Failpoints,
    FastRig,
    FixedJitter,
    JournalClock,
    accepted,
    drive,
    fast_rig,
    gone_after_send,
    reads,
    scripted_rig,
    submit_step,
    summary_of,
)
from rt_support import ASYNC_PROFILE, no_fence, not_started, profile, reached_peer, response

from sink.contracts.errors import DeliveryError, ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.results import ChildStatus, DeliveryBlocked, DeliveryCompleted, DeliveryPending
from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect
from sink.contracts.transport import FailureKind, TransportPhase
from sink.journal.records import Actor, ActorKind, LeaseKind, LeaseRequest, TransitionRequest
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import RouteResult
from sink.runtime.rate_limiter import RateLimitWaitExceeded, RequestKind
from sink.runtime.supervisor import MAX_STEPS_PER_CHILD, Supervisor, SupervisorDefect
from sink.testing import ScriptedTransport
from tests.supervisor.sv_support import SUMMARY, admit, sync_profile

TWO_DAYS = ("2026-08-01", "2026-08-02")


def _run(rig: FastRig) -> RouteResult:
    return Supervisor(rig.ports, rig.config).run_parent(rig.parent_id)


def _sync_rig(work: Path, submits: list, *, summary: bool = True, **kwargs: object) -> FastRig:
    profile = kwargs.pop("profile", None) or sync_profile(summary=summary)
    return scripted_rig(work, submits, profile=profile, **kwargs)  # type: ignore[arg-type]


def _async_profile() -> OperationProfile:
    return profile(ASYNC_PROFILE).model_copy(update={"verification": SUMMARY})


def _job(job: str = "job-1") -> object:
    return response(202, {"/job_id": job})


def _poll(phase: str = "complete", accepted_rows: int = 3) -> object:
    return response(200, {"/phase": phase, "/accepted_rows": accepted_rows, "/rejected_rows": 0})


def _verification_evidence(outcome: str, rows: int = 3) -> str:
    return facts_digest("restproof.runtime.verification", {"outcome": outcome, "rows": rows})


def _serial(base: OperationProfile | None = None) -> OperationProfile:
    base = base or sync_profile()
    return base.model_copy(update={"limits": base.limits.model_copy(update={"max_in_flight_children": 1})})


# ----- parents, width, frontier --------------------------------------------------------------------
def test_a_clean_sync_parent_completes_each_child_and_promotes_the_frontier(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted(), accepted(receipt="r-2")], days=TWO_DAYS)
    result = _run(rig)
    assert isinstance(result, DeliveryCompleted) and result.exit_class is ExitClass.OK
    assert [c.ordinal for c in result.children] == [0, 1]
    assert result.frontier_order == 1
    assert [c.axes.checkpoint_state for c in result.children] == [CheckpointState.PROMOTED] * 2
    verified = [t for t in rig.journal.transitions() if t.transition_id == "verified_full"]
    assert [t.evidence_digest for t in verified] == [_verification_evidence("full")] * 2
    assert [t.decision.reason for t in verified] == ["full"] * 2
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
    assert isinstance(_run(rig), DeliveryCompleted)


def test_a_detached_async_child_is_pending_with_its_durable_next_check(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job()])
    rig = fast_rig(tmp_path, transport, days=TWO_DAYS, profile=_async_profile(), requests=AsyncRequests,
                   wait_for_async=False)
    result = _run(rig)
    assert isinstance(result, DeliveryPending) and result.continuation_kind == "poll_receipt"
    assert [c.status for c in result.children] == [ChildStatus.PENDING, ChildStatus.NOT_REACHED]
    assert [c.exit_class for c in result.children] == [ExitClass.OK] * 2
    assert len(transport.posts()) == 1 and transport.gets() == [], "no poll right after the own submit"
    first = rig.row(0)
    assert first.axes.execution_state is ExecutionState.WAITING
    interval = timedelta(milliseconds=rig.config.profile.timeouts.poll_interval_ms or 0)
    assert first.next_check_at == rig.journal_clock.now + interval == result.next_check_after
    continuation = [t for t in rig.journal.transitions() if t.transition_id == "continuation_pending"]
    assert [(t.evidence_digest, t.lease_owner, t.next_check_after) for t in continuation] == [
        (facts_digest("restproof.runtime.next_check", {"op": first.operation_id}), None, interval)]
    assert result.frontier_order is None


def test_a_later_detached_pass_polls_once_and_stays_pending(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job()])
    rig = fast_rig(tmp_path, transport, profile=_async_profile(), requests=AsyncRequests, wait_for_async=False)
    _run(rig)
    transport.read = reads(rig.children, poll=_poll("running"))  # type: ignore[assignment]
    result = _run(rig)  # the next wake-up (resume --mode detach): one bounded observation pass
    assert isinstance(result, DeliveryPending) and len(transport.gets()) == 1
    assert rig.clock.slept == [], "one pass polls now, without waiting for the next check"
    transport.read = reads(rig.children, poll=_poll("complete"))  # type: ignore[assignment]
    assert isinstance(_run(rig), DeliveryCompleted)


def test_async_children_run_one_after_the_other_when_waited_for(tmp_path: Path) -> None:
    transport = ScriptedTransport([_job("job-1"), _job("job-2")])
    rig = fast_rig(tmp_path, transport, days=TWO_DAYS, profile=_async_profile(), requests=AsyncRequests)
    transport.read = reads(rig.children, poll=_poll())  # type: ignore[assignment]
    assert isinstance(_run(rig), DeliveryCompleted)
    assert len(transport.posts()) == 2
    interval = rig.config.profile.timeouts.poll_interval_ms
    assert rig.clock.slept == [interval, interval], "each first poll waits the profile's poll interval"
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
    assert rig.row().facts.receiver_reported_partial
    verifications = [t for t in rig.journal.transition_ids() if str(t).startswith(("verified_", "reconciled_"))]
    assert len(verifications) == 1, "an open reconciliation is operator territory: no second automatic step"


def test_a_child_held_by_another_live_worker_is_contention_never_an_unknown_effect(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted()], days=TWO_DAYS)
    held = rig.row(0).operation_id
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, held, "worker-2", timedelta(seconds=30)))
    result = _run(rig)
    assert isinstance(result, DeliveryBlocked) and result.exit_class is ExitClass.UNAVAILABLE
    first, second = result.children
    assert (first.status, first.exit_class, first.reason, first.held_by) == (
        ChildStatus.PENDING, ExitClass.UNAVAILABLE, "held_by_other_worker", "worker-2")
    assert second.status is ChildStatus.COMPLETED
    assert result.frontier_order is None  # the earlier child holds the frontier
    assert len(rig.transport.posts()) == 1


def test_a_lease_lost_while_the_request_ran_stops_the_child_as_contention(tmp_path: Path) -> None:
    clock = JournalClock()
    rig: FastRig

    def overtaken(_: object) -> object:
        # The worker stalls past its lease and another live worker takes the child meanwhile.
        clock.advance(rig.config.lease_ttl.total_seconds() + 1)
        rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, rig.row().operation_id, "worker-2",
                                               timedelta(seconds=60)))
        return accepted()

    rig = _sync_rig(tmp_path, [overtaken], journal_clock=clock)
    result = drive(rig)
    assert (result.status, result.exit_class, result.held_by) == (ChildStatus.PENDING, ExitClass.UNAVAILABLE,
                                                                  "worker-2")
    assert result.error_code is None and rig.row().axes.execution_state is ExecutionState.SUBMITTING


@contextmanager
def _no_submit_admitted(kind: RequestKind) -> Iterator[None]:
    if kind is RequestKind.SUBMIT:
        raise RateLimitWaitExceeded(kind, 60_000)
    yield


def test_a_submit_the_rate_limits_do_not_admit_is_said_durably_and_nothing_is_sent(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [], days=TWO_DAYS)
    rig.limiter.admit = _no_submit_admitted  # type: ignore[method-assign]
    result = _run(rig)
    assert [(c.status, c.exit_class, c.reason) for c in result.children] == [
        (ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, "rate_limited")] * 2
    assert result.frontier_order is None and rig.transport.sent == []
    assert all(row.decision.reason == "rate_limited" for row in rig.rows())


def test_capacity_held_by_another_delivery_is_named(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [reached_peer()] * 3, profile=no_fence())
    rig.journal.configure_capacity("mock", 1)
    drive(rig)  # lost: UNKNOWN, and an unknown effect keeps its slot
    holder = rig.row().operation_id
    other = _sync_rig(tmp_path, [accepted()], days=("2026-08-05",), admitted=False)
    other.parent_id = admit(other.journal, other.children, parent_key="parent-2")
    other.journal.configure_capacity("mock", 1)  # the rig's own set-up resized the shared scope
    result = _run(other)
    [child] = result.children
    assert (child.status, child.exit_class, child.capacity_held_by) == (
        ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, (holder,))
    assert child.reason == "capacity_exhausted" and other.transport.posts() == []


def test_promote_if_eligible_promotes_only_when_some_child_completed(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted(), response(400)], days=TWO_DAYS)
    refused = rig.children[1]
    rig.transport.read = reads(rig.children, summary=lambda c: summary_of(c, rows=0) if c is refused
                               else summary_of(c))
    supervisor = Supervisor(rig.ports, rig.config)
    assert supervisor.promote_if_eligible(rig.parent_id) is None
    assert not any(kind == "promote" for kind, _ in rig.journal.writes)
    result = _run(rig)
    assert [c.status for c in result.children] == [ChildStatus.COMPLETED, ChildStatus.BLOCKED]
    assert result.frontier_order == 0
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
    result = drive(rig)
    sealed = rig.journal.transitions()[0]
    assert (sealed.transition_id, sealed.lease_owner, sealed.evidence_digest) == (
        "plan_sealed", None, facts_digest("restproof.runtime.sealed", {"payload": row.descriptor.payload_digest}))
    assert rig.failpoints.seen[:2] == ["journal.record_sealed.before", "journal.record_sealed.after"]
    assert result.status is ChildStatus.COMPLETED


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


# ----- takeover --------------------------------------------------------------------------------------
def _died_after(tmp_path: Path, point: str, profile_: OperationProfile, clock: JournalClock) -> FastRig:
    return gone_after_send(_sync_rig(tmp_path, [accepted()], failpoints=Failpoints(die_at=point), journal_clock=clock,
                                     profile=profile_), clock)


def test_a_submitting_child_without_a_certified_fence_is_recorded_unknown_never_resent(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _died_after(tmp_path, "http.submit.before_send", no_fence(), clock)
    row = first.row()
    second = _sync_rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False,
                       profile=no_fence())
    result = drive(second, row.operation_id)
    assert (result.status, result.error_code, result.exit_class, result.reason) == (
        ChildStatus.BLOCKED, ErrorCode.REMOTE_EFFECT_UNKNOWN, ExitClass.EFFECT_UNKNOWN_OR_MANUAL,
        "worker_lost_after_send")
    recorded = second.journal.transitions()
    assert [(t.transition_id, t.lease_owner, t.evidence_digest) for t in recorded] == [
        ("request_outcome_unknown", "worker-2",
         facts_digest("restproof.runtime.takeover", {"attempts": 1, "guard": "fence_not_certified"}))]
    assert second.transport.sent == [] and first.transport.sent == []
    assert (LeaseKind.MUTATION, row.operation_id, "worker-2") in second.journal.releases()


@pytest.mark.parametrize("died_at", ["http.submit.before_send", "http.submit.after_body_sent"])
def test_a_gone_workers_attempt_is_replayed_same_key_under_a_certified_fence(tmp_path: Path, died_at: str) -> None:
    clock = JournalClock()
    first = _died_after(tmp_path, died_at, sync_profile(), clock)
    row = first.row()
    second = _sync_rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False)
    result = drive(second, row.operation_id)
    assert result.status is ChildStatus.COMPLETED
    [replay] = second.transport.posts()
    original = first.ports.requests.mutation_request(row)
    assert replay.request.body is not None and original.body is not None
    assert (replay.request.method, replay.request.path_and_query, replay.request.semantic_headers,
            replay.request.body.digest) == (original.method, original.path_and_query, original.semantic_headers,
                                            original.body.digest), "the same request: same key, same bytes"
    assert [a.attempt_ordinal for a in second.journal.list_attempts(row.operation_id)] == [1], "same attempt"
    assert second.journal.transition_ids()[0] == "sync_response_succeeded"


def test_a_replay_beyond_the_fences_retention_is_never_made(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _died_after(tmp_path, "http.submit.after_body_sent", sync_profile(), clock)
    retention = first.config.profile.mutation_fence.retention_ttl_seconds or 0
    clock.advance(retention)  # the receiver no longer remembers the key
    second = _sync_rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False)
    result = drive(second, first.row().operation_id)
    assert (result.error_code, result.exit_class) == (ErrorCode.REMOTE_EFFECT_UNKNOWN,
                                                      ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert second.transport.sent == []


def test_a_grant_attested_never_sent_is_retried_without_an_unknown_effect(tmp_path: Path) -> None:
    clock = JournalClock()
    first = _died_after(tmp_path, "http.submit.before_send", no_fence(), clock)
    row = first.row()
    assert first.ports.markers.attest_not_sent(row.operation_namespace, row.operation_id, 1)
    second = _sync_rig(tmp_path, [accepted()], worker="worker-2", journal_clock=clock, admitted=False,
                       profile=no_fence())
    result = drive(second, row.operation_id)
    assert result.status is ChildStatus.COMPLETED
    ids = second.journal.transition_ids()
    assert ids[0] == "request_not_started_retry" and "request_outcome_unknown" not in ids
    assert second.journal.transitions()[0].decision.reason == "attested_not_sent"
    assert [a.attempt_ordinal for a in second.journal.list_attempts(row.operation_id)] == [1, 2]


def test_a_spent_budget_under_the_fence_returns_pending_and_the_next_wake_up_replays(tmp_path: Path) -> None:
    # The receiver restarts after committing: three lost answers spend this run's budget.
    rig = _sync_rig(tmp_path, [reached_peer()] * 3 + [response(409, {"/receipt_id": "r-1"})])
    op = rig.row().operation_id
    first = drive(rig)
    assert (first.status, first.exit_class, first.reason) == (ChildStatus.PENDING, ExitClass.UNAVAILABLE,
                                                              "fenced_replay_due")
    assert first.axes.execution_state is ExecutionState.SUBMITTING and first.error_code is None
    assert (LeaseKind.MUTATION, op, "worker-1") in rig.journal.releases(), "the next run may take it over"
    assert rig.journal.transition_ids() == []
    # The next wake-up (another process, at once: no lease to wait out) replays the same request;
    # the receiver's proven duplicate resolves the one attempt.
    second = drive(rig, supervisor=Supervisor(rig.ports, replace(rig.config, worker_id="worker-2")))
    assert second.status is ChildStatus.COMPLETED
    posts = rig.transport.posts()
    assert len(posts) == 4 and len({p.request.body.digest for p in posts if p.request.body}) == 1
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(op)] == [1], "the same attempt"
    assert "request_outcome_unknown" not in rig.journal.transition_ids()


def test_a_deferred_replay_past_the_keys_retention_is_never_made(tmp_path: Path) -> None:
    clock = JournalClock()
    rig = _sync_rig(tmp_path, [reached_peer()] * 3 + [accepted()], journal_clock=clock)
    first = drive(rig)
    assert first.reason == "fenced_replay_due"
    clock.advance(rig.config.profile.mutation_fence.retention_ttl_seconds or 0)
    later = drive(rig, supervisor=Supervisor(rig.ports, rig.config))
    assert (later.status, later.error_code) == (ChildStatus.BLOCKED, ErrorCode.REMOTE_EFFECT_UNKNOWN)
    assert len(rig.transport.posts()) == 3, "no send after the receiver forgot the key"


def test_an_open_operator_reconciliation_stops_every_automatic_step(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [response(409)])  # a bare conflict: never replayed, the effect unknown
    lost = drive(rig)
    assert lost.axes.remote_effect is RemoteEffect.UNKNOWN
    row = rig.row()
    operator = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-1")
    rig.journal.transition(TransitionRequest(row.operation_id, row.revision, "reconciliation_opened", actor=operator))
    rig.journal.writes.clear()
    sent = len(rig.transport.sent)
    result = drive(rig)
    assert result.axes.execution_state is ExecutionState.VERIFYING
    assert (result.status, result.exit_class) == (ChildStatus.BLOCKED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert rig.journal.transitions() == [] and len(rig.transport.sent) == sent, "no verification, no request"


def test_a_finished_child_never_releases_a_lease_another_worker_holds(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [accepted()])
    op = rig.row().operation_id
    drive(rig)
    rig.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op, "worker-2", timedelta(seconds=30)))
    rig.journal.writes.clear()
    assert drive(rig).status is ChildStatus.COMPLETED
    assert rig.journal.releases() == []
    lease = rig.journal.get_lease(LeaseKind.MUTATION, op)
    assert lease is not None and lease.owner == "worker-2"


# ----- not started: retry within this wake-up, then the next one --------------------------------------
def test_a_proven_not_started_attempt_waits_its_backoff_then_retries(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()])
    result = drive(rig)
    assert result.status is ChildStatus.COMPLETED
    assert rig.clock.slept == [250], "the drawn backoff (half of 500 ms), durable as next_check_at, is waited"
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(result.operation_id)] == [1, 2]


def test_a_zero_backoff_retry_does_not_wait(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()], jitter=lambda _: FixedJitter(0.0))
    assert drive(rig).status is ChildStatus.COMPLETED and rig.clock.slept == []


def test_a_recovering_worker_finds_the_retry_due_without_waiting(tmp_path: Path) -> None:
    rig = _sync_rig(tmp_path, [not_started(), accepted()])
    submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert rig.row().axes.execution_state is ExecutionState.RETRY_WAIT
    rig.journal_clock.advance(1)  # the backoff has passed on the database clock
    assert drive(rig).status is ChildStatus.COMPLETED and rig.clock.slept == []


def test_a_spent_wake_up_budget_leaves_retry_wait_for_the_next_run(tmp_path: Path) -> None:
    refused = not_started(FailureKind.CONNECT_ERROR, TransportPhase.CONNECT)
    rig = _sync_rig(tmp_path, [refused] * 3 + [accepted()])
    result = drive(rig)
    assert len(rig.transport.posts()) == rig.config.profile.submit_retry.max_attempts == 3
    assert rig.row().axes.execution_state is ExecutionState.RETRY_WAIT
    assert (result.status, result.exit_class, result.reason) == (
        ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, "request_not_started_budget_spent")
    assert "request_not_started_final" not in rig.journal.transition_ids()
    # The orchestrator's retry is the next wake-up: the same journal state, a fresh budget.
    assert drive(rig).status is ChildStatus.COMPLETED
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(result.operation_id)] == [1, 2, 3, 4]


@pytest.mark.parametrize(("failure", "exit_class"), [
    (FailureKind.CREDENTIAL_UNAVAILABLE, ExitClass.UNAVAILABLE),
    (FailureKind.BODY_UNAVAILABLE, ExitClass.UNAVAILABLE),
    (FailureKind.AUTHORITY_REFUSED, ExitClass.INVALID_INPUT),
])
def test_a_local_cause_waits_for_the_next_run_and_says_what_is_missing(
    tmp_path: Path, failure: FailureKind, exit_class: ExitClass
) -> None:
    rig = _sync_rig(tmp_path, [not_started(failure, None, ()), accepted()])
    result = drive(rig)
    assert len(rig.transport.posts()) == 1, "retrying at once cannot help: no second attempt in this run"
    assert (result.status, result.exit_class, result.reason) == (ChildStatus.BLOCKED, exit_class, failure.value)
    assert result.axes.remote_effect is RemoteEffect.NONE_PROVEN
    assert drive(rig).status is ChildStatus.COMPLETED, "the next run retries once the cause is fixed"


def test_a_never_sent_childs_exit_class_is_read_from_the_journal(tmp_path: Path) -> None:
    refused = not_started(FailureKind.CREDENTIAL_UNAVAILABLE, None, ())
    rig = _sync_rig(tmp_path, [accepted(), refused], days=TWO_DAYS, profile=_serial())
    result = _run(rig)
    assert result.frontier_order == 0
    assert [(c.status, c.exit_class) for c in result.children] == [
        (ChildStatus.COMPLETED, ExitClass.OK), (ChildStatus.BLOCKED, ExitClass.UNAVAILABLE)]
    # Another process reading the same journal says the same.
    assert Supervisor(rig.ports, rig.config).result(rig.parent_id) == result


# ----- refusals of the critical transaction --------------------------------------------------------------
class _RefusingJournal:
    def __init__(self, code: ErrorCode) -> None:
        self.code = code

    def __call__(self, request: object) -> object:
        raise DeliveryError(self.code, "refused for the test")


@pytest.mark.parametrize(("code", "exit_class", "state"), [
    (ErrorCode.STALE_GENERATION, ExitClass.INVALID_INPUT, ExecutionState.FINALIZED),
    (ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, ExitClass.EFFECT_UNKNOWN_OR_MANUAL, ExecutionState.SEALED),
])
def test_a_refused_submit_is_recorded_in_the_journal(tmp_path: Path, code: ErrorCode, exit_class: ExitClass,
                                                      state: ExecutionState) -> None:
    rig = _sync_rig(tmp_path, [accepted()])
    rig.journal.reserve_and_mark_submitting = _RefusingJournal(code)  # type: ignore[method-assign, assignment]
    result = drive(rig)
    assert (result.status, result.error_code, result.exit_class) == (ChildStatus.BLOCKED, code, exit_class)
    assert rig.row().axes.execution_state is state and rig.transport.sent == []
