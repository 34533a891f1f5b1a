"""The summary's verdict: PASS only with a clean certified sink AND every expected baseline caught."""

from __future__ import annotations

from pathlib import Path

from certification.artifacts import RowOutcome, junit, summary_body
from certification.checkers import Counters
from certification.matrix import SinkRowResult
from certification.scenarios import Expect, Fault, Row

ZERO = Counters(0, 0, 0, 0)


def _row(row_id: str) -> Row:
    return Row(row_id=row_id, catalog=Path("c.yaml"), family="sync_batch", workload=Path("w.yaml"),
               receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01", scope_to="2026-03-05",
               fenced_receiver=True, fault=Fault(type="none"), expect=Expect(reference="completed"),
               naive_duplicates=("naive-retry",))


def _result(sink: str, verdict: str, counters: Counters = ZERO) -> SinkRowResult:
    return SinkRowResult(sink, verdict, counters, (0,), "sha256:x", 0.1)


def test_pass_needs_the_certified_sink_clean_and_the_baseline_caught() -> None:
    outcomes = [RowOutcome(_row("sync.a"), (_result("reference", "PASS"),
                                            _result("naive-retry", "CAUGHT", Counters(1, 0, 1, 0))))]
    summary = summary_body(outcomes, "reference")
    assert summary["verdict"] == "PASS" and summary["valid"]
    assert summary["totals"]["naive-retry"]["duplicates"] == 1


def test_a_clean_baseline_where_it_must_duplicate_makes_the_run_invalid() -> None:
    outcomes = [RowOutcome(_row("sync.a"), (_result("reference", "PASS"), _result("naive-retry", "NOT_CAUGHT")))]
    summary = summary_body(outcomes, "reference")
    assert summary["verdict"] == "INVALID" and summary["baseline_not_caught"] == ["sync.a:naive-retry"]


def test_a_failed_row_of_the_certified_sink_fails_the_run_and_the_junit_case() -> None:
    outcomes = [RowOutcome(_row("sync.a"), (_result("reference", "FAIL", Counters(1, 0, 0, 0)),
                                            _result("naive-retry", "CAUGHT", Counters(1, 0, 1, 0))))]
    summary = summary_body(outcomes, "reference")
    assert summary["verdict"] == "FAIL" and summary["failed_rows"] == ["sync.a"]
    assert b'failures="1"' in junit(outcomes, "reference")
