"""Receipt polling through the supervisor's ports: waits sized by the profile, a pass that meets
only errors pauses (never EXPIRED), an expired receipt reports REST_DELIVERY_RECEIPT_EXPIRED, and the
certified deadline runs on the database clock from the submission, whichever process polls."""

from __future__ import annotations

from pathlib import Path

from rt_ports import AsyncRequests, FastRig, drive, fast_rig, reads, summary_of
from rt_support import ASYNC_PROFILE, profile, response

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import OperationProfile
from sink.contracts.results import ChildStatus
from sink.contracts.state import AcknowledgementState, ExecutionState, RemoteEffect
from sink.contracts.transport import TransportOutcome
from sink.testing import ScriptedTransport
from tests.supervisor.sv_support import SUMMARY


def _profile(**timeouts: int) -> OperationProfile:
    base = profile(ASYNC_PROFILE).model_copy(update={"verification": SUMMARY})
    return base.model_copy(update={"timeouts": base.timeouts.model_copy(update=timeouts)})


def _rig(tmp_path: Path, polls: list[TransportOutcome], *, prof: OperationProfile | None = None,
         summary_rows: int | None = None, **kwargs: object) -> FastRig:
    transport = ScriptedTransport([response(202, {"/job_id": "job-1"})])
    rig = fast_rig(tmp_path, transport, profile=prof or _profile(), requests=AsyncRequests, **kwargs)  # type: ignore[arg-type]
    answers = list(polls)

    def read(request: object) -> TransportOutcome:
        if "/dataset-jobs/" in request.path_and_query:  # type: ignore[attr-defined]
            return answers.pop(0)
        return summary_of(rig.children[0], rows=summary_rows)

    transport.read = read
    return rig


def _phase(word: str) -> TransportOutcome:
    return response(200, {"/phase": word, "/accepted_rows": 3, "/rejected_rows": 0})


def test_waits_are_the_profiles_poll_interval_and_poll_retry(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [_phase("running"), response(503), _phase("complete")],
               prof=_profile(poll_interval_ms=7000, poll_retry_ms=1500))
    assert drive(rig).status is ChildStatus.COMPLETED
    assert rig.clock.slept == [7000, 7000, 1500], "first poll, after a running answer, after an error"
    assert [o.acknowledgement_state for o in rig.journal.list_observations(rig.row().operation_id)] == [
        AcknowledgementState.RUNNING, AcknowledgementState.SUCCEEDED]


def test_five_poll_errors_pause_observation_and_never_expire_the_receipt(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [response(500)] * 5)
    result = drive(rig)
    row = rig.row()
    assert row.axes.execution_state is ExecutionState.WAITING
    assert row.axes.acknowledgement_state is AcknowledgementState.ACCEPTED
    assert rig.journal.list_observations(row.operation_id) == ()
    assert (result.status, result.exit_class, result.reason, result.error_code) == (
        ChildStatus.PENDING, ExitClass.UNAVAILABLE, "receiver_unavailable", None)
    assert row.next_check_at is not None
    # The next run polls again; an answer ends the pause.
    rig.transport.read = reads(rig.children, poll=_phase("complete"))  # type: ignore[assignment]
    assert drive(rig).status is ChildStatus.COMPLETED


def test_an_expired_receipt_whose_effect_is_not_provable_reports_receipt_expired(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [response(410)], summary_rows=0)
    result = drive(rig)
    assert result.axes.acknowledgement_state is AcknowledgementState.EXPIRED
    assert result.axes.remote_effect is RemoteEffect.UNKNOWN
    assert (result.error_code, result.exit_class) == (ErrorCode.RECEIPT_EXPIRED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


def test_an_expired_receipt_whose_effect_the_summary_proves_completes(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [response(410)])
    assert drive(rig).status is ChildStatus.COMPLETED


def test_the_deadline_runs_on_the_database_clock_from_the_submission(tmp_path: Path) -> None:
    rig = _rig(tmp_path, [_phase("running"), _phase("running")], wait_for_async=False)
    drive(rig)  # submitted and detached: WAITING
    total_s = rig.config.profile.timeouts.operation_total_ms // 1000
    rig.journal_clock.advance(total_s + 1)  # another process, much later
    result = drive(rig)
    assert result.axes.execution_state is ExecutionState.FINALIZED
    assert (result.error_code, result.exit_class) == (ErrorCode.REMOTE_EFFECT_UNKNOWN,
                                                      ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert rig.journal.transition_ids()[-1] == "observation_deadline_exceeded"
    assert len(rig.transport.gets()) == 1, "one poll, made after the deadline had passed"
