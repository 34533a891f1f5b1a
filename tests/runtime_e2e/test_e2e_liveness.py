"""Long async jobs finish: a live worker keeps its leases (renewed on the journal's clock) while it
polls and sleeps, however long the job or the poll, and the detached path polls on every resume.

Against the real dataset-jobs receiver through the fault proxy. The "30-minute job" finishes by the
receiver's clock only (its poll count is set out of reach), which the test advances once the sink
has polled for longer than its lease: the old code lost the observation lease there and exited 4.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Operator, Result, operator_on, running_services
from sv_support import Services

pytestmark = pytest.mark.timeout(300)
ASYNC = "measurements-async"
SCOPE = ("2026-03-01", "2026-03-05")


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with running_services("dataset-jobs", tmp_path_factory.mktemp("e2e-liveness")) as running:
        yield running


@pytest.fixture
def operator(tmp_path: Path, services: Services) -> Iterator[Operator]:
    # Finishes by the receiver's clock only: a "30-minute job".
    def thirty_minute_job(original: dict[str, Any]) -> dict[str, Any]:
        return {**original, "async_jobs": {**original["async_jobs"], "complete_after_polls": 10_000,
                                           "complete_after_seconds": 1800}}

    with operator_on(tmp_path, services, thirty_minute_job) as op:
        yield op


def _faster_polls(operator: Operator, interval_ms: int) -> None:
    operator.edit_yaml("profiles/mock.dataset-jobs@1.yaml", timeouts={
        **_timeouts(operator), "poll_interval_ms": interval_ms, "poll_retry_ms": interval_ms})


def _timeouts(operator: Operator) -> dict[str, int]:
    import yaml

    document = yaml.safe_load((operator.scenarios / "profiles" / "mock.dataset-jobs@1.yaml").read_text("utf-8"))
    timeouts = document["timeouts"]
    assert isinstance(timeouts, dict)
    return timeouts


def _in_background(action: object) -> tuple[threading.Thread, list[Result]]:
    results: list[Result] = []
    thread = threading.Thread(target=lambda: results.append(action()), daemon=True)  # type: ignore[operator]
    thread.start()
    return thread, results


def _wait_for_polls(operator: Operator, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while len(operator.gets()) < count:
        assert time.monotonic() < deadline, f"the sink polled {len(operator.gets())} times, expected {count}"
        time.sleep(0.5)


def _completed_once(operator: Operator, result: Result) -> None:
    assert result.code == 0, result.stderr[-2000:]
    assert [c["status"] for c in result.children] == ["completed"]
    assert len(operator.services.effects()) == 1 and len(operator.posts()) == 1


@pytest.mark.parametrize(("lease", "polled_for_s"), [("30", 36.0), ("1", 4.0)])
def test_a_30_minute_job_completes_under_wait_with_the_default_and_a_1s_lease(
        operator: Operator, lease: str, polled_for_s: float) -> None:
    _faster_polls(operator, 1000)
    started = time.monotonic()
    thread, results = _in_background(lambda: operator.run(ASYNC, *SCOPE, "--lease-seconds", lease))
    # Keep the job running for longer than the lease: the observation lease must be renewed.
    _wait_for_polls(operator, 2, 120)
    time.sleep(max(0.0, polled_for_s - (time.monotonic() - started)))
    assert thread.is_alive(), results[0].stderr[-2000:] if results else "the run ended early"
    operator.advance_clock(1800)
    thread.join(timeout=120)
    assert results, "the run did not end after the job finished"
    _completed_once(operator, results[0])


def test_detach_then_periodic_resume_polls_and_completes(operator: Operator) -> None:
    detached = operator.run(ASYNC, *SCOPE, "--mode", "detach", "--lease-seconds", "1")
    assert detached.code == 0, detached.stderr
    assert detached.document["outcome"] == "pending" and detached.document["continuation_kind"] == "poll_receipt"
    assert operator.gets() == [], "run --mode detach returns right after its submit"
    parent = detached.document["parent_id"]
    for expected_polls in (1, 2):  # every resume is one bounded observation pass
        resumed = operator.delivery("resume", "--operation-id", parent, "--apply", "--mode", "detach",
                                    "--lease-seconds", "1")
        assert resumed.code == 0 and resumed.document["outcome"] == "pending", resumed.stderr
        assert len(operator.gets()) == expected_polls
    operator.advance_clock(1800)
    finished = operator.delivery("resume", "--operation-id", parent, "--apply", "--mode", "detach",
                                 "--lease-seconds", "1")
    _completed_once(operator, finished)
    assert operator.inspect(parent)["outcome"] == "completed"


def test_a_poll_answered_after_20s_keeps_working(operator: Operator) -> None:
    operator.services.rule({"match": {"method": "GET", "path": "/mock/v1/dataset-jobs/*"}, "fire": "once",
                            "fault": {"action": "delay", "phase": "response", "seconds": 20}})
    _faster_polls(operator, 1000)
    thread, results = _in_background(lambda: operator.run(ASYNC, *SCOPE, "--lease-seconds", "1"))
    _wait_for_polls(operator, 2, 120)  # the slow one answered: the run goes on polling
    operator.advance_clock(1800)
    thread.join(timeout=120)
    assert results
    _completed_once(operator, results[0])
    slow = operator.gets()[0]
    assert slow["timestamps"]["delivered"] - slow["timestamps"]["request"] >= 19.0, "the first poll was slow"
