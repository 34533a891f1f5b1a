"""Async dataset jobs: lifecycle, clock, cancellation, failure, expiry, filename-key fence."""

from __future__ import annotations

from pathlib import Path

import pytest
from mr_kill_support import freeze_receiver_clock
from mr_support import admin_items, behaviour_with, bundled, client_for, job_files, rows_for

pytestmark = pytest.mark.timeout(60)

JOBS = "/mock/v1/dataset-jobs"
START, END = "2026-05-01", "2026-05-04"
ROWS = rows_for(["2026-05-01", "2026-05-02", "2026-05-03"])


def _submit(client, key: str = "mk-1", rows=ROWS, start: str = START, end: str = END):
    files, data = job_files(key, rows, start, end)
    return client.post(JOBS, files=files, data=data)


def _async(**changes):
    document = bundled("dataset-jobs").model_dump(mode="json")["async_jobs"]
    document.update(changes)
    return behaviour_with("dataset-jobs", async_jobs=document)


def test_job_is_accepted_then_completes_after_the_configured_polls(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        accepted = _submit(client)
        assert accepted.status_code == 202
        job_id = accepted.json()["job_id"]
        assert accepted.json()["phase"] == "pending"
        assert accepted.headers["location"] == f"{JOBS}/{job_id}"
        assert admin_items(client, "effects") == []  # nothing applied while the job runs
        running = client.get(f"{JOBS}/{job_id}").json()
        assert (running["phase"], running["accepted_rows"]) == ("running", None)
        done = client.get(f"{JOBS}/{job_id}").json()
        assert (done["phase"], done["accepted_rows"], done["rejected_rows"]) == ("complete", 3, 0)
        effects = admin_items(client, "effects", mutation_key="mk-1")
        assert len(effects) == 1 and effects[0]["job_id"] == job_id and effects[0]["accepted_rows"] == 3


def test_a_thirty_minute_job_finishes_when_the_admin_clock_advances(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_receiver_clock(monkeypatch)  # only the admin clock moves: a slow machine cannot add the last second
    with client_for(_async(complete_after_polls=None, complete_after_seconds=1800), tmp_path) as client:
        job_id = _submit(client).json()["job_id"]
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "running"
        client.post("/_admin/clock/advance", json={"seconds": 1799})
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "running"
        client.post("/_admin/clock/advance", json={"seconds": 1})
        # The clock advance itself settles due jobs: ground truth shows the effect before any poll.
        assert len(admin_items(client, "effects")) == 1
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "complete"


def test_same_key_same_payload_is_a_409_carrying_the_original_job(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = _submit(client).json()["job_id"]
        duplicate = _submit(client)
        assert duplicate.status_code == 409
        assert duplicate.json()["job_id"] == job_id
        assert duplicate.json()["type"].endswith("duplicate_submission")
        for _ in range(2):
            client.get(f"{JOBS}/{job_id}")
        assert len(admin_items(client, "effects", mutation_key="mk-1")) == 1
        assert len(admin_items(client, "jobs", mutation_key="mk-1")) == 1
        assert [r["outcome"] for r in admin_items(client, "requests", endpoint="async_submit")] == [
            "accepted", "duplicate"]


def test_same_key_different_payload_is_a_conflict_without_receipt(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        assert _submit(client).status_code == 202
        changed = _submit(client, rows=rows_for(["2026-05-01"], tag="other"))
        assert changed.status_code == 409
        assert changed.json()["type"].endswith("duplicate_key_conflict")
        assert "job_id" not in changed.json()
        other_range = _submit(client, end="2026-05-05")
        assert other_range.status_code == 409 and "job_id" not in other_range.json()
    with client_for(_async(fence={"type": "filename_key", "conflict_status": 422}), tmp_path / "b") as client:
        _submit(client)
        assert _submit(client, rows=rows_for(["2026-05-01"], tag="other")).status_code == 422


def test_external_cancellation_applies_nothing(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = _submit(client).json()["job_id"]
        cancelled = client.post(f"/_admin/jobs/{job_id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"]) == ("cancelled", None)
        assert admin_items(client, "effects") == []
        assert client.post(f"/_admin/jobs/{job_id}/cancel").status_code == 409
        assert client.post("/_admin/jobs/job_unknown/cancel").status_code == 404


def test_job_failure_ends_in_error_without_effect(tmp_path: Path) -> None:
    rules = [{"name": "fail-first", "match": {"endpoints": ["async_submit"]}, "when": {"nth": [1]},
              "action": {"kind": "job_failure"}}]
    with client_for(behaviour_with("dataset-jobs", rules=rules), tmp_path) as client:
        failed = _submit(client).json()["job_id"]
        healthy = _submit(client, key="mk-2").json()["job_id"]
        for _ in range(2):
            view = client.get(f"{JOBS}/{failed}").json()
            client.get(f"{JOBS}/{healthy}")
        assert (view["phase"], view["accepted_rows"], view["rejected_rows"]) == ("error", 0, 3)
        effects = admin_items(client, "effects")
        assert [effect["job_id"] for effect in effects] == [healthy]


def test_receipt_expires_after_its_ttl(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = _submit(client).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "complete"
        client.post("/_admin/clock/advance", json={"seconds": 86_401})
        expired = client.get(f"{JOBS}/{job_id}")
        assert expired.status_code == 410
        assert expired.json()["type"].endswith("receipt_expired")
        # Expiry of the receipt is not loss of the effect.
        assert len(admin_items(client, "effects")) == 1
    with client_for(_async(expired_status=404), tmp_path / "b") as client:
        job_id = _submit(client).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        client.get(f"{JOBS}/{job_id}")
        client.post("/_admin/clock/advance", json={"seconds": 86_401})
        assert client.get(f"{JOBS}/{job_id}").status_code == 404


def test_phase_vocabulary_is_configurable(tmp_path: Path) -> None:
    phases = {"pending": "QUEUED", "running": "IN_PROGRESS", "complete": "DONE", "incomplete": "PARTIAL",
              "error": "FAILED", "cancelled": "ABORTED"}
    with client_for(_async(phases=phases), tmp_path) as client:
        accepted = _submit(client).json()
        assert accepted["phase"] == "QUEUED"
        assert client.get(f"{JOBS}/{accepted['job_id']}").json()["phase"] == "IN_PROGRESS"
        assert client.get(f"{JOBS}/{accepted['job_id']}").json()["phase"] == "DONE"


def test_partial_rows_make_an_incomplete_job(tmp_path: Path) -> None:
    rows = rows_for(["2026-05-01", "2026-04-30"])
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = _submit(client, rows=rows).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"], view["rejected_rows"]) == ("incomplete", 1, 1)
        assert view["records"] == [{"index": 1, "status": "rejected", "reason": "out_of_scope"}]


def test_unknown_job_and_disabled_jobs_are_404_problems(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        assert client.get(f"{JOBS}/job_nope").status_code == 404
    with client_for(bundled("stripe-like"), tmp_path / "b") as client:
        response = _submit(client)
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("key", ["bad key", "../escape", "dir/key", "", "x" * 201])
def test_filename_without_a_valid_key_is_rejected(tmp_path: Path, key: str) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        files, data = job_files(key, ROWS, START, END)
        response = client.post(JOBS, files=files, data=data)
        assert response.status_code == 422
        assert admin_items(client, "jobs") == []
        assert admin_items(client, "requests")[0]["outcome"] == "rejected"
