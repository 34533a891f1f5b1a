"""A row is evidence only when its fault acted on the sink and every run the fault did not kill ended
by itself in a documented exit class with the result the sink declares; each rule alone is a reason."""

from __future__ import annotations

import pytest
from cert_history_support import history, run

from certification.checkers import CheckResult, Status
from certification.exercise import DOCUMENTED_EXITS, KILLED, KILLING_FAULTS, exercised
from certification.history import FaultEvidence

CRASH = "not a documented exit class (a crash or an internal error)"


def _fault(kind: str, fired: bool | None = True, detail: str = "detail") -> FaultEvidence:
    return FaultEvidence(kind, fired, detail)


def _reasons(kind: str, codes: tuple[int, ...], fired: bool | None = True) -> tuple[str, ...]:
    runs = tuple(run(index, code) for index, code in enumerate(codes, start=1))
    return exercised(history(runs=runs, fault=_fault(kind, fired))).reasons


def test_the_constants_are_the_documented_ones() -> None:
    assert KILLED == -9
    assert frozenset({0, 3, 4, 5}) == DOCUMENTED_EXITS
    assert frozenset({"failpoint", "proxy_kill", "hold_kill_release", "retention_lapse"}) == KILLING_FAULTS


def test_a_clean_row_is_valid() -> None:
    assert exercised(history()) == CheckResult("exercise", Status.VALID, 0, ())


def test_a_sink_that_never_ran_tested_nothing() -> None:
    result = exercised(history(runs=()))
    assert result == CheckResult("exercise", Status.INVALID, 1, ("the sink never ran",))


@pytest.mark.parametrize("kind", ["proxy", "receiver_rule", "external_cancel", *sorted(KILLING_FAULTS)])
def test_a_fault_that_never_acted_tested_nothing(kind: str) -> None:
    result = exercised(history(fault=_fault(kind, False, "the proxy rule fired 0 time(s)")))
    assert result.status is Status.INVALID
    assert result.reasons[0] == (f"the {kind} fault never acted on the sink (the proxy rule fired 0 time(s)): "
                                 "the row tested nothing")


def test_no_fault_has_nothing_to_fire() -> None:
    assert exercised(history(fault=_fault("none", None))).status is Status.VALID


@pytest.mark.parametrize("kind", sorted(KILLING_FAULTS))
def test_the_run_the_fault_killed_is_no_crash(kind: str) -> None:
    assert _reasons(kind, (KILLED, 4, 0)) == ()
    assert _reasons(kind, (KILLED, 0)) == ()


def test_a_crash_point_may_kill_a_later_run() -> None:
    # An async child meets its verification points only in the run that finds its job done.
    assert _reasons("failpoint", (4, KILLED, 0)) == ()
    assert _reasons("failpoint", (4, KILLED, 1)) == (f"run 3 exited 1: {CRASH}",)


@pytest.mark.parametrize("kind", ["proxy_kill", "hold_kill_release", "retention_lapse"])
def test_a_harness_kill_is_exempt_only_on_the_first_run(kind: str) -> None:
    assert _reasons(kind, (0, KILLED, 0)) == (f"run 2 exited {KILLED}: {CRASH}",)


def test_only_one_killed_run_is_exempt() -> None:
    assert _reasons("failpoint", (KILLED, KILLED, 0)) == (f"run 2 exited {KILLED}: {CRASH}",)


@pytest.mark.parametrize("kind", sorted(KILLING_FAULTS))
def test_a_kill_the_fault_did_not_claim_is_a_crash(kind: str) -> None:
    # The evidence says the fault never acted: a SIGKILL nobody armed is not the row's kill.
    reasons = _reasons(kind, (KILLED, 0), fired=False)
    assert reasons[1:] == (f"run 1 exited {KILLED}: {CRASH}",)


def test_a_kill_is_exempt_only_on_rows_whose_fault_kills() -> None:
    assert _reasons("none", (KILLED,), fired=None) == (f"run 1 exited {KILLED}: {CRASH}",)
    assert _reasons("proxy", (KILLED, 0)) == (f"run 1 exited {KILLED}: {CRASH}",)


@pytest.mark.parametrize("code", sorted(DOCUMENTED_EXITS))
def test_documented_exit_classes_are_outcomes(code: int) -> None:
    assert _reasons("proxy", (code,)) == ()
    assert _reasons("failpoint", (KILLED, code)) == ()


@pytest.mark.parametrize("code", [1, 2, 6, 70, -11, -15])
def test_any_other_exit_is_a_crash(code: int) -> None:
    assert _reasons("proxy", (4, code, 0)) == (f"run 2 exited {code}: {CRASH}",)
    assert _reasons("failpoint", (KILLED, code)) == (f"run 2 exited {code}: {CRASH}",)
    assert _reasons("proxy_kill", (KILLED, code)) == (f"run 2 exited {code}: {CRASH}",)


def test_a_hang_is_never_the_rows_kill() -> None:
    hung = run(1, KILLED, timed_out=True)
    result = exercised(history(runs=(hung, run(2, 0)), fault=_fault("proxy_kill")))
    assert result.reasons == ("run 1 hung: the harness killed it at its time limit",)
    # For a crash point too: the hang is not the run the failpoint killed, the later real kill is.
    result = exercised(history(runs=(hung, run(2, KILLED), run(3, 0)), fault=_fault("failpoint")))
    assert result.reasons == ("run 1 hung: the harness killed it at its time limit",)


def test_a_hang_with_a_documented_exit_code_is_still_a_hang() -> None:
    result = exercised(history(runs=(run(1, 0, timed_out=True),)))
    assert result.reasons == ("run 1 hung: the harness killed it at its time limit",)


def test_a_run_without_its_declared_result_broke_its_contract() -> None:
    broken = run(1, 0, problem="its units_json result has no list of units")
    result = exercised(history(runs=(broken,)))
    assert result == CheckResult("exercise", Status.INVALID, 1,
                                 ("run 1: its units_json result has no list of units",))


def test_the_killed_run_owes_no_result() -> None:
    killed = run(1, KILLED, problem="its reference_json result is unreadable (no output)")
    assert exercised(history(runs=(killed, run(2, 0)), fault=_fault("proxy_kill"))).status is Status.VALID


def test_a_crash_is_named_once_not_also_for_its_missing_result() -> None:
    crashed = run(1, 1, problem="its reference_json result is unreadable (no output)")
    assert exercised(history(runs=(crashed,))).reasons == (f"run 1 exited 1: {CRASH}",)


def test_a_sink_that_crashes_on_every_run_is_never_clean() -> None:
    reasons = _reasons("failpoint", (1, 1, 1), fired=False)
    assert reasons[0].startswith("the failpoint fault never acted on the sink")
    assert reasons[1:] == (f"run 1 exited 1: {CRASH}", f"run 2 exited 1: {CRASH}", f"run 3 exited 1: {CRASH}")
    assert exercised(history(runs=tuple(run(i, 1) for i in (1, 2, 3)), fault=_fault("failpoint", False))).count == 4
