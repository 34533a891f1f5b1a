"""Row and run verdicts: every path of the certified verdict, the baseline verdict, and the run
summary (totals, endings, validity, the verdict's precedence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from certification.checkers import CheckResult, Counters, Status
from certification.history import Ending
from certification.scenarios import Expect, Fault, Row
from certification.verdicts import (
    CAUGHT,
    FAIL,
    NOT_APPLICABLE,
    NOT_CAUGHT,
    OBSERVED,
    PASS,
    UNVERIFIED,
    RowOutcome,
    SinkRowResult,
    baseline_verdict,
    certified_verdict,
    run_summary,
)

FIRST_ONLY = Expect(end=(Ending.FIRST_RUN,))
ZERO = Counters(0, 0, 0, 0)


def _valid(name: str = "duplicates") -> CheckResult:
    return CheckResult(name, Status.VALID)


def _invalid(name: str, *reasons: str) -> CheckResult:
    return CheckResult(name, Status.INVALID, len(reasons), reasons)


def _unknown(name: str, *reasons: str) -> CheckResult:
    return CheckResult(name, Status.UNKNOWN, 0, reasons)


def test_the_verdict_names() -> None:
    assert (PASS, FAIL, UNVERIFIED, NOT_APPLICABLE) == ("PASS", "FAIL", "UNVERIFIED", "N/A")
    assert (CAUGHT, NOT_CAUGHT, OBSERVED) == ("CAUGHT", "NOT_CAUGHT", "OBSERVED")


# --- the certified sink -----------------------------------------------------------------------------------


def test_valid_checks_and_an_accepted_ending_pass() -> None:
    assert certified_verdict([_valid(), _valid("evidence")], Ending.FIRST_RUN, FIRST_ONLY) == (PASS, ())
    assert certified_verdict([], Ending.RECOVERY, Expect(end=(Ending.FIRST_RUN, Ending.RECOVERY))) == (PASS, ())


def test_any_invalid_check_fails_the_row_with_every_invalid_reason() -> None:
    results = [_valid(), _invalid("duplicates", "effect 2 re-applied 2026-03-01"), _unknown("evidence", "gap"),
               _invalid("exercise", "run 1 hung", "run 2 exited 1")]
    assert certified_verdict(results, Ending.FIRST_RUN, FIRST_ONLY) == (FAIL, (
        "duplicates: effect 2 re-applied 2026-03-01", "exercise: run 1 hung", "exercise: run 2 exited 1"))


def test_invalid_wins_over_an_ending_mismatch() -> None:
    verdict, reasons = certified_verdict([_invalid("silent_losses", "x")], Ending.BLOCKED, FIRST_ONLY)
    assert (verdict, reasons) == (FAIL, ("silent_losses: x",))


def test_unknown_without_invalid_is_unverified_with_the_unknown_reasons() -> None:
    results = [_valid(), _unknown("evidence", "the proxy's log dropped 1 entr(y/ies)", "no snapshot")]
    assert certified_verdict(results, Ending.FIRST_RUN, FIRST_ONLY) == (UNVERIFIED, (
        "evidence: the proxy's log dropped 1 entr(y/ies)", "evidence: no snapshot"))


def test_unknown_is_never_pass_even_on_an_accepted_ending() -> None:
    assert certified_verdict([_unknown("evidence", "gap")], Ending.FIRST_RUN, FIRST_ONLY)[0] == UNVERIFIED
    assert certified_verdict([_unknown("evidence", "gap")], Ending.BLOCKED, FIRST_ONLY)[0] == UNVERIFIED


@pytest.mark.parametrize(("ending", "expect", "accepted"), [
    (Ending.BLOCKED, FIRST_ONLY, "first_run"),
    (Ending.RECOVERY, FIRST_ONLY, "first_run"),
    (Ending.OPERATOR, Expect(end=(Ending.FIRST_RUN, Ending.RECOVERY)), "first_run, recovery"),
    (Ending.FIRST_RUN, Expect(end=(Ending.RECOVERY,)), "recovery"),
    (Ending.RECOVERY, Expect(end=(Ending.BLOCKED,), why="the receiver applied part of a batch"), "blocked"),
])
def test_an_ending_the_row_does_not_accept_fails(ending: Ending, expect: Expect, accepted: str) -> None:
    assert certified_verdict([_valid()], ending, expect) == (
        FAIL, (f"ending: {ending.value}, where this row accepts {accepted}",))


def test_a_failed_ending_names_the_codes_the_last_run_stated() -> None:
    assert certified_verdict([_valid()], Ending.BLOCKED, FIRST_ONLY, ("REST_DELIVERY_REMOTE_EFFECT_UNKNOWN",)) == (
        FAIL, ("ending: blocked, where this row accepts first_run (its last run stated "
               "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN)",))


def test_blocked_passes_only_where_the_row_accepts_it() -> None:
    expect = Expect(end=(Ending.BLOCKED,), why="proof needs the receiver's help")
    assert certified_verdict([_valid()], Ending.BLOCKED, expect) == (PASS, ())


# --- baselines ----------------------------------------------------------------------------------------------


def test_a_baseline_is_observed_where_it_need_not_be_caught() -> None:
    assert baseline_verdict(ZERO, must_be_caught=False) == (OBSERVED, ())
    assert baseline_verdict(Counters(3, 1, 1, 1), must_be_caught=False) == (OBSERVED, ())


def test_a_baseline_that_must_duplicate_is_caught_by_its_duplicates_only() -> None:
    assert baseline_verdict(Counters(1, 0, 0, 0), must_be_caught=True) == (CAUGHT, ())
    assert baseline_verdict(Counters(0, 1, 1, 1, 1, 1), must_be_caught=True) == (
        NOT_CAUGHT, ("a baseline that must duplicate here did not: the fault was not real",))


# --- the run ------------------------------------------------------------------------------------------------


def _row(row_id: str) -> Row:
    return Row(row_id=row_id, catalog=Path("c.yaml"), family="sync_batch", workload=Path("w.yaml"),
               receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01", scope_to="2026-03-05",
               fault=Fault(type="none"), expect=FIRST_ONLY)


def _result(sink: str, verdict: str, counters: Counters | None = ZERO, ending: Ending | None = Ending.FIRST_RUN,
            role: str = "certified") -> SinkRowResult:
    return SinkRowResult(sink, role, verdict, counters, (0,), "sha256:x", 0.1, ending=ending)


def _outcome(row_id: str, *results: SinkRowResult) -> RowOutcome:
    return RowOutcome(_row(row_id), results)


def test_a_clean_run_passes() -> None:
    summary = run_summary([_outcome("sync.a", _result("mine", PASS),
                                    _result("naive-retry", CAUGHT, Counters(1, 0, 1, 0), role="baseline"))], "mine")
    assert summary == {
        "certified_sink": "mine", "valid": True, "baseline_not_caught": [], "failed_rows": [], "unverified_rows": [],
        "endings": {"first_run": 1}, "verdict": PASS,
        "totals": {
            "mine": {"rows": 1, "duplicates": 0, "false_successes": 0, "unproved_resends": 0, "silent_losses": 0,
                     "out_of_scope": 0, "wrong_content": 0, "checkpoint_gaps": 0, "pass": 1},
            "naive-retry": {"rows": 1, "duplicates": 1, "false_successes": 0, "unproved_resends": 1,
                            "silent_losses": 0, "out_of_scope": 0, "wrong_content": 0, "checkpoint_gaps": 0,
                            "caught": 1},
        },
    }


def test_a_baseline_not_caught_makes_the_run_invalid_whatever_the_certified_sink_did() -> None:
    outcomes = [_outcome("sync.a", _result("mine", FAIL), _result("naive-retry", NOT_CAUGHT, role="baseline")),
                _outcome("sync.b", _result("mine", UNVERIFIED), _result("naive-retry", CAUGHT, role="baseline"))]
    summary = run_summary(outcomes, "mine")
    assert summary["verdict"] == "INVALID" and summary["valid"] is False
    assert summary["baseline_not_caught"] == ["sync.a:naive-retry"]
    assert summary["failed_rows"] == ["sync.a"] and summary["unverified_rows"] == ["sync.b"]


def test_a_failed_row_fails_the_run_over_unverified_rows() -> None:
    outcomes = [_outcome("sync.a", _result("mine", UNVERIFIED)), _outcome("sync.b", _result("mine", FAIL)),
                _outcome("sync.c", _result("mine", PASS))]
    summary = run_summary(outcomes, "mine")
    assert summary["verdict"] == FAIL and summary["valid"] is True
    assert summary["failed_rows"] == ["sync.b"] and summary["unverified_rows"] == ["sync.a"]


def test_one_unverified_row_keeps_the_run_from_passing() -> None:
    summary = run_summary([_outcome("sync.a", _result("mine", PASS)), _outcome("sync.b", _result("mine", UNVERIFIED))],
                          "mine")
    assert summary["verdict"] == UNVERIFIED and summary["unverified_rows"] == ["sync.b"]


def test_only_the_certified_sinks_rows_decide_the_verdict() -> None:
    outcomes = [_outcome("sync.a", _result("mine", PASS), _result("other", FAIL, role="baseline"),
                         _result("third", UNVERIFIED, role="baseline"))]
    summary = run_summary(outcomes, "mine")
    assert summary["verdict"] == PASS and summary["failed_rows"] == [] and summary["unverified_rows"] == []
    assert run_summary(outcomes, "other")["verdict"] == FAIL


def test_rows_the_fault_does_not_apply_to_are_no_failure() -> None:
    outcomes = [_outcome("sync.a", _result("mine", PASS)),
                _outcome("sync.failpoint.x", _result("mine", NOT_APPLICABLE, None, None))]
    summary = run_summary(outcomes, "mine")
    assert summary["verdict"] == PASS
    assert summary["totals"]["mine"]["rows"] == 1 and "n/a" not in summary["totals"]["mine"]


def test_endings_count_the_certified_sinks_rows_sorted_by_name() -> None:
    outcomes = [_outcome("a", _result("mine", PASS, ending=Ending.RECOVERY),
                         _result("b", OBSERVED, ending=Ending.BLOCKED, role="baseline")),
                _outcome("b", _result("mine", FAIL, ending=Ending.BLOCKED)),
                _outcome("c", _result("mine", PASS, ending=Ending.RECOVERY)),
                _outcome("d", _result("mine", NOT_APPLICABLE, None, None)),
                _outcome("e", _result("mine", PASS, ending=Ending.FIRST_RUN))]
    endings = run_summary(outcomes, "mine")["endings"]
    assert endings == {"blocked": 1, "first_run": 1, "recovery": 2}
    assert list(endings) == ["blocked", "first_run", "recovery"]


def test_totals_sum_counters_and_verdicts_per_sink() -> None:
    outcomes = [_outcome("a", _result("mine", FAIL, Counters(1, 2, 3, 4, 5, 6, 7))),
                _outcome("b", _result("mine", FAIL, Counters(1, 0, 0, 0, 0, 1, 1))),
                _outcome("c", _result("mine", PASS)),
                _outcome("d", _result("mine", UNVERIFIED, None))]
    totals = run_summary(outcomes, "mine")["totals"]["mine"]
    assert totals == {"rows": 3, "duplicates": 2, "false_successes": 2, "unproved_resends": 3, "silent_losses": 4,
                      "out_of_scope": 5, "wrong_content": 7, "checkpoint_gaps": 8, "fail": 2, "pass": 1}


def test_a_summary_of_no_rows_has_nothing_to_fail() -> None:
    # Unreachable from the CLI (a catalog has at least one row, --only an existing one); pinned all the same.
    assert run_summary([], "mine") == {"certified_sink": "mine", "totals": {}, "valid": True,
                                       "baseline_not_caught": [], "failed_rows": [], "unverified_rows": [],
                                       "endings": {}, "verdict": PASS}
