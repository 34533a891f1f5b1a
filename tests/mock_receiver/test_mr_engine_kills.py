"""The engine's decisions through the receiver's HTTP API: scope validation, the per-record partition
(half-open range, date forms, reasons), what an effect records, and the async job state machine
(when a job finishes, what it applies, how it is shown, that a terminal job never moves again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mr_kill_support import (
    BATCHES,
    JOBS,
    PROBLEM,
    advance,
    async_behaviour,
    freeze_receiver_clock,
    problem_type,
    rule,
    submit_job,
    sync_behaviour,
)
from mr_support import admin_items, bundled, client_for, rows_for

pytestmark = pytest.mark.timeout(60)

MEASUREMENTS = BATCHES.format("measurements")
EVENTS = BATCHES.format("events")
START, END = "2026-05-01", "2026-05-04"
DAYS = ["2026-05-01", "2026-05-02", "2026-05-03"]


# --- scope ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    {"range_start": "2026-05-01"},
    {"range_end": "2026-05-04"},
    {"range_start": "2026-05-01", "range_end": "May 4th"},
    {"range_start": "first", "range_end": "2026-05-04"},
    {"range_start": "2026-05-04", "range_end": "2026-05-04"},
    {"range_start": "2026-05-05", "range_end": "2026-05-04"},
    # Forms date.fromisoformat takes but the documented YYYY-MM-DD is not: basic, ISO week, ordinal.
    {"range_start": "20260501", "range_end": "2026-05-04"},
    {"range_start": "2026-05-01", "range_end": "2026-W19-1"},
    {"range_start": "2026-121", "range_end": "2026-05-04"},
    {"range_start": "2026-05-01", "range_end": "2026-05-04\n"},
])
def test_a_scope_that_is_not_a_half_open_iso_date_range_is_422_bad_scope(tmp_path: Path,
                                                                        params: dict[str, str]) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(EVENTS, params=params, json=rows_for(DAYS, date_field="event_date"))
        assert response.status_code == 422
        assert problem_type(response) == PROBLEM + "bad_scope"
        assert admin_items(client, "effects") == []


def test_a_one_day_range_is_valid(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(MEASUREMENTS, params={"range_start": "2026-05-01", "range_end": "2026-05-02"},
                               json=rows_for(DAYS[:1]))
        assert response.status_code == 200, response.text
        assert (response.json()["range_start"], response.json()["range_end"]) == ("2026-05-01", "2026-05-02")
        effect = admin_items(client, "effects")[0]
        assert (effect["scope_start"], effect["scope_end"], effect["accepted_rows"]) == ("2026-05-01",
                                                                                        "2026-05-02", 1)


# --- the per-record partition --------------------------------------------------------------------


def test_each_record_is_judged_by_its_date_against_the_half_open_range(tmp_path: Path) -> None:
    rows = [
        {"business_date": "2026-05-01", "site": "on the start"},        # accepted: start is inclusive
        {"business_date": "2026-05-04", "site": "on the end"},          # out_of_scope: end is exclusive
        {"business_date": "20260502", "site": "basic form"},            # invalid_date: fewer than 10 chars
        {"site": "no date at all"},                                     # invalid_date: missing
        {"business_date": "2026-05-03T23:59:59Z", "site": "timestamp"},  # accepted: its first 10 chars
        {"business_date": "2026-W18-6", "site": "week form"},           # invalid_date: not YYYY-MM-DD
        {"business_date": "2026-05-02garbage", "site": "no time"},      # invalid_date: no date-time either
        {"business_date": "2026-04-30", "site": "before"},              # out_of_scope
    ]
    with client_for(sync_behaviour(record_results="all"), tmp_path) as client:
        response = client.post(MEASUREMENTS, params={"range_start": START, "range_end": END}, json=rows)
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (2, 6)
        assert body["records"] == [
            {"index": 0, "status": "accepted"},
            {"index": 1, "status": "rejected", "reason": "out_of_scope"},
            {"index": 2, "status": "rejected", "reason": "invalid_date"},
            {"index": 3, "status": "rejected", "reason": "invalid_date"},
            {"index": 4, "status": "accepted"},
            {"index": 5, "status": "rejected", "reason": "invalid_date"},
            {"index": 6, "status": "rejected", "reason": "invalid_date"},
            {"index": 7, "status": "rejected", "reason": "out_of_scope"},
        ]
        summary = client.get("/mock/v1/resources/measurements/summary",
                             params={"range_start": "2026-05-03", "range_end": "2026-05-04"}).json()
        assert summary["row_count"] == 1  # the timestamp row is stored under its date


@pytest.mark.parametrize(("day", "accepted"), [
    ("2026-05-03", True), ("2026-05-03T10:00:00Z", True), ("2026-05-03t10:00", True), ("2026-05-03 10:00", True),
    ("2026-05-03T10:00:00.123456+02:00", True), ("2026-05-03X10:00", False), ("2026-05-03T25:00", False),
    ("2026-05-03T", False), ("2026-05-03 ", False), ("2026-05-32", False), ("2026-W18-7", False),
    ("2026-05-3", False), ("2026-05-03\n", False)])
def test_a_row_date_is_an_iso_date_or_a_date_time_starting_with_one(tmp_path: Path, day: str,
                                                                     accepted: bool) -> None:
    rows = [{"business_date": day, "site": "one"}]
    with client_for(sync_behaviour(record_results="all"), tmp_path) as client:
        body = client.post(MEASUREMENTS, params={"range_start": START, "range_end": END}, json=rows).json()
        expected = {"index": 0, "status": "accepted"} if accepted else {
            "index": 0, "status": "rejected", "reason": "invalid_date"}
        assert body["records"] == [expected]


def test_an_append_without_a_range_accepts_every_dated_record(tmp_path: Path) -> None:
    rows = [*rows_for(["1999-01-01", "2099-12-31"], date_field="event_date"), {"site": "undated"}]
    with client_for(sync_behaviour(record_results="all"), tmp_path) as client:
        body = client.post(EVENTS, json=rows).json()
        assert body["records"] == [{"index": 0, "status": "accepted"}, {"index": 1, "status": "accepted"},
                                   {"index": 2, "status": "rejected", "reason": "invalid_date"}]


def test_a_reject_rows_rule_rejects_with_the_synthetic_reason(tmp_path: Path) -> None:
    rules = [rule("every-second", "sync_submit", {"kind": "reject_rows", "every_nth_row": 2})]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        body = client.post(MEASUREMENTS, params={"range_start": START, "range_end": END},
                           json=rows_for(DAYS)).json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (2, 1)
        assert body["records"] == [{"index": 1, "status": "rejected", "reason": "synthetic_rejection"}]


def test_record_results_none_leaves_the_records_out(tmp_path: Path) -> None:
    rows = rows_for(["2026-05-01", "2026-04-01"])
    with client_for(sync_behaviour(record_results="none"), tmp_path) as client:
        body = client.post(MEASUREMENTS, params={"range_start": START, "range_end": END}, json=rows).json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (1, 1)
        assert "records" not in body
    with client_for(async_behaviour(record_results="none"), tmp_path / "async") as client:
        job_id = submit_job(client, "mk-1", rows, START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["rejected_rows"]) == ("incomplete", 1)
        assert "records" not in view


# --- what an effect records ----------------------------------------------------------------------


def test_an_append_effect_replaces_nothing_and_records_its_request(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        for tag in ("a", "b"):
            assert client.post(EVENTS, json=rows_for(DAYS, tag=tag, date_field="event_date")).status_code == 200
        requests = admin_items(client, "requests")
        effects = admin_items(client, "effects")
        assert [(e["mutation"], e["replaced_rows"], e["accepted_rows"]) for e in effects] == [
            ("incremental_append", 0, 3), ("incremental_append", 0, 3)]
        assert [e["request_id"] for e in effects] == [r["request_id"] for r in requests]
        assert [e["receipt_id"] for e in effects] == [r["receipt_id"] for r in requests]


def test_a_completed_job_stores_its_rows_as_one_effect_of_its_own_request(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        for _ in range(2):
            client.get(f"{JOBS}/{job_id}")
        summary = client.get("/mock/v1/resources/measurements/summary",
                             params={"range_start": START, "range_end": END}).json()
        assert summary["row_count"] == 3  # the rows are kept: the summary sees them
        [effect] = admin_items(client, "effects")
        [job] = admin_items(client, "jobs")
        [submit] = admin_items(client, "requests", endpoint="async_submit")
        assert effect["content_digest"] == summary["content_digest"]
        assert (effect["request_id"], effect["receipt_id"], effect["job_id"]) == (submit["request_id"], job_id, job_id)
        assert (effect["payload_digest"], effect["mutation_key"]) == (job["payload_digest"], "mk-1")
        assert (effect["scope_start"], effect["scope_end"], effect["mutation"]) == (START, END, "partition_replace")
        assert job["effect_id"] == effect["effect_id"] and job["state"] == "complete"


def test_an_incomplete_job_applies_its_accepted_rows(tmp_path: Path) -> None:
    rows = rows_for(["2026-05-01", "2026-05-02", "2026-06-01"])
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows, START, END).json()["job_id"]
        for _ in range(2):
            view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"], view["rejected_rows"]) == ("incomplete", 2, 1)
        [effect] = admin_items(client, "effects")
        assert (effect["job_id"], effect["accepted_rows"], effect["rejected_rows"]) == (job_id, 2, 1)


def test_a_miscounting_job_reports_the_shifted_counts_but_applies_the_true_rows(tmp_path: Path) -> None:
    rules = [rule("miscount", "async_submit", {"kind": "miscount", "accepted_delta": 2, "rejected_delta": 1})]
    rows = rows_for(["2026-05-01", "2026-05-02", "2026-06-01"])
    with client_for(async_behaviour(rules=rules), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows, START, END).json()["job_id"]
        for _ in range(2):
            view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["accepted_rows"], view["rejected_rows"]) == (4, 2)
        [effect] = admin_items(client, "effects")
        assert (effect["accepted_rows"], effect["rejected_rows"]) == (2, 1)
        assert (effect["reported_accepted_rows"], effect["reported_rejected_rows"]) == (4, 2)


# --- the job state machine -----------------------------------------------------------------------


def test_the_job_view_carries_every_documented_field(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        running = client.get(f"{JOBS}/{job_id}").json()
        assert running == {"job_id": job_id, "phase": "running", "resource": "measurements",
                           "range_start": START, "range_end": END, "accepted_rows": None, "rejected_rows": None}
        done = client.get(f"{JOBS}/{job_id}").json()
        assert done == {"job_id": job_id, "phase": "complete", "resource": "measurements", "range_start": START,
                        "range_end": END, "accepted_rows": 3, "rejected_rows": 0, "records": []}


@pytest.mark.parametrize("failing", [False, True])
def test_a_terminal_job_never_moves_again(tmp_path: Path, failing: bool) -> None:
    """complete, incomplete and error are final: more polls count nothing, apply nothing, re-date nothing."""
    rules = [rule("fail", "async_submit", {"kind": "job_failure"}, nth=[1])] if failing else []
    with client_for(async_behaviour(rules=rules), tmp_path) as client:
        full = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        partial = submit_job(client, "mk-2", rows_for(["2026-05-01", "2026-06-01"]), START, END).json()["job_id"]
        for _ in range(2):
            for job_id in (full, partial):
                client.get(f"{JOBS}/{job_id}")
        before = {job["job_id"]: job for job in admin_items(client, "jobs")}
        effects = admin_items(client, "effects")
        assert {job["state"] for job in before.values()} == ({"error", "incomplete"} if failing
                                                             else {"complete", "incomplete"})
        client.post("/_admin/clock/advance", json={"seconds": 3600})
        for _ in range(3):
            for job_id in (full, partial):
                assert client.get(f"{JOBS}/{job_id}").status_code == 200
        after = {job["job_id"]: job for job in admin_items(client, "jobs")}
        assert after == before
        assert admin_items(client, "effects") == effects
        assert client.post(f"/_admin/jobs/{full}/cancel").status_code == 409


def test_a_failed_job_shows_every_row_rejected_and_no_records(tmp_path: Path) -> None:
    rules = [rule("fail", "async_submit", {"kind": "job_failure"})]
    rows = rows_for(["2026-05-01", "2026-05-02", "2026-06-01"])
    with client_for(async_behaviour(rules=rules, record_results="all"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows, START, END).json()["job_id"]
        for _ in range(2):
            view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"], view["rejected_rows"]) == ("error", 0, 3)
        assert "records" not in view
        assert admin_items(client, "effects") == []


def test_record_results_all_lists_every_row_of_a_finished_job(tmp_path: Path) -> None:
    rows = rows_for(["2026-05-01", "2026-06-01", "2026-05-02"])
    with client_for(async_behaviour(record_results="all"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows, START, END).json()["job_id"]
        running = client.get(f"{JOBS}/{job_id}").json()
        assert "records" not in running
        view = client.get(f"{JOBS}/{job_id}").json()
        assert view["records"] == [{"index": 0, "status": "accepted"},
                                   {"index": 1, "status": "rejected", "reason": "out_of_scope"},
                                   {"index": 2, "status": "accepted"}]


def test_a_job_due_by_time_finishes_at_its_first_poll(tmp_path: Path) -> None:
    """complete_after_seconds alone decides; the poll sees it (no admin call settled it before)."""
    with client_for(async_behaviour(complete_after_polls=None, complete_after_seconds=0), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        view = client.get(f"{JOBS}/{job_id}").json()
        assert (view["phase"], view["accepted_rows"]) == ("complete", 3)


def test_a_job_without_a_time_limit_finishes_by_polls_only(tmp_path: Path) -> None:
    with client_for(async_behaviour(complete_after_seconds=None, complete_after_polls=3), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        client.post("/_admin/clock/advance", json={"seconds": 10 * 86_400})
        assert [client.get(f"{JOBS}/{job_id}").json()["phase"] for _ in range(3)] == [
            "running", "running", "complete"]
        assert len(admin_items(client, "effects")) == 1


def test_the_clock_settles_a_due_job_without_a_poll(tmp_path: Path) -> None:
    with client_for(async_behaviour(complete_after_polls=None, complete_after_seconds=600), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        client.post("/_admin/clock/advance", json={"seconds": 300})
        assert admin_items(client, "effects") == []
        assert admin_items(client, "jobs")[0]["state"] == "pending"
        client.post("/_admin/clock/advance", json={"seconds": 301})
        [job] = admin_items(client, "jobs")
        assert (job["job_id"], job["state"], job["polls"]) == (job_id, "complete", 0)
        assert len(admin_items(client, "effects")) == 1


def test_a_receipt_without_a_ttl_never_expires(tmp_path: Path) -> None:
    with client_for(async_behaviour(receipt_ttl_seconds=None), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "complete"
        client.post("/_admin/clock/advance", json={"seconds": 10 * 365 * 86_400})
        late = client.get(f"{JOBS}/{job_id}")
        assert late.status_code == 200 and late.json()["phase"] == "complete"


def test_a_receipt_is_still_served_inside_its_ttl(tmp_path: Path) -> None:
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        client.get(f"{JOBS}/{job_id}")
        client.post("/_admin/clock/advance", json={"seconds": 86_000})
        assert client.get(f"{JOBS}/{job_id}").status_code == 200
        client.post("/_admin/clock/advance", json={"seconds": 401})
        expired = client.get(f"{JOBS}/{job_id}")
        assert expired.status_code == 410 and problem_type(expired) == PROBLEM + "receipt_expired"


# --- boundaries, on a frozen receiver clock ------------------------------------------------------


def test_a_job_is_due_at_the_very_instant_of_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_receiver_clock(monkeypatch)
    with client_for(async_behaviour(complete_after_polls=None, complete_after_seconds=0), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        assert client.get(f"{JOBS}/{job_id}").json()["phase"] == "complete"  # same instant as its submission


def test_a_receipt_is_served_on_the_last_instant_of_its_ttl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_receiver_clock(monkeypatch)
    with client_for(bundled("dataset-jobs"), tmp_path) as client:
        job_id = submit_job(client, "mk-1", rows_for(DAYS), START, END).json()["job_id"]
        client.get(f"{JOBS}/{job_id}")
        client.get(f"{JOBS}/{job_id}")
        advance(client, 86_400)
        assert client.get(f"{JOBS}/{job_id}").status_code == 200
        advance(client, 0.5)
        assert client.get(f"{JOBS}/{job_id}").status_code == 410
