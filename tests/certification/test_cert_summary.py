"""The summary's verdict: PASS only with a clean certified sink AND every expected baseline caught;
the junit view fails the certified sink's failed rows and a baseline not caught, and skips UNVERIFIED
rows and rows that do not apply."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from certification.artifacts import junit, summary_body
from certification.checkers import Counters
from certification.history import Ending
from certification.scenarios import Expect, Fault, Row
from certification.verdicts import RowOutcome, SinkRowResult

ZERO = Counters(0, 0, 0, 0)


def _row(row_id: str) -> Row:
    return Row(row_id=row_id, catalog=Path("c.yaml"), family="sync_batch", workload=Path("w.yaml"),
               receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01", scope_to="2026-03-05",
               fault=Fault(type="none"), expect=Expect(end=(Ending.FIRST_RUN,)), caught_duplicating=("naive-retry",))


def _result(sink: str, verdict: str, counters: Counters | None = ZERO, reasons: tuple[str, ...] = ()
            ) -> SinkRowResult:
    role = "certified" if sink == "reference" else "baseline"
    return SinkRowResult(sink, role, verdict, counters, (0,), "sha256:x", 0.1, reasons)


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
    assert b'failures="1"' in junit(outcomes, "reference")


def test_a_failed_row_of_the_certified_sink_fails_the_run_and_the_junit_case() -> None:
    outcomes = [RowOutcome(_row("sync.a"), (_result("reference", "FAIL", Counters(1, 0, 0, 0), ("duplicates: x",)),
                                            _result("naive-retry", "CAUGHT", Counters(1, 0, 1, 0))))]
    summary = summary_body(outcomes, "reference")
    assert summary["verdict"] == "FAIL" and summary["failed_rows"] == ["sync.a"]
    suite = ET.fromstring(junit(outcomes, "reference"))
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    (failure,) = suite.iter("failure")
    assert failure.get("message") == "duplicates: x"


def test_unverified_rows_are_skipped_and_rows_that_do_not_apply_are_left_out() -> None:
    outcomes = [RowOutcome(_row("sync.a"), (_result("reference", "UNVERIFIED", None, ("no ledger",)),)),
                RowOutcome(_row("sync.failpoint.x"), (_result("reference", "N/A", None),))]
    suite = ET.fromstring(junit(outcomes, "reference"))
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")
    (skipped,) = suite.iter("skipped")
    assert skipped.get("message") == "no ledger"
