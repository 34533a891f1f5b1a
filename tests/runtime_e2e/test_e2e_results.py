"""Results through `delivery run` against the real receiver: a partial application blocks the
checkpoint (the frontier never moves past the partial child), and a server's Retry-After is
honoured in full, or the child stops as UNKNOWN when it exceeds the budget, never retried early."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Operator, operator_on, running_services
from sv_support import Services

pytestmark = pytest.mark.timeout(300)
SYNC = "measurements-sync"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with running_services("json-batches", tmp_path_factory.mktemp("e2e-results")) as running:
        yield running


@pytest.fixture
def operator(tmp_path: Path, services: Services) -> Iterator[Operator]:
    with operator_on(tmp_path, services) as op:
        yield op


def test_a_partial_application_blocks_the_checkpoint(operator: Operator) -> None:
    behaviour = operator.behaviour()
    behaviour["rules"] = [{"name": "half-rejected", "match": {"endpoints": ["sync_submit"]}, "when": {"nth": [1]},
                           "action": {"kind": "reject_rows", "every_nth_row": 2}}]
    operator.switch_behaviour(behaviour)
    result = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert result.code == 4, result.stderr
    effects = [c["axes"]["remote_effect"] for c in result.children]
    assert sorted(effects) == ["FULLY_APPLIED", "PARTIALLY_APPLIED"]
    partial = next(c for c in result.children if c["axes"]["remote_effect"] == "PARTIALLY_APPLIED")
    assert partial["error_code"] == "REST_DELIVERY_PARTIALLY_APPLIED" and partial["status"] == "blocked"
    assert partial["axes"]["checkpoint_state"] == "BLOCKED"
    frontier = result.document["frontier"]
    moved = None if frontier is None else frontier["frontier_order"]
    assert moved is None or moved < partial["ordinal"], "the frontier moved past the partial child"
    inspected = operator.inspect(result.document["parent_id"])
    assert inspected["frontier"]["frontier_order"] == moved and inspected["exit_code"] == 4
    # A re-run resends nothing: the partial child waits for an operator, the other is done.
    posts = len(operator.posts())
    again = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert again.code == 4 and len(operator.posts()) == posts


def _by_body(posts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for entry in posts:
        grouped.setdefault(entry["request_body_sha256"], []).append(entry)
    return grouped


def test_a_retry_after_is_waited_in_full_before_the_fenced_replay(operator: Operator) -> None:
    operator.services.rule({"match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "status", "status": 503, "headers": {"Retry-After": "3"}}})
    result = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert result.code == 0, result.stderr
    throttled = [sends for sends in _by_body(operator.posts()).values() if len(sends) == 2]
    assert len(throttled) == 1, "exactly one child was throttled and replayed once"
    first, replay = sorted(throttled[0], key=lambda entry: entry["seq"])
    assert first["status_sent"] == 503 and first["forwarded"] == "no"
    waited = replay["timestamps"]["request_headers"] - first["timestamps"]["request"]
    assert waited >= 3.0, f"replayed after {waited:.2f}s, before the server's Retry-After"
    assert len(operator.services.effects()) == 2


def test_a_retry_after_beyond_the_budget_is_never_shortened(operator: Operator) -> None:
    operator.services.rule({"match": {"method": "POST"}, "fire": "once",
                            "fault": {"action": "status", "status": 503, "headers": {"Retry-After": "86400"}}})
    started = time.monotonic()
    result = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert time.monotonic() - started < 120  # it stopped instead of waiting (or waiting less)
    assert result.code == 4, result.stderr
    blocked = [c for c in result.children if c["status"] == "blocked"]
    assert len(blocked) == 1 and blocked[0]["axes"]["remote_effect"] == "UNKNOWN"
    assert all(len(sends) == 1 for sends in _by_body(operator.posts()).values()), "nothing was sent early"
    assert len(operator.posts()) == 2 and len(operator.services.effects()) == 1
    assert blocked[0]["error_code"] == "REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET"
    # The proxy answered before forwarding: the certified summary proves exact absence, and the
    # reconciliation reopens a retry, never earlier than the server's window.
    parent = result.document["parent_id"]
    reconciled = operator.delivery("reconcile", "--operation-id", parent, "--apply")
    assert reconciled.code == 3, reconciled.stderr
    [item] = reconciled.document["reconciled"]
    assert (item["outcome"], item["after"]["execution_state"], item["after"]["remote_effect"]) == (
        "absence_proven", "RETRY_WAIT", "NONE_PROVEN")
    again = operator.run(SYNC, "2026-03-01", "2026-03-05")
    assert again.code == 3, again.stderr
    waiting = next(c for c in again.children if c["status"] != "completed")
    assert waiting["reason"] == "retry_not_due" and waiting["next_check_after"] is not None
    assert len(operator.posts()) == 2, "never sent before the server's Retry-After window"
