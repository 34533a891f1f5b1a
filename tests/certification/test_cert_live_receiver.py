"""A live receiver (``certify run --receiver-url``): the harness cannot read its ground truth, so
its rows are UNVERIFIED and the run is not certified, even though the sink really delivered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from certification.artifacts import summary_body
from certification.checkers import Counters
from certification.history import Ending
from certification.scenarios import BUNDLED, Expect, Fault, Row
from certification.services import receiver_process
from certification.verdicts import RowOutcome, SinkRowResult

CERTIFY = str(Path(sys.executable).with_name("certify"))
RECEIVER = BUNDLED.parent / "receivers" / "json-batches.yaml"


def _row(row_id: str) -> Row:
    return Row(row_id=row_id, catalog=Path("c.yaml"), family="sync_batch", workload=Path("w.yaml"),
               receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01", scope_to="2026-03-05",
               fault=Fault(type="none"), expect=Expect(end=(Ending.FIRST_RUN,)))


def test_one_unverified_row_keeps_the_run_from_passing_and_a_failure_still_wins() -> None:
    passed = SinkRowResult("reference", "certified", "PASS", Counters(0, 0, 0, 0), (0,), "sha256:x", 0.1)
    unverified = SinkRowResult("reference", "certified", "UNVERIFIED", None, (0,), "sha256:y", 0.1, ("no ledger",))
    failed = SinkRowResult("reference", "certified", "FAIL", Counters(1, 0, 0, 0), (0,), "sha256:z", 0.1)
    summary = summary_body([RowOutcome(_row("sync.a"), (passed,)), RowOutcome(_row("sync.b"), (unverified,))],
                           "reference")
    assert summary["verdict"] == "UNVERIFIED" and summary["unverified_rows"] == ["sync.b"]
    summary = summary_body([RowOutcome(_row("sync.a"), (failed,)), RowOutcome(_row("sync.b"), (unverified,))],
                           "reference")
    assert summary["verdict"] == "FAIL"


def test_an_invalid_receiver_url_is_invalid_input(tmp_path: Path) -> None:
    done = subprocess.run([CERTIFY, "run", "--receiver-url", "ftp://user:pw@example.invalid/x", "--out",
                           str(tmp_path / "out")], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "certify.invalid_input" in done.stderr and "pw" not in done.stderr
    assert not (tmp_path / "out" / "test_artifacts").exists()


def test_a_live_receiver_without_a_ledger_api_gives_unverified_never_pass(tmp_path: Path) -> None:
    # The mock receiver with its admin API on its own port: the data URL answers 404 on /_admin/,
    # so the harness, given only the data URL, cannot read the ledger, like a vendor's receiver.
    with receiver_process(RECEIVER, tmp_path / "receiver") as receiver:
        out = tmp_path / "out"
        done = subprocess.run(
            [CERTIFY, "run", "--receiver-url", receiver.data_url, "--only", "sync.none", "--sink", "reference",
             "--parallel", "1", "--out", str(out), "--json"],
            check=False, capture_output=True, text=True, timeout=300,
        )
        effects = receiver.effects()
    assert done.returncode == 4, done.stderr[-2000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["verdict"] == "UNVERIFIED" and summary["unverified_rows"] == ["sync.none"]
    matrix = json.loads((out / "test_artifacts" / "connectors" / "rest" / "remote_effect_fault_matrix.json")
                        .read_bytes())
    (row,) = matrix["rows"]
    assert row["sinks"]["reference"]["verdict"] == "UNVERIFIED"
    assert row["sinks"]["reference"]["exit_codes"] == [0]  # the sink says it succeeded ...
    assert effects  # ... and it really delivered through the proxy, yet that is not a PASS
