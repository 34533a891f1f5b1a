"""Where a run's time went: sink CPU from the kernel's accounting of each reaped run, lane time per
catalog, the slowest rows."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from certification.launchers import ColdProcess
from certification.report.evidence import Summary
from certification.scenarios import bundled_rows
from certification.sinks import Invocation, Launched
from certification.time_spent import describe, summary_facts, time_spent
from certification.verdicts import RowOutcome, SinkRowResult

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


def test_a_reaped_run_carries_its_own_cpu_and_exit_code(tmp_path: Path) -> None:
    launched = Launched(Invocation((sys.executable, "-c", BURN + "raise SystemExit(7)"), tmp_path, dict(os.environ)))
    finished = launched.go_and_wait(60)
    assert finished.exit_code == 7
    assert 0.3 <= finished.cpu_s < 5.0
    assert isinstance(launched._process, ColdProcess)
    assert launched._process.process.returncode == 7  # Popen knows it was reaped


def test_a_killed_run_reports_the_signal(tmp_path: Path) -> None:
    launched = Launched(Invocation((sys.executable, "-c", "import time; time.sleep(30)"), tmp_path, dict(os.environ)))
    launched.go()
    launched.kill()
    assert launched.wait(30).exit_code == -9


def _result(sink: str, seconds: float, cpu: float) -> SinkRowResult:
    return SinkRowResult(sink, "certified", "PASS", None, (0,), None, seconds, cpu_seconds=cpu)


def test_cpu_is_split_by_sink_and_lane_time_by_catalog() -> None:
    rows = {row.row_id: row for row in bundled_rows()}
    sync_row, async_row = rows["sync.none"], rows["async.none"]
    other = replace(sync_row, row_id="sync.cut.request")
    outcomes = [RowOutcome(sync_row, (_result("reference", 2.0, 1.5), _result("naive-retry", 1.0, 0.25))),
                RowOutcome(other, (_result("reference", 4.0, 2.0),)),
                RowOutcome(async_row, (_result("reference", 10.0, 3.0),))]
    spent = time_spent(outcomes, wall=12.04, cpu=10.0)
    assert spent["sink_cpu"] == {"naive-retry": 0.2, "reference": 6.5}
    assert spent["other_cpu"] == 3.2  # 10 - 6.75
    assert spent["lane_seconds_by_catalog"] == {"async-dataset-jobs": 10.0, "sync-json-batches": 7.0}
    assert list(spent["lane_seconds_by_catalog"]) == ["async-dataset-jobs", "sync-json-batches"]  # busiest first
    assert [item["row"] for item in spent["slowest_rows"]] == ["async.none", "sync.cut.request", "sync.none"]
    text = describe(spent)
    assert "12 s wall, 10 s CPU" in text and "reference 6 s" in text and "async.none 10 s" in text


def test_the_summary_keeps_seconds_numeric_for_its_readers_and_states_the_breakdown_beside_it() -> None:
    rows = {row.row_id: row for row in bundled_rows()}
    spent = time_spent([RowOutcome(rows["sync.none"], (_result("reference", 2.0, 1.5),))], wall=3.0, cpu=2.0)
    facts = summary_facts(spent)
    assert facts["seconds"] == {"wall": 3.0, "cpu": 2.0} and facts["time_spent"] is spent
    # The report page reads the summary: the breakdown must not break it (CI's report step did once).
    summary = Summary.model_validate({"certified_sink": "reference", "verdict": "PASS", "valid": True, **facts})
    assert summary.seconds == {"wall": 3.0, "cpu": 2.0}
