"""The supervisor's verification evidence through its ports (issue 14): which counters and which
read-only summary reach the verifier, and the outcome each makes durable. A summary of the wrong
shape, a failed summary read or half the counters never prove a full effect; a recovering process
verifies from the same counters the live one saw (they are durable with the move into VERIFYING);
a proven rejection exits 5."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rt_ports import (
    FastRig,
    NoSummaryRequests,
    accepted,
    drive,
    reads,
    scripted_rig,
    submit_step,
    summary_of,
)
from rt_support import reached_peer, response

from sink.contracts.errors import ExitClass
from sink.contracts.profile_verification import VerificationSpec
from sink.contracts.results import ChildResult, ChildStatus
from sink.contracts.state import ExecutionState, RemoteEffect, VerificationState
from sink.contracts.transport import TransportOutcome
from sink.runtime.journal_moves import facts_digest
from tests.supervisor.sv_support import sync_profile


def _rig(work: Path, submits: list[TransportOutcome], *, rows_per_day: int = 3, **kwargs: object) -> FastRig:
    return scripted_rig(work, submits, rows_per_day=rows_per_day, **kwargs)  # type: ignore[arg-type]


def _drive(rig: FastRig) -> ChildResult:
    return drive(rig)


def _recovering(rig: FastRig, summary: TransportOutcome | None = None) -> ChildResult:
    """Submit in one process, verify in a fresh one (only the journal carries the answer's facts)."""
    submit_step(rig).run(rig.row(), operation_started_ms=rig.clock.now_ms, wake_attempts=0)
    assert rig.row().axes.execution_state is ExecutionState.VERIFYING
    if summary is not None:
        rig.transport.read = summary
    return _drive(rig)


def _not_provable(outcome: ChildResult) -> bool:
    return (outcome.axes.remote_effect, outcome.axes.verification_state) == (
        RemoteEffect.UNKNOWN, VerificationState.NOT_PROVABLE)


def _counters(accepted_rows: int | None, rejected_rows: int | None) -> TransportOutcome:
    scalars: dict[str, int | str] = {"/receipt_id": "r-1"}
    if accepted_rows is not None:
        scalars["/accepted_rows"] = accepted_rows
    if rejected_rows is not None:
        scalars["/rejected_rows"] = rejected_rows
    return response(200, scalars)


# ----- counters from the live response -----------------------------------------------------------------
def test_without_a_summary_the_response_counters_prove_the_full_effect(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()], profile=sync_profile(summary=False))
    outcome = _drive(rig)
    assert outcome.status is ChildStatus.COMPLETED and outcome.exit_class is ExitClass.OK
    assert rig.transport.gets() == []
    verified = [t for t in rig.journal.transitions() if t.transition_id == "verified_full"]
    assert [t.evidence_digest for t in verified] == [
        facts_digest("restproof.runtime.verification", {"outcome": "full", "rows": 3})]


def test_a_verification_spec_without_a_summary_sends_no_summary_request(tmp_path: Path) -> None:
    spec_only = sync_profile().model_copy(update={"verification": VerificationSpec()})
    rig = _rig(tmp_path, [accepted()], profile=spec_only)
    assert _drive(rig).status is ChildStatus.COMPLETED
    assert rig.transport.gets() == []


def test_a_child_without_a_summary_request_sends_none(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()], requests=NoSummaryRequests)
    assert _drive(rig).status is ChildStatus.COMPLETED
    assert rig.transport.gets() == []


def test_half_the_counters_never_prove_an_effect_even_with_a_matching_summary(tmp_path: Path) -> None:
    for name, answer in (("accepted-only", _counters(3, None)), ("rejected-only", _counters(None, 0))):
        rig = _rig(tmp_path / name, [answer])
        outcome = _drive(rig)
        assert _not_provable(outcome), name
        assert outcome.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL


def test_counters_short_of_the_rows_are_partial_when_not_all_rows_must_be_accounted(tmp_path: Path) -> None:
    base = sync_profile(summary=False)
    lenient = base.model_copy(update={"result_policy": base.result_policy.model_copy(
        update={"all_rows_accounted": False})})
    rig = _rig(tmp_path, [_counters(2, 0)], profile=lenient)
    outcome = _drive(rig)
    assert (outcome.axes.remote_effect, outcome.axes.verification_state) == (
        RemoteEffect.PARTIALLY_APPLIED, VerificationState.FAILED)


def test_a_proven_rejection_is_no_effect_and_exits_5(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [response(415)], profile=sync_profile(summary=False))
    outcome = _drive(rig)
    assert outcome.axes.execution_state is ExecutionState.FINALIZED
    assert outcome.axes.remote_effect is RemoteEffect.NONE_PROVEN
    assert outcome.exit_class is ExitClass.TERMINAL_RECEIVER_FAILURE
    verified = [t for t in rig.journal.transitions() if str(t.transition_id).startswith("verified_")]
    assert [t.evidence_digest for t in verified] == [
        facts_digest("restproof.runtime.verification", {"outcome": "no_effect", "rows": 3})]


# ----- a recovering process: the summary alone ---------------------------------------------------------
def test_a_recovering_process_verifies_from_the_summary_alone(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [accepted()])
    outcome = _recovering(rig)
    assert outcome.status is ChildStatus.COMPLETED
    assert outcome.axes.remote_effect is RemoteEffect.FULLY_APPLIED
    gets = rig.transport.gets()
    assert len(gets) == 1 and gets[0].timeouts is rig.config.profile.timeouts and gets[0].observer is not None


def test_a_failed_summary_read_proves_nothing(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [_counters(None, None)])  # an answer without counters: the summary decides
    assert _not_provable(_recovering(rig, reached_peer()))


def test_a_summary_with_another_status_proves_nothing(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [_counters(None, None)])
    good = summary_of(rig.children[0])
    assert good.response is not None
    assert _not_provable(_recovering(rig, replace(good, response=replace(good.response, status=203))))


def test_a_summary_of_the_wrong_shape_proves_nothing(tmp_path: Path) -> None:
    cases = {
        "boolean-count": lambda child: summary_of(child, rows=True),  # True == 1 row: never a count
        "text-count": lambda child: response(200, {"/row_count": "1", "/content_digest": summary_of(
            child).response.scalars["/content_digest"]}),  # type: ignore[union-attr]
        "number-digest": lambda child: response(200, {"/row_count": 1, "/content_digest": 7}),
    }
    for name, shape in cases.items():
        rig = _rig(tmp_path / name, [_counters(None, None)], rows_per_day=1)
        outcome = _recovering(rig, reads(rig.children, summary=shape))
        assert _not_provable(outcome), name


def test_a_recovering_process_verifies_from_the_counters_the_live_one_saw(tmp_path: Path) -> None:
    """The answer's counters are durable with ``sync_response_succeeded``: a process that never saw
    the answer reaches the same outcome, code and exit class as the one that did."""
    live = _rig(tmp_path / "live", [_counters(2, 1)], profile=sync_profile(summary=False))
    recovering = _rig(tmp_path / "recovering", [_counters(2, 1)], profile=sync_profile(summary=False))
    seen, recovered = _drive(live), _recovering(recovering)
    for outcome in (seen, recovered):
        assert outcome.axes.remote_effect is RemoteEffect.PARTIALLY_APPLIED
        assert (outcome.status, outcome.exit_class) == (ChildStatus.BLOCKED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert (seen.error_code, seen.reason) == (recovered.error_code, recovered.reason)
    stored = recovering.row().facts
    assert (stored.accepted_rows, stored.rejected_rows) == (2, 1)
