"""The sync API's intake, application and summary through HTTP: which resources and methods exist,
the exact success answer and what it logs, synthetic faults before and after the effect, miscounts,
and the summary (its body, its faults, the jobs it settles, ledger-only storage)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mr_kill_support import BATCHES, PROBLEM, async_behaviour, problem_type, rule, submit_job, sync_behaviour
from mr_support import admin_items, behaviour_with, bundled, client_for, rows_for

pytestmark = pytest.mark.timeout(60)

URL = BATCHES.format("measurements")
SUMMARY = "/mock/v1/resources/{}/summary"
RANGE = {"range_start": "2026-04-01", "range_end": "2026-04-04"}
ROWS = rows_for(["2026-04-01", "2026-04-02", "2026-04-03"])
UNKNOWN = {"type": PROBLEM + "unknown_resource", "title": "Not found", "status": 404,
           "detail": "no such resource on this receiver"}


# --- resources and methods -----------------------------------------------------------------------


def test_an_unknown_resource_is_a_logged_404_on_batches_and_summary(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(BATCHES.format("nope"), params=RANGE, json=ROWS)
        assert (response.status_code, response.json()) == (404, UNKNOWN)
        assert client.get(SUMMARY.format("nope")).json() == UNKNOWN
        [logged] = admin_items(client, "requests")
        assert (logged["resource"], logged["status"], logged["outcome"], logged["problem"]) == (
            "nope", 404, "rejected", "unknown_resource")


def test_a_receiver_with_sync_disabled_has_no_batch_resource(tmp_path: Path) -> None:
    with client_for(sync_behaviour(enabled=False), tmp_path) as client:
        response = client.post(URL, params=RANGE, json=ROWS)
        assert (response.status_code, response.json()) == (404, UNKNOWN)
        assert admin_items(client, "effects") == []


def test_put_on_a_resource_without_put_idempotent_is_405_allowing_post(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.put(URL, params=RANGE, json=ROWS)
        assert response.status_code == 405
        assert problem_type(response) == PROBLEM + "method_not_allowed"
        assert response.headers["allow"] == "POST"
        assert client.post(URL, params=RANGE, json=ROWS).status_code == 200


# --- the success answer and what it logs ----------------------------------------------------------


def test_the_success_answer_is_the_documented_compact_json_and_is_logged(tmp_path: Path) -> None:
    rows = [*ROWS, {"business_date": "2026-05-01", "site": "late"}]
    with client_for(bundled("stripe-like"), tmp_path) as client:
        response = client.post(URL, params=RANGE, json=rows, headers={"Idempotency-Key": "key-1"})
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        receipt = response.json()["receipt_id"]
        assert re.fullmatch(r"rcpt_[0-9a-f]{24}", receipt)
        expected = {"receipt_id": receipt, "resource": "measurements", "range_start": "2026-04-01",
                    "range_end": "2026-04-04", "accepted_rows": 3, "rejected_rows": 1,
                    "records": [{"index": 3, "status": "rejected", "reason": "out_of_scope"}]}
        assert response.content == json.dumps(expected, separators=(",", ":")).encode()
        [logged] = admin_items(client, "requests")
        [effect] = admin_items(client, "effects")
        assert (logged["endpoint"], logged["method"], logged["resource"], logged["status"], logged["outcome"]) == (
            "sync_submit", "POST", "measurements", 200, "applied")
        assert (logged["receipt_id"], logged["effect_id"]) == (receipt, effect["effect_id"])
        assert effect["payload_digest"] == logged["payload_digest"] and effect["payload_digest"].startswith("sha256:")


def test_the_configured_success_status_is_answered_and_logged(tmp_path: Path) -> None:
    with client_for(sync_behaviour(success_status=201), tmp_path) as client:
        assert client.post(URL, params=RANGE, json=ROWS).status_code == 201
        assert admin_items(client, "requests")[0]["status"] == 201


def test_a_miscount_shifts_the_reported_counts_only(tmp_path: Path) -> None:
    rules = [rule("miscount", "sync_submit", {"kind": "miscount", "accepted_delta": 2, "rejected_delta": 1})]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        body = client.post(URL, params=RANGE, json=ROWS).json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (5, 1)
        [effect] = admin_items(client, "effects")
        assert (effect["accepted_rows"], effect["reported_accepted_rows"], effect["reported_rejected_rows"]) == (
            3, 5, 1)


# --- synthetic faults ----------------------------------------------------------------------------


def test_a_409_fault_is_bare_and_keeps_its_retry_after(tmp_path: Path) -> None:
    action = {"kind": "status", "status": 409, "retry_after": {"seconds": 7}}
    with client_for(sync_behaviour(rules=[rule("conflict", "sync_submit", action)]), tmp_path) as client:
        response = client.post(URL, params=RANGE, json=ROWS)
        assert (response.status_code, response.content, response.headers["retry-after"]) == (409, b"", "7")
        assert [(r["status"], r["outcome"]) for r in admin_items(client, "requests")] == [(409, "fault")]
        assert admin_items(client, "effects") == []


def test_a_5xx_fault_is_a_documented_problem_with_its_retry_after(tmp_path: Path) -> None:
    action = {"kind": "status", "status": 503, "retry_after": {"seconds": 30}}
    with client_for(sync_behaviour(rules=[rule("busy", "sync_submit", action)]), tmp_path) as client:
        response = client.post(URL, params=RANGE, json=ROWS)
        assert response.status_code == 503 and response.headers["retry-after"] == "30"
        assert response.json() == {"type": PROBLEM + "synthetic_fault", "title": "Synthetic fault", "status": 503,
                                   "detail": "configured by the receiver behaviour"}
    plain = sync_behaviour(rules=[rule("busy", "sync_submit", {"kind": "status", "status": 503})])
    with client_for(plain, tmp_path / "plain") as client:
        assert "retry-after" not in client.post(URL, params=RANGE, json=ROWS).headers


def test_a_fault_after_the_effect_applies_and_answers_the_fault(tmp_path: Path) -> None:
    action = {"kind": "status", "status": 503, "after_effect": True}
    with client_for(sync_behaviour(fence={"type": "none"}, rules=[rule("lost", "sync_submit", action)]),
                    tmp_path) as client:
        response = client.post(URL, params=RANGE, json=ROWS)
        assert response.status_code == 503 and problem_type(response) == PROBLEM + "synthetic_fault"
        [effect] = admin_items(client, "effects")
        [logged] = admin_items(client, "requests")
        assert (logged["status"], logged["outcome"], logged["effect_id"]) == (503, "applied", effect["effect_id"])


# --- the summary ---------------------------------------------------------------------------------


def test_the_summary_body_names_its_resource_and_range(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        client.post(URL, params=RANGE, json=ROWS)
        summary = client.get(SUMMARY.format("measurements"), params=RANGE).json()
        assert set(summary) == {"resource", "range_start", "range_end", "row_count", "content_digest",
                                "content_digest_v2"}
        assert (summary["resource"], summary["range_start"], summary["range_end"], summary["row_count"]) == (
            "measurements", "2026-04-01", "2026-04-04", 3)
        assert summary["content_digest"] == admin_items(client, "effects")[0]["content_digest"]


def test_a_summary_fault_rule_matches_get_and_answers_the_fault(tmp_path: Path) -> None:
    rules = [rule("busy", "summary", {"kind": "status", "status": 503}, methods=["GET"])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        response = client.get(SUMMARY.format("measurements"), params=RANGE)
        assert response.status_code == 503 and problem_type(response) == PROBLEM + "synthetic_fault"


def test_a_summary_settles_the_due_jobs_of_its_own_resource_only(tmp_path: Path) -> None:
    resources = {"measurements": {"mutation": "partition_replace", "date_field": "business_date"},
                 "events": {"mutation": "incremental_append", "date_field": "event_date"}}
    start, end = "2026-05-01", "2026-05-04"
    rows = rows_for(["2026-05-01", "2026-05-02"])
    document = async_behaviour(complete_after_polls=None, complete_after_seconds=0).model_dump(mode="json")
    behaviour = behaviour_with("dataset-jobs", resources=resources, async_jobs=document["async_jobs"])
    with client_for(behaviour, tmp_path) as client:
        assert submit_job(client, "mk-1", rows, start, end).status_code == 202
        assert client.get(SUMMARY.format("events")).json()["row_count"] == 0
        own = client.get(SUMMARY.format("measurements"), params={"range_start": start, "range_end": end}).json()
        assert own["row_count"] == 2  # due by time: settled before the summary was computed
        [effect] = admin_items(client, "effects")
        assert (effect["resource"], effect["mutation"]) == ("measurements", "partition_replace")


def test_a_ledger_only_summary_is_answered_from_the_effect(tmp_path: Path) -> None:
    with client_for(behaviour_with("stripe-like", storage="ledger_only"), tmp_path) as client:
        client.post(URL, params=RANGE, json=ROWS)
        summary = client.get(SUMMARY.format("measurements"), params=RANGE).json()
        assert summary["row_count"] == 3
        assert summary["content_digest"] == admin_items(client, "effects")[0]["content_digest"]
