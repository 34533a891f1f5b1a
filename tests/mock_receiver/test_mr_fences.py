"""Mutation fences of the sync protocol: none, Idempotency-Key, fingerprint ledger, bare 409."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from mr_support import admin_items, behaviour_with, bundled, client_for, rows_for

pytestmark = pytest.mark.timeout(60)

URL = "/mock/v1/resources/measurements/batches"
RANGE = {"range_start": "2026-04-01", "range_end": "2026-04-03"}
ROWS = rows_for(["2026-04-01", "2026-04-02"])
OTHER_ROWS = rows_for(["2026-04-01", "2026-04-02"], tag="changed")


def _post(client, rows=ROWS, key: str | None = "key-1", **kwargs):
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post(URL, params=RANGE, json=rows, headers=headers, **kwargs)


def test_no_fence_applies_every_resend(tmp_path: Path) -> None:
    behaviour = behaviour_with("stripe-like", sync={"fence": {"type": "none"}})
    with client_for(behaviour, tmp_path) as client:
        receipts = {_post(client).json()["receipt_id"] for _ in range(2)}
        assert len(receipts) == 2
        effects = admin_items(client, "effects")
        assert len(effects) == 2
        # The key was sent and logged, but this receiver does not fence on it.
        assert {r["idempotency_key"] for r in admin_items(client, "requests")} == {"key-1"}


def test_idempotency_key_replays_the_stored_response(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        first = _post(client)
        replay = _post(client)
        assert first.status_code == replay.status_code == 200
        assert replay.content == first.content
        assert replay.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects", idempotency_key="key-1")) == 1
        outcomes = [r["outcome"] for r in admin_items(client, "requests", idempotency_key="key-1")]
        assert outcomes == ["applied", "replayed"]


def test_idempotency_key_with_different_parameters_is_an_idempotency_error(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert _post(client).status_code == 200
        mismatch = _post(client, rows=OTHER_ROWS)
        assert mismatch.status_code == 400
        assert mismatch.json()["type"].endswith("idempotency_error")
        assert "receipt_id" not in mismatch.json()
        assert len(admin_items(client, "effects")) == 1
        assert admin_items(client, "requests", outcome="conflict")[0]["problem"] == "idempotency_error"


def test_generic_idempotency_key_mismatch_defaults_to_422(tmp_path: Path) -> None:
    behaviour = behaviour_with("stripe-like", sync={"fence": {"type": "idempotency_key"}})
    with client_for(behaviour, tmp_path) as client:
        assert _post(client).status_code == 200
        mismatch = _post(client, rows=OTHER_ROWS)
        assert mismatch.status_code == 422 and mismatch.json()["type"].endswith("idempotency_key_mismatch")


def test_idempotency_key_binds_parameters_not_encoding(tmp_path: Path) -> None:
    """Stripe-like comparison is semantic: the same rows gzip-encoded are the same request."""
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert _post(client).status_code == 200
        replay = client.post(URL, params=RANGE, content=gzip.compress(json.dumps(ROWS).encode()),
                             headers={"Idempotency-Key": "key-1", "content-type": "application/json",
                                      "content-encoding": "gzip"})
        assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
        assert len(admin_items(client, "effects")) == 1


def test_pruned_idempotency_key_lets_a_resend_apply_twice(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert _post(client).status_code == 200
        advanced = client.post("/_admin/clock/advance", json={"seconds": 86_401})
        assert advanced.status_code == 200 and advanced.json()["offset_seconds"] == 86_401
        again = _post(client)
        assert again.status_code == 200 and "idempotent-replayed" not in again.headers
        assert len(admin_items(client, "effects", idempotency_key="key-1")) == 2
        stats = client.get("/_admin/stats").json()
        assert stats["mutation_keys_with_multiple_effects"] == [{"mutation_key": "key-1", "effects": 2}]


def test_idempotency_key_inside_retention_is_still_replayed(tmp_path: Path) -> None:
    with client_for(bundled("stripe-like"), tmp_path) as client:
        assert _post(client).status_code == 200
        client.post("/_admin/clock/advance", json={"seconds": 86_399})
        assert _post(client).headers.get("idempotent-replayed") == "true"
        assert len(admin_items(client, "effects")) == 1


def test_required_fence_header_missing_is_a_400_without_effect(tmp_path: Path) -> None:
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        response = _post(client, key=None)
        assert response.status_code == 400
        assert response.json()["type"].endswith("fence_key_required")
        assert admin_items(client, "effects") == []


def test_malformed_fence_key_is_a_422(tmp_path: Path) -> None:
    """The generic key syntax (token); Stripe's printable keys are tested in test_mr_vendor_keys.py."""
    with client_for(bundled("json-batches"), tmp_path) as client:
        response = _post(client, key="bad key with spaces")
        assert response.status_code == 422
        assert admin_items(client, "effects") == []


