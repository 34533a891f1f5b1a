"""SubmitStep through its ports: the pre-submit order, one attempt per ordinal, the same-key replay
bounded by sends, budget and fence retention, the recorded result with what it decided, and a
journal that goes away around the critical commit or after the request was sent. A scripted
transport replaces the receiver, so each test takes milliseconds; what the ports saw is asserted."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from rt_ports import Died, Failpoints, FastRig, FixedJitter, accepted, fast_rig, submit_step
from rt_support import no_fence, not_started, reached_peer, response

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.port import JournalUnavailable, UnavailableOutcome
from sink.journal.records import OperationRow, TransitionRequest
from sink.journal.step_records import SubmitGrant, SubmitRequest
from sink.runtime import submit_step as submit_step_module
from sink.runtime.backoff import full_jitter_cap_ms
from sink.runtime.journal_moves import outcome_digest
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.retry_guard import ReplayDeferred
from sink.runtime.submit_classification import SubmitReason
from sink.runtime.submit_step import CommitUnconfirmed, SentButNotRecorded, SubmitStep
from sink.security.revocation import SecurityRefusal
from sink.testing import ScriptedTransport

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

    def __init__(self, rig: FastRig, outage: int) -> None:
        self._rig = rig
        self._real_reserve = rig.journal.reserve_and_mark_submitting
        self._real_get = rig.journal.get_operation
        self.outage = outage

    def reserve(self, request: SubmitRequest) -> SubmitGrant:
        self._real_reserve(request)
        raise JournalUnavailable("commit in flight", outcome=UnavailableOutcome.OUTCOME_UNKNOWN)

    def get(self, operation_id: str) -> OperationRow | None:
        if self.outage > 0:
            self.outage -= 1
            raise JournalUnavailable("still down")
        return self._real_get(operation_id)


def _lose_commit(rig: FastRig, outage: int) -> _CommitLost:
    lost = _CommitLost(rig, outage)
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
