"""``storage: ledger_only``: the same answers, ledger and effects as a row-keeping receiver, no
stored rows, and a summary answered from the one effect that covers the scope, or refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mr_support import admin_items, behaviour_with, client_for, rows_for

from mock_receiver.behaviour import BehaviourError, parse_behaviour

pytestmark = pytest.mark.timeout(60)

BATCHES = "/mock/v1/resources/measurements/batches"
SUMMARY = "/mock/v1/resources/measurements/summary"
DAY1 = {"range_start": "2026-03-01", "range_end": "2026-03-02"}
DAY2 = {"range_start": "2026-03-02", "range_end": "2026-03-03"}


def _post(client: Any, scope: dict[str, str], days: list[str], key: str) -> Any:
    return client.post(BATCHES, params=scope, content=json.dumps(rows_for(days)).encode(),
                       headers={"content-type": "application/json", "Idempotency-Key": key})


def _summaries(tmp_path: Path, storage: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    with client_for(behaviour_with("json-batches", storage=storage), tmp_path / storage) as client:
        assert _post(client, DAY1, ["2026-03-01"], "key-one-0001").status_code == 201
        assert _post(client, DAY1, ["2026-03-01", "2026-03-01"], "key-one-0002").status_code == 201  # replaces
        assert _post(client, DAY2, ["2026-03-02"], "key-two-0001").status_code == 201
        answers = [client.get(SUMMARY, params=scope).json() for scope in (DAY1, DAY2)]
        effects = admin_items(client, "effects")
        both = client.get(SUMMARY, params={"range_start": "2026-03-01", "range_end": "2026-03-03"})
        return answers, effects, both.status_code


def test_ledger_only_answers_exact_scopes_like_the_row_keeping_receiver(tmp_path: Path) -> None:
    kept, kept_effects, kept_both = _summaries(tmp_path, "rows")
    ledger, ledger_effects, ledger_both = _summaries(tmp_path, "ledger_only")
    assert [(s["row_count"], s["content_digest"]) for s in ledger] == \
        [(s["row_count"], s["content_digest"]) for s in kept]
    assert [e["accepted_rows"] for e in ledger_effects] == [e["accepted_rows"] for e in kept_effects] == [1, 2, 1]
    assert kept_both == 200 and ledger_both == 422  # two effects make that scope: no composable digest


def test_ledger_only_keeps_no_rows_and_an_empty_scope_is_empty(tmp_path: Path) -> None:
    with client_for(behaviour_with("json-batches", storage="ledger_only"), tmp_path) as client:
        empty = client.get(SUMMARY, params=DAY1).json()
        assert empty["row_count"] == 0
        assert _post(client, DAY1, ["2026-03-01"], "key-one-0001").status_code == 201
    import sqlite3

    databases = list(tmp_path.rglob("*.sqlite3"))
    assert databases
    for database in databases:
        assert sqlite3.connect(database).execute("SELECT count(*) FROM rows").fetchone()[0] == 0


def test_ledger_only_is_refused_with_async_jobs() -> None:
    document = behaviour_with("dataset-jobs").model_dump(mode="json")
    document["storage"] = "ledger_only"
    with pytest.raises(BehaviourError, match="ledger_only"):
        parse_behaviour(document)