def test_fingerprint_ledger_replays_the_exact_stored_response(tmp_path: Path) -> None:
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        first = _post(client)
        assert first.status_code == 201
        client.post("/_admin/clock/advance", json={"seconds": 10 * 365 * 86_400})
        replay = _post(client)
        assert (replay.status_code, replay.content) == (201, first.content)
        assert len(admin_items(client, "effects")) == 1


def test_fingerprint_ledger_conflicts_on_any_other_bytes(tmp_path: Path) -> None:
    """Unlike the parameter comparison, the fingerprint binds the exact request bytes."""
    with client_for(bundled("fingerprint-ledger"), tmp_path) as client:
        assert _post(client).status_code == 201
        same_rows_other_bytes = client.post(URL, params=RANGE, content=json.dumps(ROWS, indent=2).encode(),
                                            headers={"Idempotency-Key": "key-1",
                                                     "content-type": "application/json"})
        assert same_rows_other_bytes.status_code == 409
        assert same_rows_other_bytes.json()["type"].endswith("idempotency_conflict")
        assert _post(client, rows=OTHER_ROWS).status_code == 409
        assert len(admin_items(client, "effects")) == 1


def test_bare_409_answers_a_duplicate_with_no_receipt(tmp_path: Path) -> None:
    with client_for(bundled("bare-409"), tmp_path) as client:
        assert _post(client, key=None).status_code == 200
        duplicate = _post(client, key=None)
        assert duplicate.status_code == 409
        assert duplicate.content == b""
        assert len(admin_items(client, "effects")) == 1


def test_bare_409_is_also_sent_when_nothing_was_applied(tmp_path: Path) -> None:
    """The 5th submission gets the same bare 409 though it is new: the status proves nothing."""
    with client_for(bundled("bare-409"), tmp_path) as client:
        statuses = []
        for day in range(1, 6):
            rows = rows_for([f"2026-04-0{day}"])
            response = client.post(URL, params={"range_start": f"2026-04-0{day}", "range_end": f"2026-04-0{day + 1}"},
                                   json=rows)
            statuses.append((response.status_code, response.content))
        assert [status for status, _ in statuses] == [200, 200, 200, 200, 409]
        assert statuses[4][1] == b""
        effects = admin_items(client, "effects")
        assert [effect["scope_start"] for effect in effects] == [f"2026-04-0{day}" for day in range(1, 5)]
        fifth = admin_items(client, "requests")[4]
        assert (fifth["outcome"], fifth["rule"], fifth["effect_id"]) == ("fault", "spurious-409", None)


def test_json_batches_answers_a_repeat_with_409_carrying_the_original_receipt(tmp_path: Path) -> None:
    with client_for(bundled("json-batches"), tmp_path) as client:
        first = _post(client)
        assert first.status_code == 201
        repeat = _post(client)
        assert repeat.status_code == 409
        assert repeat.json()["receipt_id"] == first.json()["receipt_id"]
        assert repeat.json()["type"].endswith("duplicate_submission")
        changed = _post(client, rows=OTHER_ROWS)
        assert changed.status_code == 422 and "receipt_id" not in changed.json()
        assert len(admin_items(client, "effects")) == 1
        logged = admin_items(client, "requests", idempotency_key="key-1")
        assert [(r["outcome"], r["receipt_id"]) for r in logged] == [
            ("applied", first.json()["receipt_id"]), ("duplicate", first.json()["receipt_id"]), ("conflict", None)]
