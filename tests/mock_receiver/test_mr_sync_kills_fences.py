"""The sync API's fence decisions through HTTP: which header is a fence key, when a key is required,
what "same request" means, retention to the second, the current-state answer, the order of faults
and fence look-ups, which answers a fence saves, and the in-progress reservation."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from mr_kill_support import (
    BATCHES,
    PROBLEM,
    advance,
    freeze_receiver_clock,
    problem_type,
    rule,
    sync_behaviour,
)
from mr_support import admin_items, behaviour_with, bundled, client_for, rows_for

pytestmark = pytest.mark.timeout(60)

URL = BATCHES.format("measurements")
RANGE = {"range_start": "2026-04-01", "range_end": "2026-04-03"}
ROWS = rows_for(["2026-04-01", "2026-04-02"])
OTHER = rows_for(["2026-04-01", "2026-04-02"], tag="changed")


def _post(client, rows=ROWS, key: str | None = "key-1", header: str = "Idempotency-Key", **kwargs):
    headers = {header: key} if key is not None else {}
    headers.update(kwargs.pop("headers", {}))
    return client.post(URL, params=RANGE, json=rows, headers=headers, **kwargs)


def _generic(rules=()):
    """The generic Idempotency-Key fence: no saved errors, serialised, 422 idempotency_key_mismatch."""
    return behaviour_with("stripe-like", sync={"fence": {"type": "idempotency_key"}}, rules=list(rules))


def _outcomes(client) -> list[tuple[int, str]]:
    return [(r["status"], r["outcome"]) for r in admin_items(client, "requests")]


# --- which header is a key, and when one is required -------------------------------------------


def test_an_unfenced_receiver_logs_only_a_well_formed_key_and_never_checks_one(tmp_path: Path) -> None:
    with client_for(sync_behaviour(fence={"type": "none"}), tmp_path) as client:
        assert _post(client, key="bad key").status_code == 200  # not a fence key here: no 422
        assert _post(client, key=None).status_code == 200
        logged = admin_items(client, "requests")
        assert [(r["idempotency_key"], r["mutation_key"]) for r in logged] == [(None, None), (None, None)]


@pytest.mark.parametrize("fence", [{"type": "none", "required": True}, {"type": "bare_409", "required": True}])
def test_required_means_nothing_for_fences_without_a_key_header(tmp_path: Path, fence: dict) -> None:
    with client_for(sync_behaviour(fence=fence), tmp_path) as client:
        assert _post(client, key=None).status_code == 200
        assert len(admin_items(client, "effects")) == 1


def test_a_required_key_is_a_documented_400(tmp_path: Path) -> None:
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        response = _post(client, key=None)
        assert response.json() == {"type": PROBLEM + "fence_key_required", "title": "Bad request", "status": 400,
                                   "detail": "the Idempotency-Key header is required"}


# --- what "same request" means ------------------------------------------------------------------


def test_the_fingerprint_binds_the_media_type_and_the_content_coding(tmp_path: Path) -> None:
    body = b'[{"business_date": "2026-04-01", "site": "s0", "value": "v0"}]'
    plain = {"Idempotency-Key": "key-1", "content-type": "application/json"}
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        assert client.post(URL, params=RANGE, content=body, headers=plain).status_code == 201
        assert client.post(URL, params=RANGE, content=body, headers=plain).status_code == 201  # replayed
        other_type = client.post(URL, params=RANGE, content=body,
                                 headers={**plain, "content-type": "application/json; charset=utf-8"})
        other_coding = client.post(URL, params=RANGE, content=body, headers={**plain, "content-encoding": "identity"})
        assert (other_type.status_code, other_coding.status_code) == (409, 409)
        assert problem_type(other_coding) == PROBLEM + "idempotency_conflict"
        assert len(admin_items(client, "effects")) == 1


def test_a_mismatch_answer_carries_its_documented_body(tmp_path: Path) -> None:
    with client_for(_generic(), tmp_path) as client:
        _post(client)
        mismatch = _post(client, rows=OTHER)
        assert mismatch.json() == {"type": PROBLEM + "idempotency_key_mismatch", "title": "Idempotency key reused",
                                   "status": 422, "detail": "the key was first used with a different request"}


def test_a_replay_is_the_stored_json_answer_and_logs_its_receipt(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        first = _post(client)
        replay = _post(client)
        assert replay.headers["content-type"] == "application/json"
        assert replay.content == first.content
        logged = admin_items(client, "requests")
        assert [(r["outcome"], r["receipt_id"]) for r in logged] == [
            ("applied", first.json()["receipt_id"]), ("replayed", first.json()["receipt_id"])]


def test_a_conflict_with_receipt_answer_carries_its_documented_body(tmp_path: Path) -> None:
    with client_for(bundled("json-batches"), tmp_path) as client:
        receipt = _post(client).json()["receipt_id"]
        repeat = _post(client)
        assert repeat.json() == {"type": PROBLEM + "duplicate_submission", "title": "Duplicate submission",
                                 "status": 409, "detail": "this key and request were already applied",
                                 "receipt_id": receipt}
        assert admin_items(client, "requests")[-1]["status"] == 409


def test_a_bare_409_duplicate_is_logged_as_a_409_duplicate(tmp_path: Path) -> None:
    with client_for(sync_behaviour("bare-409", rules=[]), tmp_path) as client:
        _post(client, key=None)
        _post(client, key=None)
        assert _outcomes(client) == [(200, "applied"), (409, "duplicate")]


# --- retention, to the second -------------------------------------------------------------------


def test_a_key_is_kept_through_its_last_second_of_retention(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freeze_receiver_clock(monkeypatch)
    with client_for(bundled("stripe-like"), tmp_path) as client:
        _post(client)
        advance(client, 86_400)
        assert _post(client).headers.get("idempotent-replayed") == "true"
        advance(client, 1)
        assert "idempotent-replayed" not in _post(client).headers
        assert len(admin_items(client, "effects")) == 2


def _current_state(**fence: object):
    return sync_behaviour("aip-155-request-id", fence=fence)


# AIP-155's request id is a query field (a UUID), not a header
REQUEST_ID = {"requestId": "4b1e7f0c-2d8a-4c1b-9e55-0f3a6d2c8b71"}


def test_a_stale_repeat_gets_the_current_state_and_no_effect(tmp_path: Path) -> None:
    with client_for(_current_state(), tmp_path) as client:
        assert client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS).status_code == 200
        advance(client, 3601)
        late = client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS)
        summary = client.get("/mock/v1/resources/measurements/summary", params=RANGE).json()
        assert late.status_code == 200
        assert late.headers["idempotent-replayed"] == "current-state"
        assert late.json() == summary  # resource, range, row_count and both digests; no receipt_id
        assert len(admin_items(client, "effects")) == 1
        assert admin_items(client, "requests")[-1]["outcome"] == "current_state"
        assert admin_items(client, "requests")[-1]["status"] == 200
        changed = client.post(URL, params={**RANGE, **REQUEST_ID}, json=OTHER)
        assert changed.status_code == 409 and problem_type(changed) == PROBLEM + "request_id_mismatch"


@pytest.mark.parametrize("fence", [{"save_errors": True}, {"in_progress": "conflict"}])
def test_the_current_state_answer_holds_on_every_fence_path(tmp_path: Path, fence: dict) -> None:
    """save_errors consults the fence before faults, in_progress: conflict in its reservation."""
    with client_for(_current_state(**fence), tmp_path) as client:
        client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS)
        advance(client, 3601)
        late = client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS)
        assert late.headers["idempotent-replayed"] == "current-state"
        assert len(admin_items(client, "effects")) == 1


# --- faults and the fence -----------------------------------------------------------------------


def test_without_saved_errors_a_fault_comes_before_the_repeat_answer(tmp_path: Path) -> None:
    rules = [rule("busy-second", "sync_submit", {"kind": "status", "status": 503}, nth=[2])]
    with client_for(sync_behaviour("json-batches", rules=rules), tmp_path) as client:
        assert _post(client).status_code == 201
        assert _post(client).status_code == 503  # the fault, not the 409 of the repeat
        repeat = _post(client)  # the faulted repeat did not free the key
        assert repeat.status_code == 409 and problem_type(repeat) == PROBLEM + "duplicate_submission"
        assert len(admin_items(client, "effects")) == 1


def test_a_fingerprint_fence_with_in_progress_conflict_never_reserves(tmp_path: Path) -> None:
    rules = [rule("busy-second", "sync_submit", {"kind": "status", "status": 503}, nth=[2])]
    behaviour = sync_behaviour("fingerprint-ledger", fence={"in_progress": "conflict"}, rules=rules)
    with client_for(behaviour, tmp_path) as client:
        assert _post(client).status_code == 201
        assert _post(client).status_code == 503


@pytest.mark.parametrize("status", [500, 503])
def test_saved_errors_replay_every_5xx_from_500_up(tmp_path: Path, status: int) -> None:
    rules = [rule("boom", "sync_submit", {"kind": "status", "status": status}, nth=[1])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        first = _post(client)
        replay = _post(client)
        assert (first.status_code, replay.status_code) == (status, status)
        assert replay.headers["idempotent-replayed"] == "true"
        assert replay.headers["content-type"] == "application/problem+json"
        assert replay.content == first.content
        assert admin_items(client, "effects") == []


def test_a_4xx_fault_is_not_saved_and_frees_the_reserved_key(tmp_path: Path) -> None:
    rules = [rule("slow-down", "sync_submit", {"kind": "status", "status": 429}, nth=[1])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        assert _post(client).status_code == 429
        retry = _post(client)
        assert retry.status_code == 200 and "idempotent-replayed" not in retry.headers
        assert len(admin_items(client, "effects")) == 1


def test_an_unkeyed_request_is_faulted_without_touching_any_fence(tmp_path: Path) -> None:
    rules = [rule("boom", "sync_submit", {"kind": "status", "status": 503}, nth=[1])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        assert _post(client, key=None).status_code == 503
        assert _post(client, key=None).status_code == 200


def test_a_fence_without_saved_errors_executes_the_retry_of_a_5xx(tmp_path: Path) -> None:
    rules = [rule("boom", "sync_submit", {"kind": "status", "status": 503}, nth=[1])]
    with client_for(_generic(rules), tmp_path) as client:
        assert _post(client).status_code == 503
        assert _post(client).status_code == 200
        assert len(admin_items(client, "effects")) == 1


@pytest.mark.parametrize("status", [429, 503])
def test_a_fault_after_the_effect_still_stores_the_true_success(tmp_path: Path, status: int) -> None:
    """Without save_errors (any status) and with it (a non-5xx), a resend proves the application."""
    rules = [rule("lost", "sync_submit", {"kind": "status", "status": status, "after_effect": True}, nth=[1])]
    behaviour = _generic(rules) if status >= 500 else sync_behaviour(rules=rules)
    with client_for(behaviour, tmp_path) as client:
        assert _post(client).status_code == status
        [effect] = admin_items(client, "effects")
        replay = _post(client)
        assert replay.status_code == 200 and replay.json()["receipt_id"] == effect["receipt_id"]
        assert admin_items(client, "requests")[-1]["receipt_id"] == effect["receipt_id"]


def test_a_saved_5xx_after_the_effect_is_what_a_resend_gets(tmp_path: Path) -> None:
    rules = [rule("lost", "sync_submit", {"kind": "status", "status": 500, "after_effect": True}, nth=[1])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        assert _post(client).status_code == 500
        replay = _post(client)
        assert replay.status_code == 500 and replay.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects")) == 1


# --- the in-progress reservation ----------------------------------------------------------------


def test_a_same_key_request_while_the_first_executes_gets_409_in_use(tmp_path: Path) -> None:
    rules = [rule("slow", "sync_submit", {"kind": "delay", "seconds": 3.0, "after_effect": False}, nth=[1])]
    with client_for(sync_behaviour(rules=rules), tmp_path) as client:
        results = {}
        thread = threading.Thread(target=lambda: results.setdefault("first", _post(client)))
        thread.start()
        deadline = time.monotonic() + 20
        # The first is inside its 3 s before the effect once its rule matched (it reserves the key
        # right after): wait for that on the admin stats instead of guessing on a loaded machine.
        while client.get("/_admin/stats").json()["rules"].get("slow", {}).get("matched") != 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        second = _post(client)
        thread.join(timeout=30)
        assert results["first"].status_code == 200
        assert second.json() == {"type": PROBLEM + "idempotency_key_in_use", "title": "Conflict", "status": 409,
                                 "detail": "another request with this key is still executing; retry later"}
        assert (admin_items(client, "requests", outcome="conflict")[0]["status"],
                admin_items(client, "requests", outcome="conflict")[0]["problem"]) == (409, "idempotency_key_in_use")
        assert len(admin_items(client, "effects")) == 1


def test_a_ledger_only_receiver_answers_the_current_state_from_its_effects(tmp_path: Path) -> None:
    """It keeps no rows: a current state read from the (empty) rows table would claim the range is empty."""
    with client_for(behaviour_with("aip-155-request-id", storage="ledger_only"), tmp_path) as client:
        client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS)
        advance(client, 3601)
        late = client.post(URL, params={**RANGE, **REQUEST_ID}, json=ROWS)
        summary = client.get("/mock/v1/resources/measurements/summary", params=RANGE).json()
        assert summary["row_count"] == 2
        assert late.status_code == 200 and late.headers["idempotent-replayed"] == "current-state"
        assert late.json() == summary
        assert admin_items(client, "requests")[-1]["outcome"] == "current_state"
