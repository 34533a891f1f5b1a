"""Vendor personalities, by the vendors' documented behaviour (FIELD-NOTES "Receiver idempotency
behaviours worth emulating"): stripe-like, ietf-idempotency-draft, aip-155-request-id, fingerprint-ledger."""

from __future__ import annotations

import gzip
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mr_support import RECEIVERS, ServerProcess, admin_items, behaviour_with, bundled, client_for, rows_for

pytestmark = pytest.mark.timeout(120)

URL = "/mock/v1/resources/measurements/batches"
RANGE = {"range_start": "2026-05-01", "range_end": "2026-05-03"}
ROWS = rows_for(["2026-05-01", "2026-05-02"])
OTHER = rows_for(["2026-05-01", "2026-05-02"], tag="other")


def _status_rule(status: int, nth: list[int], *, after_effect: bool = False) -> dict[str, Any]:
    return {"name": f"status-{status}", "match": {"endpoints": ["sync_submit"]}, "when": {"nth": nth},
            "action": {"kind": "status", "status": status, "after_effect": after_effect}}


def _post(client: Any, key: str | None, rows: list[dict[str, Any]] = ROWS, header: str = "Idempotency-Key") -> Any:
    return client.post(URL, params=RANGE, json=rows, headers={header: key} if key else {})


def _as_sent(name: str, key: str) -> str:
    """The key as the personality's wire contract carries it: the IETF draft's header is a Structured
    Field String, quoted."""
    return f'"{key}"' if name == "ietf-idempotency-draft" else key


REQUEST_ID = "4b1e7f0c-2d8a-4c1b-9e55-0f3a6d2c8b71"


def _post_aip(client: Any, request_id: str, rows: list[dict[str, Any]] = ROWS) -> Any:
    """AIP-155's request id is a field of the request: the query parameter requestId."""
    return client.post(URL, params={**RANGE, "requestId": request_id}, json=rows)


# --- in progress: 409 at once (stripe-like, ietf) or a serialised repeat (the generic fence) -------------


def _slow_file(tmp_path: Path, name: str, **changes: Any) -> Path:
    """The personality with every submit slowed down 1.5 s after its key is reserved, before its effect."""
    rules = [{"name": "slow", "match": {"endpoints": ["sync_submit"]}, "when": {"nth": [1]},
              "action": {"kind": "delay", "seconds": 1.5, "after_effect": False}}]
    path = tmp_path / f"{name}-slow.json"
    path.write_text(json.dumps(behaviour_with(name, rules=rules, **changes).model_dump(mode="json")))
    return path


def _first_then_second(data_url: str, key: str) -> tuple[httpx.Response, httpx.Response]:
    results: dict[str, httpx.Response] = {}

    def first() -> None:
        results["first"] = httpx.post(data_url + URL, params=RANGE, json=ROWS, headers={"Idempotency-Key": key},
                                      timeout=30)

    thread = threading.Thread(target=first)
    thread.start()
    time.sleep(0.5)  # the first holds the key, inside its 1.5 s of execution
    second = httpx.post(data_url + URL, params=RANGE, json=ROWS, headers={"Idempotency-Key": key}, timeout=30)
    thread.join(timeout=30)
    return results["first"], second


@pytest.mark.slow
@pytest.mark.parametrize(("name", "success"), [("stripe-like", 200), ("ietf-idempotency-draft", 201)])
def test_a_same_key_request_while_the_first_executes_gets_409(tmp_path: Path, name: str, success: int) -> None:
    with ServerProcess(_slow_file(tmp_path, name), tmp_path / "state") as server:
        first, second = _first_then_second(server.data_url, _as_sent(name, "in-flight"))
        assert second.status_code == 409 and second.json()["type"].endswith("idempotency_key_in_use")
        assert first.status_code == success
        third = httpx.post(server.data_url + URL, params=RANGE, json=ROWS,
                           headers={"Idempotency-Key": _as_sent(name, "in-flight")})
        assert third.status_code == success and third.headers["idempotent-replayed"] == "true"
        assert third.content == first.content
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "effects")) == 1
            outcomes = [row["outcome"] for row in admin_items(admin, "requests")]
        assert sorted(outcomes) == ["applied", "conflict", "replayed"]


