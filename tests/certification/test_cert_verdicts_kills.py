"""Kill tests for certification/verdicts.py (mutation gate, tools/mutation): a result's identity does
not include the history it carries, and a result without counters does not end the totals of its row."""

from __future__ import annotations

from cert_history_support import history
from test_cert_verdicts import _outcome, _result

from certification.checkers import Counters
from certification.verdicts import NOT_APPLICABLE, OBSERVED, SinkRowResult, run_summary


def test_results_compare_without_their_histories() -> None:
    one = SinkRowResult("s", "certified", "PASS", Counters(0, 0, 0, 0), (0,), "sha256:x", 0.1, history=history())
    other = SinkRowResult("s", "certified", "PASS", Counters(0, 0, 0, 0), (0,), "sha256:x", 0.1,
                          history=history(row_id="sync.other"))
    assert one == other


def test_a_result_without_counters_does_not_end_its_rows_totals() -> None:
    outcomes = [_outcome("sync.failpoint.x", _result("mine", NOT_APPLICABLE, None, None),
                         _result("naive-retry", OBSERVED, Counters(2, 0, 1, 0), role="baseline"))]
    totals = run_summary(outcomes, "mine")["totals"]
    assert totals["naive-retry"]["rows"] == 1 and totals["naive-retry"]["duplicates"] == 2
    assert totals["naive-retry"]["observed"] == 1 and totals["mine"]["rows"] == 0
