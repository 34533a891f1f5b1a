"""Bounded sync child concurrency: with width N the receiver never sees more than N mutations at
once (the fault proxy's log is the judge), the results equal those of width 1, and two workers
sharing one journal stay inside its active-request bound together."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sv_support import Rig, Services, admit, children_for, rig, start_services, stop

from sink.contracts.profile import OperationProfile
from sink.runtime.child_pool import sync_child_width
from sink.runtime.outcome import RouteResult
from sink.runtime.ports import SystemClock
from sink.runtime.rate_limiter import JournalRateLimiter, RequestKind
from sink.runtime.supervisor import Supervisor

pytestmark = pytest.mark.timeout(180)
DAYS = [f"2026-08-{day:02d}" for day in range(1, 7)]
SLOW_POST = {"match": {"method": "POST"}, "fire": "always",
             "fault": {"action": "delay", "phase": "request", "seconds": 0.4}}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    running = start_services("json-batches", tmp_path_factory.mktemp("services"))
    try:
        yield running
    finally:
        stop(running.proxy)
        stop(running.receiver)


def _with_width(profile: OperationProfile, width: int, active: int | None = None) -> OperationProfile:
    return profile.model_copy(update={
        "limits": profile.limits.model_copy(update={"max_in_flight_children": width}),
        "rate_limits": profile.rate_limits.model_copy(update={"max_active_requests": active or max(width, 1)}),
    })


def _rig(work: Path, services: Services, days: list[str], width: int, *, worker: str = "worker-1",
         journal: Path | None = None, active: int | None = None) -> Rig:
    r = rig(work, services.proxy_url, children_for(days), worker=worker, journal_path=journal)
    return replace(r, config=replace(r.config, profile=_with_width(r.config.profile, width, active)))


def _max_concurrent_posts(log: list[dict[str, Any]]) -> int:
    edges: list[tuple[float, int]] = []
    for entry in log:
        if entry["method"] != "POST":
            continue
        stamps = entry["timestamps"]
        edges += [(stamps["request_headers"], 1), (stamps["response"], -1)]
    level = peak = 0
    for _, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):  # an end before a start at a tie
        level += step
        peak = max(peak, level)
    return peak


def _deliver(r: Rig, days: list[str], parent_key: str = "parent-1") -> RouteResult:
    parent_id = admit(r.journal, children_for(days), parent_key)
    return Supervisor(r.ports, r.config).run_parent(parent_id)


def _results(outcome: RouteResult, services: Services) -> tuple[object, ...]:
    children = [(c.status, c.axes, c.error_code, c.exit_class) for c in outcome.children]
    frontier = outcome.frontier_order
    effects = sorted((e["scope_start"], e["accepted_rows"]) for e in services.effects())
    return children, frontier, effects


def test_the_receiver_never_sees_more_than_width_mutations_and_results_equal_width_one(
    tmp_path: Path, services: Services,
) -> None:
    services.reset()
    services.rule(SLOW_POST)
    serial = _results(_deliver(_rig(tmp_path / "w1", services, DAYS, 1), DAYS), services)
    assert _max_concurrent_posts(services.proxy_log()) == 1
    services.reset()
    services.rule(SLOW_POST)
    r = _rig(tmp_path / "w3", services, DAYS, 3)
    assert sync_child_width(r.config.profile) == 3
    parallel = _results(_deliver(r, DAYS), services)
    log = services.proxy_log()
    assert len([e for e in log if e["method"] == "POST"]) == len(DAYS)  # one POST per child
    assert _max_concurrent_posts(log) == 3  # side by side, never more than the width
    assert parallel == serial
    assert len(serial[2]) == len(DAYS) and serial[1] == len(DAYS) - 1  # type: ignore[arg-type]


def test_two_workers_on_one_journal_share_the_active_request_bound(tmp_path: Path, services: Services) -> None:
    services.reset()
    services.rule(SLOW_POST)
    journal = tmp_path / "shared.sqlite3"
    first, second = DAYS[:3], DAYS[3:]
    rigs = [_rig(tmp_path / "a", services, first, 2, worker="worker-a", journal=journal, active=2),
            _rig(tmp_path / "b", services, second, 2, worker="worker-b", journal=journal, active=2)]
    for r in rigs:  # each its own connection to the one journal, as two processes would have
        limiter = JournalRateLimiter(r.journal, SystemClock(), limits=r.config.profile.rate_limits, scope_key="k",
                                     max_wait_ms=60_000)
        r.ports = replace(r.ports, limiter=limiter)
    outcomes: dict[str, RouteResult] = {}

    def deliver(r: Rig, days: list[str], key: str) -> None:
        outcomes[key] = _deliver(r, days, key)

    threads = [threading.Thread(target=deliver, args=(rigs[0], first, "parent-a")),
               threading.Thread(target=deliver, args=(rigs[1], second, "parent-b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes) == ["parent-a", "parent-b"]
    assert all(c.status.value == "completed" for o in outcomes.values() for c in o.children)
    assert len(services.effects()) == len(DAYS)
    assert _max_concurrent_posts(services.proxy_log()) <= 2  # 2 + 2 without the shared bound


class _Recording:
    """A limiter that records when it is asked, beside the failpoints the supervisor passes."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    @contextmanager
    def admit(self, kind: RequestKind) -> Iterator[None]:
        self.events.append(f"admit:{kind.value}")
        try:
            yield
        finally:
            self.events.append(f"release:{kind.value}")

    def take_token(self, kind: RequestKind) -> None:
        self.events.append(f"token:{kind.value}")


def test_the_limits_are_asked_before_anything_durable_and_held_until_the_result_is_recorded(
    tmp_path: Path, services: Services,
) -> None:
    services.reset()
    events: list[str] = []
    r = _rig(tmp_path, services, DAYS[:1], 1)
    r.ports = replace(r.ports, limiter=_Recording(events), failpoint=events.append)
    outcome = _deliver(r, DAYS[:1])
    assert [c.status.value for c in outcome.children] == ["completed"]
    submit = events.index("admit:submit")
    assert events[submit + 1:submit + 3] == ["journal.acquire_lease.before", "journal.acquire_lease.after"]
    assert events.index("journal.publish_marker.before") > submit
    assert events.index("http.submit.before_send") < events.index("release:submit")
    assert events.index("journal.record_submit_result.after") < events.index("release:submit")
    summary = events.index("admit:summary")
    assert events[summary + 1] == "http.summary.before_send" and "release:summary" in events[summary:]