@pytest.mark.slow
def test_the_generic_fence_serialises_instead(tmp_path: Path) -> None:
    """The option is what makes the difference: with in_progress: serialize no key is reserved, the
    decisions run one after the other in the ledger, and the later one is a replay (here the slow
    first request decides last)."""
    generic = {"fence": {"type": "idempotency_key", "in_progress": "serialize"}}
    with ServerProcess(_slow_file(tmp_path, "stripe-like", sync=generic), tmp_path / "state") as server:
        first, second = _first_then_second(server.data_url, "serial")
        assert first.status_code == second.status_code == 200
        assert first.content == second.content
        assert [r.headers.get("idempotent-replayed") for r in (first, second)] == ["true", None]
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "effects")) == 1


@pytest.mark.slow
def test_simultaneous_same_key_submits_apply_once_and_never_replay_an_unfinished_request(tmp_path: Path) -> None:
    with ServerProcess(RECEIVERS / "stripe-like.yaml", tmp_path) as server:
        barrier = threading.Barrier(8)
        statuses: list[int] = []
        lock = threading.Lock()

        def submit() -> None:
            barrier.wait(timeout=10)
            response = httpx.post(server.data_url + URL, params=RANGE, json=ROWS,
                                  headers={"Idempotency-Key": "race"}, timeout=30)
            with lock:
                statuses.append(response.status_code)

        threads = [threading.Thread(target=submit) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert set(statuses) <= {200, 409} and statuses.count(200) >= 1
        with httpx.Client(base_url=server.admin_url) as admin:
            assert len(admin_items(admin, "effects")) == 1


# --- what is saved under a key ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["stripe-like", "ietf-idempotency-draft"])
def test_a_5xx_once_execution_started_is_saved_and_replayed(tmp_path: Path, name: str) -> None:
    with client_for(behaviour_with(name, rules=[_status_rule(500, [1])]), tmp_path) as client:
        first = _post(client, _as_sent(name, "k500"))
        assert first.status_code == 500
        retry = _post(client, _as_sent(name, "k500"))
        assert (retry.status_code, retry.content) == (500, first.content)
        assert retry.headers["idempotent-replayed"] == "true"
        assert retry.headers["content-type"] == "application/problem+json"
        assert admin_items(client, "effects") == []
        assert _post(client, _as_sent(name, "fresh-key")).status_code in (200, 201)


def test_a_5xx_after_the_effect_is_saved_too_so_a_resend_cannot_prove_it(tmp_path: Path) -> None:
    with client_for(behaviour_with("stripe-like", rules=[_status_rule(503, [1], after_effect=True)]),
                    tmp_path) as client:
        assert _post(client, "k503").status_code == 503
        retry = _post(client, "k503")
        assert retry.status_code == 503 and retry.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects")) == 1  # applied once, and only the 503 is on record


def test_a_429_before_execution_is_not_saved(tmp_path: Path) -> None:
    with client_for(behaviour_with("stripe-like", rules=[_status_rule(429, [1])]), tmp_path) as client:
        assert _post(client, "k429").status_code == 429
        retry = _post(client, "k429")
        assert retry.status_code == 200 and "idempotent-replayed" not in retry.headers
        assert len(admin_items(client, "effects")) == 1


@pytest.mark.parametrize("name", ["stripe-like", "ietf-idempotency-draft"])
def test_validation_failures_are_not_saved(tmp_path: Path, name: str) -> None:
    with client_for(bundled(name), tmp_path) as client:
        broken = client.post(URL, params=RANGE, content=b"[{", headers={"Idempotency-Key": _as_sent(name, "kv"),
                                                                       "content-type": "application/json"})
        assert broken.status_code == 400
        corrected = _post(client, _as_sent(name, "kv"))
        assert corrected.status_code in (200, 201) and "idempotent-replayed" not in corrected.headers
        assert len(admin_items(client, "effects")) == 1


# --- ietf-idempotency-draft ---------------------------------------------------------------------------------


def test_ietf_draft_codes(tmp_path: Path) -> None:
    with client_for(bundled("ietf-idempotency-draft"), tmp_path) as client:
        missing = _post(client, None)
        assert missing.status_code == 400 and missing.json()["type"].endswith("fence_key_required")
        first = _post(client, '"ietf-1"')
        assert first.status_code == 201
        replay = _post(client, '"ietf-1"')
        assert (replay.status_code, replay.content) == (201, first.content)
        reuse = _post(client, '"ietf-1"', rows=OTHER)
        assert reuse.status_code == 422 and reuse.json()["type"].endswith("idempotency_key_mismatch")
        assert len(admin_items(client, "effects")) == 1


# --- aip-155-request-id --------------------------------------------------------------------------------------


def test_aip155_duplicate_returns_the_earlier_success_then_the_current_state(tmp_path: Path) -> None:
    with client_for(bundled("aip-155-request-id"), tmp_path) as client:
        first = _post_aip(client, REQUEST_ID)
        assert first.status_code == 200
        duplicate = _post_aip(client, REQUEST_ID)
        assert duplicate.content == first.content and duplicate.headers["idempotent-replayed"] == "true"
        assert client.post("/_admin/clock/advance", json={"seconds": 3601}).status_code == 200
        stale = _post_aip(client, REQUEST_ID)
        assert stale.status_code == 200 and stale.headers["idempotent-replayed"] == "current-state"
        summary = client.get("/mock/v1/resources/measurements/summary", params=RANGE).json()
        assert stale.json() == summary  # the resource's current state, no receipt
        assert "receipt_id" not in stale.json()
        assert len(admin_items(client, "effects")) == 1  # never applied again
        assert [row["outcome"] for row in admin_items(client, "requests")] == ["applied", "replayed",
                                                                               "current_state"]
        mismatch = _post_aip(client, REQUEST_ID, rows=OTHER)
        assert mismatch.status_code == 409 and mismatch.json()["type"].endswith("request_id_mismatch")


# --- fingerprint-ledger: media types compared as RFC 9110 says ----------------------------------------------


def _sealed(client: Any, content_type: str, encoding: str | None = None) -> Any:
    headers = {"Idempotency-Key": "sealed", "content-type": content_type}
    body = json.dumps(ROWS).encode()
    if encoding is not None:
        headers["content-encoding"] = encoding
        body = gzip.compress(body, mtime=0)
    return client.post(URL, params=RANGE, content=body, headers=headers)


@pytest.mark.parametrize(("first", "again", "same"), [
    ("application/json; charset=utf-8", 'Application/JSON;Charset="UTF-8"', True),
    ("application/json; charset=utf-8; a=b", "application/json;a=b;charset=utf-8", True),
    ("application/json", "APPLICATION/JSON", True),
    ("application/json; charset=utf-8", "application/json; charset=latin-1", False),
    ("application/json; a=b", "application/json; a=B", False),  # other parameter values keep their case
    ("application/json", "application/json; charset=utf-8", False),
])
def test_fingerprint_media_types_compare_as_rfc_9110_says(tmp_path: Path, first: str, again: str, same: bool) -> None:
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        original = _sealed(client, first)
        assert original.status_code == 201
        repeat = _sealed(client, again)
        assert repeat.status_code == (201 if same else 409), repeat.text
        assert len(admin_items(client, "effects")) == 1


def test_fingerprint_content_coding_is_case_insensitive(tmp_path: Path) -> None:
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        assert _sealed(client, "application/json", "gzip").status_code == 201
        assert _sealed(client, "application/json", "GZIP").status_code == 201
        assert len(admin_items(client, "effects")) == 1
