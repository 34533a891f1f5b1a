"""SubmitStep through its ports (issue 14): the pre-submit order, one attempt per ordinal, the
same-key replay bounded by sends, budget and fence retention, and the recorded result. A scripted
transport replaces the receiver, so each test takes milliseconds; what the ports saw is asserted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rt_ports import Died, Failpoints, FixedJitter, ScriptedTransport, accepted, fast_rig
from rt_support import not_started, reached_peer

from sink.contracts.errors import ExitClass
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.runtime.backoff import full_jitter_cap_ms
from sink.runtime.journal_moves import outcome_digest
from sink.runtime.rate_limiter import RequestKind
from sink.runtime.submit_classification import SubmitReason
from sink.runtime.submit_step import SubmitStep
from sink.security.revocation import SecurityRefusal

SUBMIT = RequestKind.SUBMIT


def _delays(*retries: int, fraction: float = 0.5) -> list[int]:
    """The FixedJitter delays of the 0-based replays ``retries`` under the mock sync profile."""
    return [int(full_jitter_cap_ms(n, initial_delay_ms=500, max_delay_ms=10_000) * fraction) for n in retries]


def test_one_attempt_writes_lease_marker_and_submitting_before_the_request(tmp_path: Path) -> None:
    answer = accepted()
    transport = ScriptedTransport([answer], trace=("http11.send_request_headers.complete",))
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    result = SubmitStep(rig.ports, rig.config).run(row, operation_started_ms=rig.clock.now_ms)
    assert rig.failpoints.seen == [
        "journal.acquire_lease.before", "journal.acquire_lease.after",
        "journal.publish_marker.before", "journal.publish_marker.after",
        "journal.reserve_submitting.before", "journal.reserve_submitting.after",
        "http.submit.before_send", "http.submit.after_headers_sent", "http.submit.before_record_result",
        "journal.acquire_lease.before", "journal.acquire_lease.after",
        "journal.record_submit_result.before", "journal.record_submit_result.after",
    ]
    assert [kind for kind, _ in rig.journal.writes] == ["acquire", "reserve", "acquire", "transition"]
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
    assert result.decision.reason is SubmitReason.ACCEPTED
    assert result.response is answer.response
    assert rig.limiter.calls == [("admit", SUBMIT), ("done", SUBMIT)], "one send takes no extra token"
    assert len(transport.sent) == 1 and transport.sent[0].timeouts is rig.config.profile.timeouts
    assert rig.clock.slept == []


def test_a_lost_response_is_replayed_with_the_same_request_until_accepted(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    row = rig.row()
    result = SubmitStep(rig.ports, rig.config).run(row, operation_started_ms=rig.clock.now_ms)
    posts = transport.posts()
    assert len(posts) == 3 and posts[0].request is posts[1].request is posts[2].request
    assert rig.clock.slept == _delays(0, 1), "each replay waits its backoff, counted over sends"
    assert rig.limiter.calls == [("admit", SUBMIT), ("token", SUBMIT), ("token", SUBMIT), ("done", SUBMIT)]
    kinds = [kind for kind, _ in rig.journal.writes]
    assert kinds == ["acquire", "reserve", "acquire", "acquire", "acquire", "transition"], \
        "the mutation lease is renewed after every replay wait and before the result is recorded"
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(row.operation_id)] == [1]
    assert result.operation.axes.execution_state is ExecutionState.VERIFYING


def test_replays_stop_at_the_send_budget_and_the_effect_is_recorded_unknown(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), reached_peer(), reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    result = SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert len(transport.posts()) == rig.config.profile.submit_retry.max_attempts == 3
    assert rig.journal.transition_ids()[-1] == "request_outcome_unknown"
    assert result.operation.axes.remote_effect is RemoteEffect.UNKNOWN
    assert result.decision.replay_refused == "budget_exhausted"


def test_a_spent_operation_budget_allows_no_replay(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport)
    total = rig.config.profile.timeouts.operation_total_ms
    result = SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms - total - 1)
    assert len(transport.posts()) == 1
    assert result.decision.replay_refused == "budget_exhausted"
    assert result.operation.axes.remote_effect is RemoteEffect.UNKNOWN
    assert rig.clock.slept == []


def test_a_zero_backoff_replays_without_waiting(tmp_path: Path) -> None:
    transport = ScriptedTransport([reached_peer(), accepted()])
    rig = fast_rig(tmp_path, transport, jitter=lambda _: FixedJitter(0.0))
    SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert len(transport.posts()) == 2
    assert rig.clock.slept == [0]


def test_a_proven_not_started_attempt_waits_and_the_next_attempt_takes_the_next_ordinal(tmp_path: Path) -> None:
    transport = ScriptedTransport([not_started(), accepted()])
    rig = fast_rig(tmp_path, transport)
    step = SubmitStep(rig.ports, rig.config)
    first = step.run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert first.operation.axes.execution_state is ExecutionState.RETRY_WAIT
    assert first.decision.retry_delay_ms == _delays(0)[0]
    assert first.response is None
    # The supervisor makes the retry due; the next attempt is ordinal 2 of the same operation.
    second = step.run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert second.operation.axes.execution_state is ExecutionState.VERIFYING
    assert [a.attempt_ordinal for a in rig.journal.list_attempts(first.operation.operation_id)] == [1, 2]
    reserves = [request for kind, request in rig.journal.writes if kind == "reserve"]
    assert [r.attempt_ordinal for r in reserves] == [1, 2]  # type: ignore[attr-defined]


def test_submitting_is_durable_before_any_byte_is_sent(tmp_path: Path) -> None:
    transport = ScriptedTransport([accepted()])
    rig = fast_rig(tmp_path, transport, failpoints=Failpoints(die_at="http.submit.before_send"))
    with pytest.raises(Died):
        SubmitStep(rig.ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
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
        SubmitStep(ports, rig.config).run(rig.row(), operation_started_ms=rig.clock.now_ms)
    assert transport.sent == [] and rig.journal.writes == [] and rig.failpoints.seen == []
