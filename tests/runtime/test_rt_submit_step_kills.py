"""SubmitStep through its ports: the pre-submit order, one attempt per ordinal, the same-key replay
bounded by sends, budget and fence retention, the recorded result with what it decided, and a
journal that goes away around the critical commit or after the request was sent. A scripted
transport replaces the receiver, so each test takes milliseconds; what the ports saw is asserted."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from rt_ports import AsyncRequests, Died, Failpoints, FastRig, FixedJitter, accepted, fast_rig, submit_step
from rt_support import ASYNC_PROFILE, no_fence, not_started, profile, reached_peer, response

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.errors import UnavailableCode
from sink.journal.marker_policy import grant_claim_for
from sink.journal.port import JournalRejection, JournalUnavailable, RejectionReason, UnavailableOutcome
from sink.journal.records import OperationRow, TransitionRequest
from sink.journal.step_records import SubmitGrant, SubmitRequest
from sink.runtime import submit_step as submit_step_module
from sink.runtime.backoff import full_jitter_cap_ms
from sink.runtime.journal_moves import facts_digest, outcome_digest
from sink.runtime.poll_timing import first_poll_delay_ms
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.retry_guard import ReplayDeferred
from sink.runtime.submit_classification import SubmitReason
from sink.runtime.submit_step import CommitUnconfirmed, SentButNotRecorded, SubmitStep
from sink.security.revocation import SecurityRefusal
from sink.testing import ScriptedTransport
from tests.supervisor.sv_support import sync_profile

SUBMIT = RequestKind.SUBMIT


def _delays(*retries: int, fraction: float = 0.5) -> list[int]:
    """The FixedJitter delays of the 0-based replays ``retries`` under the mock sync profile."""
    return [int(full_jitter_cap_ms(n, initial_delay_ms=500, max_delay_ms=10_000) * fraction) for n in retries]


def test_one_attempt_writes_lease_marker_and_submitting_before_the_request(tmp_path: Path) -> None:
    answer = accepted()
    transport = ScriptedTransport([answer], trace=("http11.send_request_headers.complete",))
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    result = submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert rig.failpoints.seen == [
        "journal.acquire_lease.before", "journal.acquire_lease.after",
        "journal.publish_marker.before", "journal.publish_marker.after",
        "journal.reserve_submitting.before", "journal.reserve_submitting.after",
        "http.submit.before_send", "http.submit.after_headers_sent", "http.submit.before_record_result",
        "journal.record_submit_result.before", "journal.record_submit_result.after",
    ]
    # The lease keeper holds (and, were the request long, renews) the lease across the request.
    assert [kind for kind, _ in rig.journal.writes] == ["acquire", "reserve", "transition"]
    reserve = rig.journal.writes[1][1]
    assert (reserve.operation_id, reserve.expected_revision, reserve.attempt_ordinal,  # type: ignore[attr-defined]
            reserve.lease_owner, reserve.capacity_scope) == (  # type: ignore[attr-defined]
        row.operation_id, row.revision, 1, "worker-1", "mock")
    recorded = rig.journal.transitions()[-1]
    assert recorded.transition_id == "sync_response_succeeded"
    assert recorded.lease_owner == "worker-1"
    assert recorded.evidence_digest == outcome_digest(answer)
    receipt = rig.journal.get_receipt(row.operation_id)
    assert receipt is not None and receipt.receipt_id == "r-1"
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(row.operation_id)] == [1]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING
    assert result.operation.revision == rig.row().revision
    assert result.decision is not None and result.decision.reason is SubmitReason.ACCEPTED
    assert (recorded.facts, recorded.decision.reason) == (result.operation.facts, "accepted")
    assert (result.operation.facts.accepted_rows, result.operation.facts.rejected_rows) == (3, 0)
    assert rig.limiter.calls == [("admit", SUBMIT), ("done", SUBMIT)], "one send takes no extra token"
    assert len(transport.sent) == 1 and transport.sent[0].timeouts is rig.config.profile.timeouts
    assert rig.clock.slept == []


def test_a_lost_response_is_replayed_with_the_same_request_until_accepted(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    result = submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    posts = transport.posts()
    assert len(posts) == 3 and posts[0].request is posts[1].request is posts[2].request
    assert rig.clock.slept == _delays(0, 1), "each replay waits its backoff, counted over sends"
    assert rig.limiter.calls == [("admit", SUBMIT), ("token", SUBMIT), ("token", SUBMIT), ("done", SUBMIT)]
    kinds = [kind for kind, _ in rig.journal.writes]
    assert kinds == ["acquire", "reserve", "transition"], "one lease held across every replay"
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(row.operation_id)] == [1]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING


def test_replays_stop_at_the_send_budget_and_the_attempt_is_left_for_the_next_wake_up(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), reached_peer(), reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    with pytest.raises(ReplayDeferred):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.posts()) == rig.config.profile.submit_retry.max_attempts == 3
    # No transition after the reservation: the attempt stays SUBMITTING, its effect not unknown.
    assert rig.journal.transition_ids() == []
    assert [kind for kind, _ in rig.journal.writes] == ["acquire", "reserve"]
    row = rig.row()
    assert (row.axes.execution_state, row.axes.remote_effect) == (ExecutionState.SUBMITTING,
                                                                  RemoteEffect.UNDETERMINED)


def test_a_replay_refused_at_connect_is_no_proof_of_absence(tmp_path: Path) -> None:
    # The first send may have reached the receiver (it died after committing); the replay meets a
    # refused connection. Never RETRY_WAIT / NONE_PROVEN: the attempt replays until it is answered.
    transport = ScriptedTransport([reached_peer(), not_started(), accepted()])
    rig = fast_rig(tmp_path, transport)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.posts()) == 3
    assert rig.journal.transition_ids() == ["sync_response_succeeded"]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING


def test_a_takeovers_replay_refused_at_connect_is_no_proof_of_absence(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), reached_peer(), reached_peer(), not_started(), accepted()])
    rig = fast_rig(tmp_path, transport)
    with pytest.raises(ReplayDeferred):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    result = submit_step(rig).take_over(rig.row(), operation_started_ms=rig.clock.now_ms, attempt_age_ms=0)
    assert len(transport.posts()) == 5
    assert rig.journal.transition_ids() == ["sync_response_succeeded"]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING


def test_without_a_certified_fence_a_spent_budget_is_recorded_unknown(tmp_path: Path) -> None:
    transport = ScriptedTransport([response(503), accepted()])
    rig = fast_rig(tmp_path, transport, profile=no_fence())
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.posts()) == 1
    assert rig.journal.transition_ids()[-1] == "request_outcome_unknown"
    assert result.operation.axes.remote_effect is RemoteEffect.UNKNOWN
    assert result.decision is not None and result.decision.replay_refused == "fence_not_certified"


def test_a_spent_operation_budget_defers_the_replay_without_waiting(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    total = rig.config.profile.timeouts.operation_total_ms
    with pytest.raises(ReplayDeferred):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms - total - 1, wake_attempts=0)
    assert len(transport.posts()) == 1
    assert rig.row().axes.execution_state is ExecutionState.SUBMITTING
    assert rig.clock.slept == []


def test_a_zero_backoff_replays_without_waiting(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport, jitter=lambda _: FixedJitter(0.0))
    submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.posts()) == 2
    assert rig.clock.slept == [0]


def test_a_proven_not_started_attempt_waits_and_the_next_attempt_takes_the_next_ordinal(tmp_path: Path) -> None:
    transport = ScriptedTransport([not_started(), accepted()])
    rig = fast_rig(tmp_path, transport)
    step = submit_step(rig)
    first = step.run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert first.operation.axes.execution_state is ExecutionState.RETRY_WAIT
    assert first.decision is not None and first.decision.retry_delay_ms == _delays(0)[0]
    assert first.operation.next_check_at == rig.journal_clock.now + timedelta(milliseconds=_delays(0)[0])
    # The supervisor makes the retry due; the next attempt is ordinal 2 of the same operation.
    second = step.run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=1)
    assert second.operation.axes.execution_state is ExecutionState.VERIFYING
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(first.operation.operation_id)] == [1, 2]
    reserves = [request for kind, request in rig.journal.writes if kind == "reserve"]
    assert [r.attempt_ordinal for r in reserves] == [1, 2]  # type: ignore[attr-defined]


def test_submitting_is_durable_before_any_byte_is_sent(tmp_path: Path) -> None:
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport, failpoints=Failpoints(die_at="http.submit.before_send"))
    with pytest.raises(Died):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert rig.row().axes.execution_state is ExecutionState.SUBMITTING
    assert transport.sent == []


class _Revoked:
    def assert_submit_allowed(self) -> None:
        raise SecurityRefusal("security.revoked", "revoked for the test", ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


def test_a_revoked_gate_stops_the_attempt_before_anything_durable(tmp_path: Path) -> None:
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    ports = replace(rig.ports, submit_gate=_Revoked())
    with pytest.raises(SecurityRefusal):
        step = SubmitStep(ports, rig.config, submit_step(rig)._keeper)
        step.run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert transport.sent == [] and rig.journal.writes == [] and rig.failpoints.seen == []


# ----- a journal that goes away ----------------------------------------------------------------------
class _CommitLost:
    """The critical transaction commits, then the connection breaks with COMMIT in flight; the
    journal stays unreachable for ``outage`` more calls of the reread."""

    def __init__(self, rig: FastRig, outage: int, code: UnavailableCode | None = None) -> None:
        self._rig = rig
        self.code = code
        self._real_reserve = rig.journal.reserve_and_mark_submitting
        self._real_get = rig.journal.get_operation
        self.outage = outage

    def reserve(self, request: SubmitRequest) -> SubmitGrant:
        self._real_reserve(request)
        raise JournalUnavailable("commit in flight", outcome=UnavailableOutcome.OUTCOME_UNKNOWN, code=self.code)

    def get(self, operation_id: str) -> OperationRow | None:
        if self.outage > 0:
            self.outage -= 1
            raise JournalUnavailable("still down")
        return self._real_get(operation_id)


def _lose_commit(rig: FastRig, outage: int, code: UnavailableCode | None = None) -> _CommitLost:
    lost = _CommitLost(rig, outage, code)
    rig.journal.reserve_and_mark_submitting = lost.reserve  # type: ignore[method-assign]
    rig.journal.get_operation = lost.get  # type: ignore[method-assign]
    return lost


def test_an_unconfirmed_commit_is_reread_and_recorded_not_started_never_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.0)
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    _lose_commit(rig, outage=2)  # back on the third reread
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert transport.sent == []
    assert result.decision is None and result.operation.axes.execution_state is ExecutionState.RETRY_WAIT
    recorded = rig.journal.transitions()[-1]
    assert (recorded.transition_id, recorded.decision.reason) == ("request_not_started_retry",
                                                                  "journal_outage_not_sent")


def test_a_journal_that_does_not_return_gets_a_not_sent_attestation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.0)
    monkeypatch.setattr(submit_step_module, "REREAD_FOR_S", 0.0)
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    _lose_commit(rig, outage=10**6)
    with pytest.raises(CommitUnconfirmed, match="nothing was sent"):
        submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert transport.sent == []
    assert rig.ports.markers.not_sent_attested(row.operation_namespace, row.operation_id, 1)
    # The attestation names this grant: a claim for another ordinal is not attested.
    assert not rig.ports.markers.not_sent_attested(row.operation_namespace, row.operation_id, 2)


def test_a_journal_lost_after_the_request_was_sent_says_it_may_have_reached_the_receiver(tmp_path: Path) -> None:
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)

    def down(request: TransitionRequest) -> OperationRow:
        raise JournalUnavailable("gone", outcome=UnavailableOutcome.NOT_SENT)

    rig.journal.transition = down  # type: ignore[method-assign]
    with pytest.raises(SentButNotRecorded) as lost:
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.sent) == 1
    message = str(lost.value)
    assert "may have reached the receiver" in message and "nothing was sent" not in message
    assert "do not deliver it by another route" in message


def test_a_retry_after_beyond_the_budget_is_recorded_with_its_code_and_window(tmp_path: Path) -> None:
    throttled = response(503, headers={"retry-after": "86400"})
    transport = ScriptedTransport([throttled])
    rig = fast_rig(tmp_path, transport)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert len(transport.posts()) == 1 and rig.clock.slept == [], "never sent early, never shortened"
    stored = result.operation
    assert stored.axes.remote_effect is RemoteEffect.UNKNOWN
    assert stored.decision.error_code is ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET
    assert stored.decision.reason == "retry_after_exceeds_budget"
    assert stored.next_check_at == rig.journal_clock.now + timedelta(seconds=86400)


def test_a_takeover_has_a_whole_budget_of_replays_then_defers_again(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer()] * 6)
    rig = fast_rig(tmp_path, transport)
    with pytest.raises(ReplayDeferred):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    with pytest.raises(ReplayDeferred):
        submit_step(rig).take_over(rig.row(), operation_started_ms=rig.clock.now_ms, attempt_age_ms=1_000)
    assert len(transport.posts()) == 2 * rig.config.profile.submit_retry.max_attempts == 6
    assert rig.row().axes.execution_state is ExecutionState.SUBMITTING


def test_a_takeover_counts_the_attempts_age_against_the_keys_retention(tmp_path: Path) -> None:
    # The attempt was created just under the retention ago: a replay now would land after the
    # receiver forgot the key, so the lost answer is recorded unknown, never replayed or deferred.
    transport = ScriptedTransport([reached_peer()] * 4)
    rig = fast_rig(tmp_path, transport)
    with pytest.raises(ReplayDeferred):
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    retention_ms = (rig.config.profile.mutation_fence.retention_ttl_seconds or 0) * 1000
    result = submit_step(rig).take_over(rig.row(), operation_started_ms=rig.clock.now_ms,
                                        attempt_age_ms=retention_ms - 1)
    assert len(transport.posts()) == 4
    assert result.decision is not None and result.decision.replay_refused == "fence_retention_exceeded"
    assert result.operation.axes.remote_effect is RemoteEffect.UNKNOWN


# ----- the journal's own words about an outage, kept --------------------------------------------------
def test_a_journal_lost_after_the_send_keeps_the_causes_outcome_and_code(tmp_path: Path) -> None:
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)

    def unconfirmed(request: TransitionRequest) -> OperationRow:
        raise JournalUnavailable("replica gone", outcome=UnavailableOutcome.OUTCOME_UNKNOWN,
                                 code=UnavailableCode.REPLICATION_UNCONFIRMED)

    rig.journal.transition = unconfirmed  # type: ignore[method-assign]
    with pytest.raises(SentButNotRecorded) as lost:
        submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert (lost.value.outcome, lost.value.code) == (UnavailableOutcome.OUTCOME_UNKNOWN,
                                                     UnavailableCode.REPLICATION_UNCONFIRMED)
    assert lost.value.operation_id == rig.row().operation_id


def test_a_critical_transaction_refused_before_commit_raises_at_once_without_a_reread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.0)
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    reads: list[str] = []
    real_get = rig.journal.get_operation

    def not_sent(request: SubmitRequest) -> SubmitGrant:
        raise JournalUnavailable("connection refused", outcome=UnavailableOutcome.NOT_SENT)

    def get(operation_id: str) -> OperationRow | None:
        reads.append(operation_id)
        return real_get(operation_id)

    rig.journal.reserve_and_mark_submitting = not_sent  # type: ignore[method-assign]
    rig.journal.get_operation = get  # type: ignore[method-assign]
    with pytest.raises(JournalUnavailable) as refused:
        submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert type(refused.value) is JournalUnavailable and refused.value.outcome is UnavailableOutcome.NOT_SENT
    assert reads == [], "nothing was committed: no reread, no recorded result"
    assert transport.sent == [] and rig.journal.transitions() == []
    assert not rig.ports.markers.not_sent_attested(row.operation_namespace, row.operation_id, 1)


class _MonotonicClock:
    """``time`` as _after_unconfirmed_commit sees it: monotonic seconds that move only by its sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_reread_window_ends_exactly_at_its_deadline_with_the_causes_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _MonotonicClock()
    monkeypatch.setattr(submit_step_module, "time", clock)
    monkeypatch.setattr(submit_step_module, "REREAD_FOR_S", 1.0)
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.5)
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    lost = _lose_commit(rig, outage=3, code=UnavailableCode.REPLICATION_UNCONFIRMED)
    # Rereads at 0 s, 0.5 s and 1.0 s fail; the one at the deadline is the last: the journal that
    # would answer a fourth reread (at 1.5 s) is too late.
    with pytest.raises(CommitUnconfirmed) as unconfirmed:
        submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert clock.slept == [0.5, 0.5] and lost.outage == 0
    assert (unconfirmed.value.outcome, unconfirmed.value.code) == (UnavailableOutcome.OUTCOME_UNKNOWN,
                                                                   UnavailableCode.REPLICATION_UNCONFIRMED)
    assert rig.ports.markers.not_sent_attested(row.operation_namespace, row.operation_id, 1)
    assert transport.sent == [] and rig.journal.transitions() == []


