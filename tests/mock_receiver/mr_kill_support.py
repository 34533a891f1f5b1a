"""Helpers shared by the mock receiver's mutation kill tests (engine, async and sync API)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mr_support import behaviour_with, bundled, job_files

from mock_receiver import ledger
from mock_receiver.behaviour import Behaviour

JOBS = "/mock/v1/dataset-jobs"
BATCHES = "/mock/v1/resources/{}/batches"
PROBLEM = "urn:restproof:mock-receiver:problem:"
"""Every problem's ``type`` is this prefix plus its slug (docs/mock-receiver.md, "Data API")."""


def async_behaviour(*, rules: Sequence[Mapping[str, Any]] = (), **changes: Any) -> Behaviour:
    """The bundled dataset-jobs receiver with ``async_jobs`` keys replaced and the given fault rules."""
    document = bundled("dataset-jobs").model_dump(mode="json")["async_jobs"]
    document.update(changes)
    return behaviour_with("dataset-jobs", async_jobs=document, rules=list(rules))


def sync_behaviour(name: str = "stripe-like", *, fence: Mapping[str, Any] | None = None,
                   rules: Sequence[Mapping[str, Any]] = (), **sync: Any) -> Behaviour:
    """A bundled receiver with ``sync`` keys (and ``sync.fence`` keys) replaced and the given fault rules."""
    document = bundled(name).model_dump(mode="json")["sync"]
    document.update(sync)
    if fence is not None:
        document["fence"] = {**document["fence"], **fence}
    return behaviour_with(name, sync=document, rules=list(rules))


def rule(name: str, endpoint: str, action: Mapping[str, Any], *, nth: Sequence[int] | None = None,
         **match: Any) -> dict[str, Any]:
    """One fault rule on one endpoint, firing always or on the given match ordinals."""
    when: dict[str, Any] = {"nth": list(nth)} if nth is not None else {"always": True}
    return {"name": name, "match": {"endpoints": [endpoint], **match}, "when": when, "action": dict(action)}


def submit_job(client: Any, key: str, rows: Sequence[Mapping[str, Any]], start: str | None, end: str | None) -> Any:
    """POST one dataset job; a None bound leaves that scalar part out."""
    files, data = job_files(key, rows, start or "", end or "")
    data = {name: value for name, value in data.items() if value}
    return client.post(JOBS, files=files, data=data)


def problem_type(response: Any) -> str:
    assert response.headers["content-type"] == "application/problem+json", response.text
    kind: str = response.json()["type"]
    return kind


FROZEN_EPOCH = 1_800_000_000.0


def freeze_receiver_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop the receiver's wall clock so only the admin clock moves it: every instant is then exact,
    and a boundary (a retention, a TTL, a job deadline) can be hit on the second, not merely passed."""
    monkeypatch.setattr(ledger, "time", SimpleNamespace(time=lambda: FROZEN_EPOCH))


def advance(client: Any, seconds: float) -> None:
    response = client.post("/_admin/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
