"""The example repository layout of docs/pytest-plugin.md, exercised as its developer would run it:
the correct toy sink passes every row it is given and its own tests (fixtures, the session matrix),
under pytest-xdist; the toy sink that retries blindly fails the commit-then-cut rows, and the pytest
output carries the checker's reasons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from plugin_runs import PLUGIN_TEST_LIMIT_S, run_pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(PLUGIN_TEST_LIMIT_S)]

CORRECT_ROWS = ("sync.tcp.reset.after_commit", "sync.none", "sync.cut.request", "sync.cut.after_commit",
                "sync.truncate.response", "sync.status.503.retry_after", "sync.kill.after_commit")
"""In catalog order; the first from the TCP catalog (a reset after commit), the others from the HTTP one."""
COMMIT_THEN_CUT = ("sync.tcp.reset.after_commit", "sync.cut.after_commit", "sync.truncate.response",
                   "sync.kill.after_commit")
EXAMPLE_TESTS = {"tests.test_parts": {"test_an_answer_lost_after_commit_is_resent_under_the_same_key",
                                      "test_an_answer_reset_every_time_is_never_called_done"},
                 "tests.test_rows": {"test_commit_then_cut_applies_every_day_once"}}


def _rows(*row_ids: str) -> list[str]:
    return [argument for row_id in row_ids for argument in ("--restproof-row", row_id)]


def test_the_correct_toy_sink_passes_every_row_and_its_own_tests_under_xdist(example: Path) -> None:
    run = run_pytest(example, "-n", "2", "-v", "--restproof-sink", "sinks/toy-sink.yaml", *_rows(*CORRECT_ROWS))

    assert run.returncode == 0, run.output[-4000:]
    assert run.outcomes("restproof[toy-sink]") == dict.fromkeys(CORRECT_ROWS, "passed")  # one JUnit case per row
    for classname, names in EXAMPLE_TESTS.items():
        assert run.outcomes(classname) == dict.fromkeys(names, "passed")
    verdicts = [case for case in run.cases if case.classname == "restproof[toy-sink]"]
    assert len(verdicts) == len(CORRECT_ROWS)
    # Both workers ran rows, each on services of its own (a second worker cannot reach the first one's).
    workers = set(re.findall(r"\[(gw\d)\][^\n]*PASSED restproof\[toy-sink\]::", run.output))
    assert workers == {"gw0", "gw1"}, run.output[-4000:]


def test_the_blind_retry_fails_the_commit_then_cut_rows_by_the_checkers(example: Path) -> None:
    run = run_pytest(example, "-p", "certification.pytest_plugin", "-m", "restproof_row",
                     "--restproof-sink", "sinks/toy-sink-blind.yaml", *_rows("sync.none", *COMMIT_THEN_CUT))

    assert run.returncode == 1, run.output[-4000:]
    outcomes = run.outcomes("restproof[toy-sink-blind]")
    assert outcomes == {"sync.none": "passed", **dict.fromkeys(COMMIT_THEN_CUT, "failed")}
    for row_id in COMMIT_THEN_CUT:
        message = run.case("restproof[toy-sink-blind]", row_id).message
        assert f"{row_id} [toy-sink-blind]: FAIL" in message
        assert re.search(r"^  duplicates: effect \d+ re-applied 2026-03-0\d", message, re.M), message
        assert re.search(r"^  unproved_resends: request \d+ \(run \d\) resent .* without proof: no fence", message,
                         re.M), message
    assert "FAILED restproof[toy-sink-blind]::sync.cut.after_commit" in run.output
    assert "  duplicates: effect" in run.output  # the reasons are in pytest's own output, not only in the XML
    assert "Traceback" not in run.output
    # Days, counts and reasons only: no payload value of the workload's rows, no credential.
    for sentinel in ("Москва-Север", "multi word label", "restproof-certification-token"):
        assert sentinel not in run.output and all(sentinel not in case.message for case in run.cases)