def test_an_orphan_found_by_the_reread_is_refused_and_never_recorded_not_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.0)
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()

    def claimed_then_lost(request: SubmitRequest) -> SubmitGrant:
        # The grant claim reached the marker store, the attempt row never reached the journal.
        rig.ports.markers.claim_grant(grant_claim_for(row, request, 1, rig.journal_clock.now))
        raise JournalUnavailable("commit in flight", outcome=UnavailableOutcome.OUTCOME_UNKNOWN)

    rig.journal.reserve_and_mark_submitting = claimed_then_lost  # type: ignore[method-assign]
    with pytest.raises(JournalRejection) as orphan:
        submit_step(rig).run(row, operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert orphan.value.reason is RejectionReason.ORPHAN_MARKER
    assert transport.sent == [] and rig.journal.transitions() == []
    assert rig.row().axes.execution_state is ExecutionState.SEALED


def test_a_reread_grant_is_recorded_not_started_with_its_evidence_and_due_now(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(submit_step_module, "REREAD_EVERY_S", 0.0)
    rig = fast_rig(tmp_path, ScriptedTransport([]))
    _lose_commit(rig, outage=1)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    [recorded] = rig.journal.transitions()
    assert recorded.evidence_digest == facts_digest("restproof.runtime.not_sent",
                                                    {"attempt": 1, "reason": "journal_outage_not_sent"})
    assert (recorded.lease_owner, recorded.next_check_after) == ("worker-1", timedelta(0))
    assert result.operation.next_check_at == rig.journal_clock.now, "the retry is due at once"
    assert "journal.record_submit_result.before" in rig.failpoints.seen


# ----- the replay window of a live attempt ------------------------------------------------------------
def test_a_live_attempts_replay_window_is_measured_from_its_own_first_send(tmp_path: Path) -> None:
    rig: FastRig
    retention_ms = (sync_profile().mutation_fence.retention_ttl_seconds or 0) * 1000
    delay = _delays(0)[0]

    def slow_loss(_: object) -> object:
        # The answer is lost after a long wait: the replay after its backoff lands 1 ms before the
        # receiver forgets the key, so it is still made.
        rig.clock.now_ms += retention_ms - delay - 1
        return reached_peer()

    transport = ScriptedTransport([slow_loss, accepted()])
    rig = fast_rig(tmp_path, transport)
    started = rig.clock.now_ms + retention_ms - delay - 1  # the operation's budget is not what ends it
    result = submit_step(rig).run(rig.row(), operation_started_ms=started, wake_attempts=0)
    assert len(transport.posts()) == 2 and rig.clock.slept == [delay]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING


# ----- what a recorded answer stores ------------------------------------------------------------------
def test_a_proven_duplicates_counters_are_not_stored_as_this_requests_result(tmp_path: Path) -> None:
    duplicate = response(409, {"/receipt_id": "r-1", "/accepted_rows": 3, "/rejected_rows": 0})
    transport = ScriptedTransport([reached_peer(), duplicate])
    rig = fast_rig(tmp_path, transport)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert result.decision is not None and result.decision.reason is SubmitReason.DUPLICATE_PROVEN
    facts = result.operation.facts
    assert (facts.accepted_rows, facts.rejected_rows) == (None, None)


def test_a_proven_rejection_is_stored_as_proven(tmp_path: Path) -> None:
    transport = ScriptedTransport([response(413)])
    rig = fast_rig(tmp_path, transport)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert result.decision is not None and result.decision.reason is SubmitReason.PROVEN_REJECTION
    assert rig.journal.transitions()[-1].facts.rejection_proven is True  # type: ignore[union-attr]
    assert rig.row().facts.rejection_proven is True


def test_an_accepted_job_is_first_polled_after_the_profiles_first_delay(tmp_path: Path) -> None:
    async_profile = profile(ASYNC_PROFILE)
    transport = ScriptedTransport([response(202, {"/job_id": "job-1"})])
    rig = fast_rig(tmp_path, transport, profile=async_profile, requests=AsyncRequests)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert result.operation.axes.execution_state is ExecutionState.ACCEPTED
    first_poll = timedelta(milliseconds=first_poll_delay_ms(async_profile))
    assert first_poll > timedelta(0)
    assert rig.journal.transitions()[-1].next_check_after == first_poll
    assert result.operation.next_check_at == rig.journal_clock.now + first_poll


def test_a_rejected_job_has_no_poll_due(tmp_path: Path) -> None:
    transport = ScriptedTransport([response(413)])
    rig = fast_rig(tmp_path, transport, profile=profile(ASYNC_PROFILE), requests=AsyncRequests)
    result = submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert result.operation.axes.execution_state is not ExecutionState.ACCEPTED
    assert rig.journal.transitions()[-1].next_check_after is None
    assert result.operation.next_check_at is None
