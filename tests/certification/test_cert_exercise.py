"""A row is evidence only when its fault fired and every other run ended in a documented exit
class; each rule alone turns a clean-counter row into a reason."""

from __future__ import annotations

import pytest

from certification.exercise import KILLED, exercise_problems

CRASH = "not a documented exit class (a crash or an internal error)"


@pytest.mark.parametrize("fault", ["failpoint", "proxy_kill", "hold_kill_release"])
def test_a_killing_row_whose_first_run_was_killed_and_then_recovered_is_evidence(fault: str) -> None:
    assert exercise_problems(fault, (KILLED, 4, 4, 0)) == ()
    assert exercise_problems(fault, (KILLED, 0)) == ()


def test_a_crash_point_may_fire_in_a_later_run() -> None:
    # An async child reaches its verification points only in the run that finds its job done.
    assert exercise_problems("failpoint", (4, KILLED, 0)) == ()
    assert exercise_problems("failpoint", (4, KILLED, 1)) == (f"run 3 exited 1: {CRASH}",)


@pytest.mark.parametrize("fault", ["proxy_kill", "hold_kill_release"])
def test_the_harness_kill_must_be_the_first_run(fault: str) -> None:
    problems = exercise_problems(fault, (0, KILLED, 0))
    assert problems[0] == f"the {fault} fault never fired: run 1 exited 0 instead of being killed, so the row " \
                          "tested nothing"
    assert f"run 2 exited {KILLED}: {CRASH}" in problems


@pytest.mark.parametrize("fault", ["proxy_kill", "hold_kill_release"])
@pytest.mark.parametrize("first", [0, 4, 1, -15])
def test_a_harness_kill_that_never_came_tested_nothing(fault: str, first: int) -> None:
    problems = exercise_problems(fault, (first, 0))
    assert problems == (f"the {fault} fault never fired: run 1 exited {first} instead of being killed, so the row "
                        "tested nothing",)


@pytest.mark.parametrize("codes", [(0,), (4, 0), (4, 4, 0), (-15, 0)])
def test_a_crash_point_no_run_died_on_tested_nothing(codes: tuple[int, ...]) -> None:
    problems = exercise_problems("failpoint", codes)
    assert problems[0] == "the failpoint fault never fired: no run was killed, so the row tested nothing"


def test_a_kill_is_only_expected_on_rows_that_kill() -> None:
    assert exercise_problems("none", (0,)) == ()
    assert exercise_problems("proxy", (4, 0)) == ()
    assert exercise_problems("none", (KILLED,)) == (f"run 1 exited {KILLED}: {CRASH}",)


@pytest.mark.parametrize("code", [3, 4, 5, 0])
def test_documented_exit_classes_are_outcomes(code: int) -> None:
    assert exercise_problems("proxy", (code,)) == ()
    assert exercise_problems("failpoint", (KILLED, code)) == ()


@pytest.mark.parametrize("code", [1, 2, 6, 70, -11])
def test_any_other_exit_on_any_other_run_is_a_crash(code: int) -> None:
    assert exercise_problems("proxy", (4, code, 0)) == (f"run 2 exited {code}: {CRASH}",)
    assert exercise_problems("failpoint", (KILLED, code)) == (f"run 2 exited {code}: {CRASH}",)
    assert exercise_problems("proxy_kill", (KILLED, code)) == (f"run 2 exited {code}: {CRASH}",)


def test_only_the_one_killed_run_is_exempt() -> None:
    assert exercise_problems("failpoint", (KILLED, KILLED, 0)) == (f"run 2 exited {KILLED}: {CRASH}",)


def test_a_sink_that_crashes_on_every_run_is_never_clean() -> None:
    problems = exercise_problems("failpoint", (1, 1, 1))
    assert problems[0].startswith("the failpoint fault never fired")
    assert problems[1:] == (f"run 1 exited 1: {CRASH}", f"run 2 exited 1: {CRASH}", f"run 3 exited 1: {CRASH}")
    assert exercise_problems("none", ()) == ("the sink never ran",)
