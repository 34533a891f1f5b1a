"""Fault-ish behaviours selected by rules: statuses, Retry-After, size limit, partial, miscount, delay."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path

import pytest
from mr_support import admin_items, behaviour_with, client_for, job_files, rows_for

pytestmark = pytest.mark.timeout(60)

URL = "/mock/v1/resources/measurements/batches"
RANGE = {"range_start": "2026-06-01", "range_end": "2026-06-05"}
ROWS = rows_for(["2026-06-01", "2026-06-02", "2026-06-03", "2026-06-04"])


def _rule(action: dict, when: dict | None = None, name: str = "r1", endpoints=("sync_submit",)) -> dict:
    return {"name": name, "match": {"endpoints": list(endpoints)}, "when": when or {"always": True},
            "action": action}


# The generic Idempotency-Key fence (errors not saved, concurrent requests serialised): these tests are
# about the fault rules, not about a vendor personality.
GENERIC_SYNC = {"fence": {"type": "idempotency_key", "retention_seconds": 86400}}


def _with_rules(*rules: dict, **changes):
    changes.setdefault("sync", GENERIC_SYNC)
    return behaviour_with("stripe-like", rules=list(rules), **changes)


def _post(client, key: str | None = None, rows=ROWS):
    return client.post(URL, params=RANGE, json=rows, headers={"Idempotency-Key": key} if key else {})


def test_429_with_delta_seconds_retry_after_applies_nothing(tmp_path: Path) -> None:
    rule = _rule({"kind": "status", "status": 429, "retry_after": {"seconds": 7}}, {"nth": [1]})
    with client_for(_with_rules(rule), tmp_path) as client:
        limited = _post(client, key="k")
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "7"
        assert limited.headers["content-type"] == "application/problem+json"
        assert admin_items(client, "effects") == []
        # The fault precedes the fence: the same key is then applied once.
        assert _post(client, key="k").status_code == 200
        assert len(admin_items(client, "effects")) == 1
        assert [r["outcome"] for r in admin_items(client, "requests")] == ["fault", "applied"]


def test_503_with_http_date_retry_after(tmp_path: Path) -> None:
    rule = _rule({"kind": "status", "status": 503, "retry_after": {"seconds": 120, "format": "http_date"}})
    with client_for(_with_rules(rule), tmp_path) as client:
        before = time.time()
        response = _post(client)
        assert response.status_code == 503
        when = email.utils.parsedate_to_datetime(response.headers["retry-after"]).timestamp()
        assert before + 119 <= when <= time.time() + 122
        assert admin_items(client, "effects") == []
        assert admin_items(client, "requests")[0]["status"] == 503


def test_synthetic_500_after_effect_commits_the_effect(tmp_path: Path) -> None:
    """The client sees a 500 although the receiver applied the batch (a lost success)."""
    rule = _rule({"kind": "status", "status": 500, "after_effect": True}, {"nth": [1]})
    with client_for(_with_rules(rule), tmp_path) as client:
        response = _post(client, key="k")
        assert response.status_code == 500
        assert len(admin_items(client, "effects")) == 1
        request = admin_items(client, "requests")[0]
        assert (request["status"], request["outcome"], request["rule"]) == (500, "applied", "r1")
        # The fence stored the real result: a same-key resend replays the receipt, no second effect.
        replay = _post(client, key="k")
        assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects")) == 1


def test_body_above_the_size_limit_is_413_and_logged(tmp_path: Path) -> None:
    behaviour = _with_rules(limits={"max_body_bytes": 2048})
    with client_for(behaviour, tmp_path) as client:
        big = rows_for(["2026-06-01"] * 60)
        response = _post(client, rows=big)
        assert response.status_code == 413
        assert response.json()["type"].endswith("body_too_large")
        assert admin_items(client, "effects") == []
        request = admin_items(client, "requests")[0]
        assert (request["status"], request["outcome"]) == (413, "rejected")
        assert request["body_bytes"] > 2048


def test_partial_application_rejects_selected_rows(tmp_path: Path) -> None:
    rule = _rule({"kind": "reject_rows", "every_nth_row": 2})
    with client_for(_with_rules(rule), tmp_path) as client:
        body = _post(client).json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (2, 2)
        assert [r["index"] for r in body["records"]] == [1, 3]
        assert {r["reason"] for r in body["records"]} == {"synthetic_rejection"}
        summary = client.get("/mock/v1/resources/measurements/summary", params=RANGE).json()
        assert summary["row_count"] == 2


def test_contradictory_counts_are_reported_while_the_ledger_keeps_the_truth(tmp_path: Path) -> None:
    rule = _rule({"kind": "miscount", "accepted_delta": 5, "rejected_delta": -1})
    with client_for(_with_rules(rule), tmp_path) as client:
        body = _post(client).json()
        assert (body["accepted_rows"], body["rejected_rows"]) == (9, -1)
        effect = admin_items(client, "effects")[0]
        assert (effect["accepted_rows"], effect["rejected_rows"]) == (4, 0)
        assert (effect["reported_accepted_rows"], effect["reported_rejected_rows"]) == (9, -1)


def test_delay_after_effect_holds_the_response_but_not_the_commit(tmp_path: Path) -> None:
    rule = _rule({"kind": "delay", "seconds": 0.6})
    with client_for(_with_rules(rule), tmp_path) as client:
        started = time.monotonic()
        assert _post(client).status_code == 200
        assert time.monotonic() - started >= 0.6
        assert len(admin_items(client, "effects")) == 1
        assert admin_items(client, "requests")[0]["rule"] == "r1"


def test_probability_trigger_is_reproducible_from_its_seed(tmp_path: Path) -> None:
    rule = _rule({"kind": "status", "status": 503}, {"probability": 0.5, "seed": 11})

    def statuses(directory: Path) -> list[int]:
        with client_for(_with_rules(rule, sync={"fence": {"type": "none"}}), directory) as client:
            codes = [_post(client).status_code for _ in range(12)]
            assert len(admin_items(client, "effects")) == codes.count(200)
            assert len(admin_items(client, "requests", outcome="fault")) == codes.count(503)
            return codes

    first, second = statuses(tmp_path / "a"), statuses(tmp_path / "b")
    assert first == second
    assert 200 in first and 503 in first


def test_every_and_max_fires_bound_a_rule(tmp_path: Path) -> None:
    rule = _rule({"kind": "status", "status": 502}, {"every": 2, "max_fires": 2})
    with client_for(_with_rules(rule, sync={"fence": {"type": "none"}}), tmp_path) as client:
        codes = [_post(client).status_code for _ in range(7)]
        assert codes == [200, 502, 200, 502, 200, 200, 200]
        stats = client.get("/_admin/stats").json()
        assert stats["rules"]["r1"] == {"matched": 7, "fired": 2}


def test_poll_fault_does_not_count_as_an_observation(tmp_path: Path) -> None:
    rule = _rule({"kind": "status", "status": 503, "retry_after": {"seconds": 1}}, {"nth": [1]},
                 endpoints=("job_poll",))
    behaviour = behaviour_with("dataset-jobs", rules=[rule])
    with client_for(behaviour, tmp_path) as client:
        files, data = job_files("pk", rows_for(["2026-06-01"]), "2026-06-01", "2026-06-02")
        job_id = client.post("/mock/v1/dataset-jobs", files=files, data=data).json()["job_id"]
        assert client.get(f"/mock/v1/dataset-jobs/{job_id}").status_code == 503
        assert client.get(f"/mock/v1/dataset-jobs/{job_id}").json()["phase"] == "running"
        assert client.get(f"/mock/v1/dataset-jobs/{job_id}").json()["phase"] == "complete"
