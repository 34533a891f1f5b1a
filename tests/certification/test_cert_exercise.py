"""A row is evidence only when its fault fired and every run ended in a documented exit class;
each rule alone turns a clean-counter row into a reason."""

from __future__ import annotations

import pytest

from certification.exercise import KILLED, exercise_problems


@pytest.mark.parametrize("fault", ["failpoint", "proxy_kill", "hold_kill_release"])
def test_a_killing_row_whose_first_run_was_killed_and_then_recovered_is_evidence(fault: str) -> None:
    assert exercise_problems(fault, (KILLED, 4, 4, 0)) == ()
    assert exercise_problems(fault, (KILLED, 0)) == ()


@pytest.mark.parametrize("fault", ["failpoint", "proxy_kill", "hold_kill_release"])
@pytest.mark.parametrize("first", [0, 4, 1, -15])
def test_a_killing_row_whose_kill_never_came_tested_nothing(fault: str, first: int) -> None:
    problems = exercise_problems(fault, (first, 0))
    assert problems and "never fired" in problems[0] and f"run 1 exited {first}" in problems[0]


def test_a_kill_is_only_expected_on_rows_that_kill() -> None:
    assert exercise_problems("none", (0,)) == ()
    assert exercise_problems("proxy", (4, 0)) == ()
    assert exercise_problems("none", (KILLED,)) == (
        f"run 1 exited {KILLED}: not a documented exit class (a crash or an internal error)",)


@pytest.mark.parametrize("code", [3, 4, 5, 0])
def test_documented_exit_classes_are_outcomes(code: int) -> None:
    assert exercise_problems("proxy", (code,)) == ()
    assert exercise_problems("failpoint", (KILLED, code)) == ()


@pytest.mark.parametrize("code", [1, 2, 6, 70, -11, KILLED])
def test_any_other_exit_on_any_later_run_is_a_crash(code: int) -> None:
    assert exercise_problems("proxy", (4, code, 0)) == (
        f"run 2 exited {code}: not a documented exit class (a crash or an internal error)",)
    assert exercise_problems("failpoint", (KILLED, code)) == (
        f"run 2 exited {code}: not a documented exit class (a crash or an internal error)",)


def test_a_sink_that_crashes_on_every_run_is_never_clean() -> None:
    assert len(exercise_problems("failpoint", (1, 1, 1))) == 3  # never killed, then two crashes
    assert exercise_problems("none", ()) == ("the sink never ran",)
