"""The async job API's decisions through HTTP: when the endpoint exists, what a submission must carry,
how each fence (filename key, bare 409, retention) answers a repeat, what faults do before and after
the job is accepted, and what every answer and request-log line says (docs/mock-receiver.md)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from mr_kill_support import (
    JOBS,
    PROBLEM,
    advance,
    async_behaviour,
    freeze_receiver_clock,
    problem_type,
    rule,
    submit_job,
)
from mr_support import admin_items, behaviour_with, bundled, client_for, csv_bytes, rows_for

pytestmark = pytest.mark.timeout(60)

START, END = "2026-05-01", "2026-05-04"
ROWS = rows_for(["2026-05-01", "2026-05-02", "2026-05-03"])
OTHER = rows_for(["2026-05-01"], tag="other")


def _requests(client, endpoint: str) -> list[dict]:
    return admin_items(client, "requests", endpoint=endpoint)


def _disabled():
    document = bundled("dataset-jobs").model_dump(mode="json")["async_jobs"]
    return behaviour_with("dataset-jobs", async_jobs={**document, "enabled": False})


# --- the endpoint and what a submission must carry ------------------------------------------------


@pytest.mark.parametrize("which", ["absent", "disabled"])
def test_without_enabled_async_jobs_submit_and_poll_are_404_async_jobs_disabled(tmp_path: Path, which: str) -> None:
    behaviour = bundled("stripe-like") if which == "absent" else _disabled()
    with client_for(behaviour, tmp_path) as client:
        for response in (submit_job(client, "mk-1", ROWS, START, END), client.get(f"{JOBS}/job_abc")):
            assert response.status_code == 404
            assert response.json() == {"type": PROBLEM + "async_jobs_disabled", "title": "Not found", "status": 404,
                                       "detail": "this receiver has no async job endpoint"}
        assert admin_items(client, "jobs") == []
        assert [(r["endpoint"], r["outcome"], r["status"]) for r in admin_items(client, "requests")] == [
            ("async_submit", "rejected", 404), ("job_poll", "rejected", 404)]


def test_a_submission_that_is_not_multipart_is_415(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        response = client.post(JOBS, content=csv_bytes(ROWS), headers={"content-type": "text/csv"})
        assert response.status_code == 415
        assert problem_type(response) == PROBLEM + "multipart_required"
        assert admin_items(client, "jobs") == []


def test_a_partition_replace_job_needs_both_range_parts(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        response = submit_job(client, "mk-1", ROWS, None, None)
        assert response.status_code == 422
        assert problem_type(response) == PROBLEM + "scope_required"
        assert admin_items(client, "jobs") == []


def test_an_append_job_may_come_without_a_range(tmp_path: Path) -> None:
    resources = {"measurements": {"mutation": "incremental_append", "date_field": "business_date"}}
    with client_for(behaviour_with("dataset-jobs", resources=resources), tmp_path) as client:
        accepted = submit_job(client, "mk-1", ROWS, None, None)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"], view["range_start"]) == ("complete", 3, None)


def test_a_file_part_with_an_empty_name_carries_no_key_and_is_422(tmp_path: Path) -> None:
    parts = [b'Content-Disposition: form-data; name="file"; filename=""\r\nContent-Type: application/gzip\r\n\r\n'
             + gzip.compress(csv_bytes(ROWS)),
             b'Content-Disposition: form-data; name="range_start"\r\n\r\n' + START.encode(),
             b'Content-Disposition: form-data; name="range_end"\r\n\r\n' + END.encode()]
    body = b"".join(b"--BOUNDARY\r\n" + part + b"\r\n" for part in parts) + b"--BOUNDARY--\r\n"
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        response = client.post(JOBS, content=body, headers={"content-type": "multipart/form-data; boundary=BOUNDARY"})
        assert response.status_code == 422
        assert problem_type(response) == PROBLEM + "bad_fence_key"
        assert admin_items(client, "jobs") == []


# --- acceptance, and what the logs say -----------------------------------------------------------


def test_an_accepted_job_and_its_polls_are_logged_with_their_keys(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        accepted = submit_job(client, "mk-1", ROWS, START, END)
        job_id = accepted.json()["job_id"]
        assert re.fullmatch(r"job_[0-9a-f]{24}", job_id)
        assert accepted.json() == {"job_id": job_id, "phase": "pending"}
        client.get(f"{JOBS}/{job_id}")
        client.get(f"{JOBS}/{job_id}")
        [submit] = _requests(client, "async_submit")
        assert (submit["method"], submit["resource"], submit["status"], submit["outcome"]) == (
            "POST", "measurements", 202, "accepted")
        assert (submit["job_id"], submit["receipt_id"], submit["mutation_key"]) == (job_id, job_id, "mk-1")
        [effect] = admin_items(client, "effects")
        polls = _requests(client, "job_poll")
        assert [(p["method"], p["resource"], p["status"], p["outcome"], p["mutation_key"], p["effect_id"])
                for p in polls] == [("GET", "measurements", 200, "observed", "mk-1", None),
                                    ("GET", "measurements", 200, "observed", "mk-1", effect["effect_id"])]


def test_an_unknown_job_is_a_logged_404_unknown_job(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        response = client.get(f"{JOBS}/job_nope")
        assert response.status_code == 404
        assert response.json() == {"type": PROBLEM + "unknown_job", "title": "Not found", "status": 404,
                                   "detail": "no such job"}
        [logged] = _requests(client, "job_poll")
        assert (logged["status"], logged["outcome"], logged["problem"], logged["job_id"]) == (
            404, "rejected", "unknown_job", "job_nope")


def test_an_expired_receipt_is_a_logged_problem_with_its_documented_body(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", ROWS, START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        client.get(f"{JOBS}/{job_id}")
        client.post("/_admin/clock/advance", json={"seconds": 86_401})
        expired = client.get(f"{JOBS}/{job_id}")
        assert expired.json() == {"type": PROBLEM + "receipt_expired", "title": "Receipt expired", "status": 410,
                                  "detail": "the job receipt is past its retention"}
        last = _requests(client, "job_poll")[-1]
        assert (last["status"], last["outcome"], last["problem"]) == (410, "rejected", "receipt_expired")


# --- the filename-key fence ----------------------------------------------------------------------


def test_a_repeat_gets_the_original_job_its_phase_and_location(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", ROWS, START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        repeat = submit_job(client, "mk-1", ROWS, START, END)
        assert repeat.status_code == 409
        assert repeat.json() == {"type": PROBLEM + "duplicate_submission", "title": "Duplicate submission",
                                 "status": 409, "detail": "this key and payload were already accepted",
                                 "job_id": job_id, "phase": "running"}
        assert repeat.headers["location"] == f"{JOBS}/{job_id}"
        logged = _requests(client, "async_submit")[-1]
        assert (logged["status"], logged["outcome"], logged["problem"], logged["job_id"], logged["receipt_id"]) == (
            409, "duplicate", "duplicate_submission", job_id, job_id)


def test_a_same_key_other_payload_is_a_logged_conflict_without_receipt(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        submit_job(client, "mk-1", ROWS, START, END)
        conflict = submit_job(client, "mk-1", OTHER, START, END)
        assert conflict.json() == {"type": PROBLEM + "duplicate_key_conflict", "title": "Duplicate key conflict",
                                   "status": 409,
                                   "detail": "the duplicate key was first used with a different payload or range"}
        logged = _requests(client, "async_submit")[-1]
        assert (logged["status"], logged["outcome"], logged["problem"], logged["job_id"]) == (
            409, "conflict", "duplicate_key_conflict", None)


def test_a_fence_key_is_forgotten_after_its_retention_only(tmp_path: Path) -> None:
    fence = {"type": "filename_key", "conflict_status": 409, "retention_seconds": 600}
    with client_for(async_behaviour(fence=fence), tmp_path) as client:
        first = submit_job(client, "mk-1", ROWS, START, END).json()["job_id"]
        client.post("/_admin/clock/advance", json={"seconds": 300})
        inside = submit_job(client, "mk-1", ROWS, START, END)
        assert inside.status_code == 409 and inside.json()["job_id"] == first
        client.post("/_admin/clock/advance", json={"seconds": 301})
        after = submit_job(client, "mk-1", ROWS, START, END)
        assert after.status_code == 202 and after.json()["job_id"] != first
        assert len(admin_items(client, "jobs", mutation_key="mk-1")) == 2


def test_a_fence_key_holds_on_the_last_instant_of_its_retention(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_receiver_clock(monkeypatch)
    fence = {"type": "filename_key", "conflict_status": 409, "retention_seconds": 600}
    with client_for(async_behaviour(fence=fence), tmp_path) as client:
        submit_job(client, "mk-1", ROWS, START, END)
        advance(client, 600)
        assert submit_job(client, "mk-1", ROWS, START, END).status_code == 409
        advance(client, 0.5)
        assert submit_job(client, "mk-1", ROWS, START, END).status_code == 202


def test_without_a_fence_every_submission_is_a_new_job(tmp_path: Path) -> None:
    with client_for(async_behaviour(fence={"type": "none"}), tmp_path) as client:
        ids = {submit_job(client, "mk-1", ROWS, START, END).json()["job_id"] for _ in range(2)}
        assert len(ids) == 2
        # The file-name key is still logged for forensics.
        assert [job["mutation_key"] for job in admin_items(client, "jobs")] == [None, None]
        assert {r["mutation_key"] for r in _requests(client, "async_submit")} == {"mk-1"}


def test_the_bare_409_fence_answers_a_repeated_payload_with_an_empty_409(tmp_path: Path) -> None:
    with client_for(async_behaviour(fence={"type": "bare_409"}), tmp_path) as client:
        assert submit_job(client, "mk-1", ROWS, START, END).status_code == 202
        repeat = submit_job(client, "mk-2", ROWS, START, END)  # another key, same payload and range
        assert (repeat.status_code, repeat.content) == (409, b"")
        assert submit_job(client, "mk-3", OTHER, START, END).status_code == 202
        assert len(admin_items(client, "jobs")) == 2
        assert [(r["status"], r["outcome"]) for r in _requests(client, "async_submit")] == [
            (202, "accepted"), (409, "duplicate"), (202, "accepted")]


# --- faults --------------------------------------------------------------------------------------


def test_a_fault_before_acceptance_creates_no_job_and_no_fence(tmp_path: Path) -> None:
    rules = [rule("busy", "async_submit", {"kind": "status", "status": 503}, nth=[1], methods=["POST"])]
    with client_for(async_behaviour(rules=rules), tmp_path) as client:
        fault = submit_job(client, "mk-1", ROWS, START, END)
        assert fault.status_code == 503 and problem_type(fault) == PROBLEM + "synthetic_fault"
        assert admin_items(client, "jobs") == []
        assert (_requests(client, "async_submit")[0]["status"], _requests(client, "async_submit")[0]["outcome"]) == (
            503, "fault")
        retry = submit_job(client, "mk-1", ROWS, START, END)
        assert retry.status_code == 202  # the key was not fenced by the faulted attempt


def test_a_fault_after_acceptance_keeps_the_job_and_fences_its_key(tmp_path: Path) -> None:
    rules = [rule("lost-answer", "async_submit", {"kind": "status", "status": 503, "after_effect": True}, nth=[1])]
    with client_for(async_behaviour(rules=rules), tmp_path) as client:
        fault = submit_job(client, "mk-1", ROWS, START, END)
        assert fault.status_code == 503
        [job] = admin_items(client, "jobs")
        [logged] = _requests(client, "async_submit")
        assert (logged["status"], logged["outcome"], logged["job_id"]) == (503, "accepted", job["job_id"])
        repeat = submit_job(client, "mk-1", ROWS, START, END)
        assert repeat.status_code == 409 and repeat.json()["job_id"] == job["job_id"]


def test_rules_match_the_submit_and_poll_methods(tmp_path: Path) -> None:
    rules = [rule("fail", "async_submit", {"kind": "job_failure"}, methods=["POST"]),
             rule("poll-busy", "job_poll", {"kind": "status", "status": 503}, nth=[1], methods=["GET"])]
    with client_for(async_behaviour(rules=rules), tmp_path) as client:
        job_id = submit_job(client, "mk-1", ROWS, START, END).json()["job_id"]
        busy = client.get(f"{JOBS}/{job_id}")
        assert busy.status_code == 503 and problem_type(busy) == PROBLEM + "synthetic_fault"
        assert admin_items(client, "jobs")[0]["polls"] == 0  # a faulted poll observes nothing
        assert [(r["status"], r["outcome"]) for r in _requests(client, "job_poll")] == [(503, "fault")]
        client.get(f"{JOBS}/{job_id}")
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "error"
