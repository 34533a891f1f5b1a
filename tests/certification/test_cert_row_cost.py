"""The lanes' cost estimate: the bundled catalog's runs known to be the longest (a 34 s hold, a
connect that never completes, a blocked async delivery) come first, plain rows last."""

from __future__ import annotations

import dataclasses

from certification.row_cost import expected_seconds
from certification.scenarios import Fault, bundled_rows


def _ranked() -> list[tuple[str, str]]:
    runs = [(row, role) for row in bundled_rows() for role in ("certified", "baseline")]
    runs.sort(key=lambda run: -expected_seconds(*run))
    return [(row.row_id, role) for row, role in runs]


def test_the_longest_runs_of_the_full_catalog_are_ordered_first() -> None:
    ranked = _ranked()
    first = set(ranked[: len(ranked) // 20])  # the first 5 %
    assert {("sync.stripe.inflight.409", "certified"), ("sync.ietf.inflight.409", "certified"),
            ("sync.aip155.timeout.after_commit", "certified"), ("async.timeout.connect", "baseline"),
            ("async.status.409.bare", "certified")} <= first
    last = set(ranked[-len(ranked) // 5:])  # the last 20 %
    assert ("sync.none", "baseline") in last


def test_stated_waits_are_found_at_any_depth_and_only_under_seconds_keys() -> None:
    plain = next(row for row in bundled_rows() if row.row_id == "sync.none")
    held = dataclasses.replace(plain, fault=Fault(type="proxy", rule={
        "match": {"method": "POST"}, "fire": "once",
        "fault": {"action": "hold", "phase": "request", "timeout_seconds": 30, "status": 503}}))
    assert expected_seconds(held, "certified") == expected_seconds(plain, "certified") + 30
    # a baseline gives up on a held answer by its own timeout: a share of the wait, not all of it
    baseline_held = expected_seconds(held, "baseline")
    assert expected_seconds(plain, "baseline") < baseline_held < expected_seconds(held, "certified")
