"""The supervisor against a real receiver through the fault proxy (sync JSON batches, fenced by
an Idempotency-Key): the receiver's ledger and the proxy's log are the judges."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sv_support import Rig, Services, TestChild, admit, children_for, rig, start_services, stop

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import MutationFence, OperationProfile
from sink.contracts.results import ChildResult, ChildStatus, DeliveryCompleted
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.port import LeaseUnavailable
from sink.journal.records import OperationRow
from sink.runtime.lease_keeper import LeaseKeeper
from sink.runtime.submit_step import SubmitStep
from sink.runtime.supervisor import Supervisor

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    running = start_services("json-batches", tmp_path_factory.mktemp("services"))
    try:
        yield running
    finally:
        stop(running.proxy)
        stop(running.receiver)


@pytest.fixture
def fresh(services: Services) -> Services:
    services.reset()
    return services


def _run(tmp_path: Path, services: Services, days: list[str], **kwargs: object):
    children = children_for(days)
    r = rig(tmp_path, services.proxy_url, children, **kwargs)  # type: ignore[arg-type]
    parent_id = admit(r.journal, children)
    return r, Supervisor(r.ports, r.config).run_parent(parent_id)


def test_a_clean_delivery_applies_each_child_once_and_promotes_the_frontier(tmp_path: Path, fresh: Services) -> None:
    _, outcome = _run(tmp_path, fresh, ["2026-08-01", "2026-08-02", "2026-08-03"])
    assert [child.status for child in outcome.children] == [ChildStatus.COMPLETED] * 3
    assert isinstance(outcome, DeliveryCompleted) and outcome.exit_class is ExitClass.OK
    assert outcome.frontier_order == 2
    effects = fresh.effects()
    assert len(effects) == 3 and sorted(e["scope_start"] for e in effects) == ["2026-08-01", "2026-08-02", "2026-08-03"]
    assert all(e["accepted_rows"] == 3 for e in effects)
    assert len([e for e in fresh.proxy_log() if e["method"] == "POST"]) == 3


def test_commit_then_cut_replays_the_same_key_and_applies_once(tmp_path: Path, fresh: Services) -> None:
    fresh.rule({"match": {"method": "POST"}, "fire": "once", "fault": {"action": "close", "phase": "response"}})
    r, outcome = _run(tmp_path, fresh, ["2026-08-01"])
    effects = fresh.effects()
    assert len(effects) == 1, "the receiver applied the fenced request exactly once"
    posts = [e for e in fresh.proxy_log() if e["method"] == "POST"]
    assert len(posts) == 2, "one cut request and one same-key replay"
    child = outcome.children[0]
    # The 409 duplicate proves the same key and intent but carries no counters: the certified
    # read-only summary (row count and content digest of the scope) proves the full effect.
    assert child.status is ChildStatus.COMPLETED
    assert child.axes.remote_effect is RemoteEffect.FULLY_APPLIED
    assert [a.attempt_ordinal for a in r.journal.list_attempts(child.operation_id)] == [1]


def test_without_a_summary_a_counterless_duplicate_stays_unknown_and_is_never_resent(
    tmp_path: Path, fresh: Services
) -> None:
    fresh.rule({"match": {"method": "POST"}, "fire": "once", "fault": {"action": "close", "phase": "response"}})
    _, outcome = _run(tmp_path, fresh, ["2026-08-01"], summary=False)
    child = outcome.children[0]
    assert child.axes.execution_state is ExecutionState.FINALIZED
    assert child.axes.remote_effect is RemoteEffect.UNKNOWN
    assert child.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    assert len(fresh.effects()) == 1
    assert len([e for e in fresh.proxy_log() if e["method"] == "POST"]) == 2


def test_a_cut_before_forwarding_is_retried_without_a_second_effect(tmp_path: Path, fresh: Services) -> None:
    fresh.rule({"match": {"method": "POST"}, "fire": "once", "fault": {"action": "close", "phase": "request"}})
    _, outcome = _run(tmp_path, fresh, ["2026-08-01"])
    assert outcome.children[0].status is ChildStatus.COMPLETED
    assert len(fresh.effects()) == 1


def test_a_synthetic_503_after_the_request_is_fenced_replay_not_a_new_attempt(tmp_path: Path, fresh: Services) -> None:
    fresh.rule({"match": {"method": "POST"}, "fire": "once",
                "fault": {"action": "status", "status": 503, "headers": {"Retry-After": "1"}}})
    r, outcome = _run(tmp_path, fresh, ["2026-08-01"])
    assert outcome.children[0].status is ChildStatus.COMPLETED
    assert len(fresh.effects()) == 1
    assert any(ms >= 1000 for ms in r.clock.slept), "Retry-After is a lower bound on the replay delay"


def _step(r: Rig) -> SubmitStep:
    return SubmitStep(r.ports, r.config, LeaseKeeper(r.journal, r.config.worker_id, r.config.lease_ttl))


def _drive(r: Rig, operation_id: str) -> ChildResult:
    supervisor = Supervisor(r.ports, r.config)
    row = supervisor.drive_child(operation_id)
    return next(c for c in supervisor.result(row.parent_id).children if c.operation_id == operation_id)


def _died_before_send(tmp_path: Path, fresh: Services, **kwargs: object) -> tuple[list[TestChild], OperationRow]:
    children = children_for(["2026-08-01"])
    first = rig(tmp_path, fresh.proxy_url, children, **kwargs)  # type: ignore[arg-type]
    first = replace(first, ports=replace(first.ports, failpoint=_die_at("http.submit.before_send")),
                    config=replace(first.config, lease_ttl=timedelta(seconds=1)))
    parent_id = admit(first.journal, children)
    row = first.journal.load_parent(parent_id).children[0]
    with pytest.raises(Died):  # SUBMITTING is durable, then the worker dies before any byte
        _step(first).run(row, operation_started_ms=0, wake_attempts=0)
    return children, row


def test_a_gone_workers_attempt_is_replayed_under_the_certified_fence_and_applied_once(
        tmp_path: Path, fresh: Services) -> None:
    children, row = _died_before_send(tmp_path, fresh)
    second = rig(tmp_path, fresh.proxy_url, children, worker="worker-2", journal_path=tmp_path / "journal.sqlite3")
    time.sleep(1.2)  # worker-1's mutation lease expires on the journal clock
    outcome = _drive(second, row.operation_id)
    assert outcome.status is ChildStatus.COMPLETED
    assert len(fresh.effects()) == 1 and len([e for e in fresh.proxy_log() if e["method"] == "POST"]) == 1
    assert [a.attempt_ordinal for a in second.journal.list_attempts(row.operation_id)] == [1]


def test_without_a_certified_fence_a_worker_found_submitting_is_unknown_never_resent(
        tmp_path: Path, fresh: Services) -> None:
    children, row = _died_before_send(tmp_path, fresh, summary=False)
    second = rig(tmp_path, fresh.proxy_url, children, worker="worker-2", journal_path=tmp_path / "journal.sqlite3")
    second = replace(second, config=replace(second.config, profile=_unfenced(second.config.profile)))
    time.sleep(1.2)
    outcome = _drive(second, row.operation_id)
    assert outcome.status is ChildStatus.BLOCKED
    assert outcome.axes.remote_effect is RemoteEffect.UNKNOWN
    assert outcome.error_code is ErrorCode.REMOTE_EFFECT_UNKNOWN
    assert outcome.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    assert fresh.effects() == [] and [e for e in fresh.proxy_log() if e["method"] == "POST"] == []


def test_a_live_lease_of_another_worker_stops_the_takeover_as_contention(tmp_path: Path, fresh: Services) -> None:
    children = children_for(["2026-08-01"])
    first = rig(tmp_path, fresh.proxy_url, children)
    first = replace(first, ports=replace(first.ports, failpoint=_die_at("http.submit.before_send")))
    parent_id = admit(first.journal, children)
    row = first.journal.load_parent(parent_id).children[0]
    with pytest.raises(Died):
        _step(first).run(row, operation_started_ms=0, wake_attempts=0)
    second = rig(tmp_path, fresh.proxy_url, children, worker="worker-2", journal_path=tmp_path / "journal.sqlite3")
    with pytest.raises(LeaseUnavailable):
        Supervisor(second.ports, second.config).drive(row.operation_id)
    outcome = _drive(second, row.operation_id)  # a run: contention, exit 3, never an unknown effect
    assert (outcome.status, outcome.exit_class, outcome.held_by) == (ChildStatus.PENDING, ExitClass.UNAVAILABLE,
                                                                     "worker-1")
    assert second.journal.get_operation(row.operation_id).axes.execution_state is ExecutionState.SUBMITTING


def _unfenced(profile: OperationProfile) -> OperationProfile:
    fence = MutationFence.model_validate({"type": "none"})
    return profile.model_copy(update={"mutation_fence": fence})


class Died(Exception):
    pass


def _die_at(point: str):
    def hit(name: str) -> None:
        if name == point:
            raise Died(name)
    return hit
