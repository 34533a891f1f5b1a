"""The acceptance's judges and evidence without running Airflow: worker time from records and the
proxy's log, the semaphore's concurrency from the receiver's jobs, the signed artifact (verify,
tamper, gate), and `certify airflow`'s refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from certification.airflow.command import write_signed
from certification.airflow.evidence import ARTIFACT, ARTIFACTS, gate_problems
from certification.airflow.figures import job_post_times, poller_worker_time, worker_time
from certification.airflow.scenarios import max_concurrent_jobs
from certification.canonical_json import with_content_digest
from certification.gate import ARTIFACTS as GATE_ARTIFACTS
from certification.signing import generate_key
from certification.verify import VerificationFailed, verify_artifact


def _record(phase: str, entered: float, exited: float, started: float, operator: float, cpu: float = 0.1) -> dict:
    return {"phase": phase, "entered_wall": entered, "exited_wall": exited, "process_started_wall": started,
            "operator_seconds": operator, "operator_cpu_seconds": cpu}


def test_worker_time_counts_only_what_follows_the_submission() -> None:
    records = [_record("execute", 100.0, 104.0, 99.0, 4.0), _record("execute_complete", 200.0, 200.4, 199.0, 0.4)]
    log = [{"method": "POST", "path": "/mock/v1/dataset-jobs", "timestamps": {"response": 103.5, "delivered": 103.6}},
           {"method": "GET", "path": "/mock/v1/dataset-jobs/j1", "timestamps": {"response": 150.0}},
           {"method": "POST", "path": "/other", "timestamps": {"response": 103.0}}]
    figures = worker_time(records, job_post_times(log), triggered_wall=90.0)
    assert figures == {"measured": True, "executions_after_submit": 2, "operator_seconds_after_submit": 0.8,
                       "operator_cpu_seconds_after_submit": 0.1, "task_process_seconds_after_submit": 1.8}


def test_worker_time_after_a_worker_loss_counts_every_later_execution() -> None:
    # The try that submitted died before writing a record; the retry and the resumption count whole.
    records = [_record("execute", 300.0, 301.0, 299.5, 1.0), _record("execute_complete", 400.0, 400.5, 399.0, 0.5)]
    figures = worker_time(records, [250.0], triggered_wall=240.0)
    assert figures["task_process_seconds_after_submit"] == 3.0 and figures["executions_after_submit"] == 2


def test_worker_time_without_a_submission_is_not_measured() -> None:
    assert worker_time([_record("execute", 1, 2, 0.5, 1)], [0.1], triggered_wall=0.5)["measured"] is False
    assert worker_time([], [1.0], triggered_wall=0)["measured"] is False
    assert poller_worker_time([{"exited_wall": 130.0, "submitted_wall": 100.0, "polls": 9}])[
        "task_process_seconds_after_submit"] == 30.0


@pytest.mark.parametrize(("jobs", "peak"), [
    ([], 0),
    ([(0, 10), (10, 20), (20, None)], 1),  # back to back: one ends as the next starts
    ([(0, 10), (5, 20)], 2),
    ([(0, None), (1, 2), (3, 4)], 2),
])
def test_max_concurrent_jobs(jobs: list[tuple[float, float | None]], peak: int) -> None:
    assert max_concurrent_jobs([{"created_at": c, "terminal_at": t} for c, t in jobs]) == peak


def _document(verdict: str = "PASS", passed: bool = True, leak: bool = False) -> dict[str, Any]:
    return with_content_digest({
        "schema_id": "restproof.airflow_async_acceptance.v1", "verdict": verdict, "valid": True, "quick": True,
        "environment": {"airflow_version": "3.2.2"}, "figures": {"meets_seed_target": True},
        "scenarios": [{"id": "thirty_minute_job", "passed": passed}], "baselines": [],
        "sentinel_scan": {"passed": not leak}})


def _run(tmp: Path, name: str, document: dict[str, Any]) -> tuple[Path, Path]:
    run = tmp / name
    keys = generate_key(run / "keys")
    write_signed(run / ARTIFACTS / ARTIFACT, document, keys.private, run / "keys")
    return run, keys.public


def test_the_artifact_is_signed_verified_and_gated(tmp_path: Path) -> None:
    assert ARTIFACTS == GATE_ARTIFACTS
    base, base_key = _run(tmp_path, "base", _document())
    good, good_key = _run(tmp_path, "good", _document())
    assert verify_artifact(good / ARTIFACTS / ARTIFACT, good_key).predicate["verdict"] == "PASS"
    assert gate_problems(base, good, baseline_key=base_key, current_key=good_key) == []
    bad, bad_key = _run(tmp_path, "bad", _document("FAIL", passed=False, leak=True))
    problems = gate_problems(base, bad, baseline_key=base_key, current_key=bad_key)
    assert any("verdict FAIL" in p for p in problems) and any("thirty_minute_job failed" in p for p in problems)
    assert any("sentinel" in p for p in problems)
    missing = tmp_path / "missing"
    (missing / ARTIFACTS).mkdir(parents=True)
    assert gate_problems(base, missing, baseline_key=base_key, current_key=good_key) == [
        f"{ARTIFACT}: in the baseline, missing now"]
    # One changed byte: the signature no longer names the artifact, and the gate says so.
    path = good / ARTIFACTS / ARTIFACT
    path.write_bytes(path.read_bytes().replace(b'"PASS"', b'"PASs"'))
    with pytest.raises(VerificationFailed):
        verify_artifact(path, good_key)
    assert gate_problems(base, good, baseline_key=base_key, current_key=good_key)[0].startswith(ARTIFACT)


def test_evidence_is_never_overwritten(tmp_path: Path) -> None:
    run, _ = _run(tmp_path, "once", _document())
    import typer

    with pytest.raises(typer.Exit) as stopped:
        write_signed(run / ARTIFACTS / ARTIFACT, _document(), None, run / "keys2")
    assert stopped.value.exit_code == 2


@pytest.mark.parametrize("version", ["3.2", "latest", "4.0.0", "3.2.2; rm -rf /"])
def test_certify_airflow_refuses_a_bad_version(version: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "certification", "airflow", "--airflow-version", version,
                           "--out", str(tmp_path / "out"), "--venv-root", str(tmp_path / "venvs")],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "error[certify.invalid_input]" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "venvs").exists()
