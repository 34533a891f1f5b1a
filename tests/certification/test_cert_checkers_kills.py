"""Kill tests for certification/checkers.py (mutation gate, tools/mutation): the status names the
artifacts carry, a result's defaults, that an earlier request for other days never ends the search
for an earlier one for the same days, how a resend of several days is named, and that an operator
step does not end the claims of the runs after it."""

from __future__ import annotations

from cert_history_support import DAY1, DAY2, DAYS, day, history, request, run, snap

from certification.checkers import CheckResult, Status, silent_losses, unproved_resends
from certification.history import RunKind


def test_the_status_names_are_the_ones_the_artifacts_carry() -> None:
    assert [status.value for status in Status] == ["valid", "invalid", "unknown"]


def test_a_result_counts_nothing_and_gives_no_reason_by_default() -> None:
    result = CheckResult("x", Status.VALID)
    assert (result.count, result.reasons) == (0, ())


def test_an_earlier_request_for_other_days_does_not_end_the_search() -> None:
    requests = (request(1, (DAY2,)), request(2, (DAY1,)), request(3, (DAY1,)))
    assert unproved_resends(history(requests=requests)).reasons == (
        f"request 3 (run 1) resent {DAY1} after request 2 without proof: no fence",)


def test_a_resend_of_several_days_names_each() -> None:
    result = unproved_resends(history(requests=(request(1, DAYS), request(2, DAYS))))
    assert result.reasons == (f"request 2 (run 1) resent {DAY1}, {DAY2} after request 1 without proof: no fence",)


def test_runs_after_an_operator_step_still_claim() -> None:
    runs = (run(1, 4), run(2, 0, kind=RunKind.OPERATOR), run(3, 0, kind=RunKind.RECOVERY))
    snapshots = tuple(snap(index, day(DAY1, missing=1), day(DAY2)) for index in (1, 2, 3))
    assert silent_losses(history(runs=runs, snapshots=snapshots)).reasons == (
        f"run 3 exited 0 while {DAY1} lacked 1 row(s)",)
