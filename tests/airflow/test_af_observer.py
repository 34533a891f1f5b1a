"""The read-only observer from an event loop, against the real receiver, proxy and journal:
duplicates are harmless, nothing but GET/HEAD is sent, a refused authority or a missing
credential sends nothing, and no journal call blocks the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import timedelta

import pytest
from af_support import Stack

from sink.airflow.journal_async_sqlite import AsyncSqliteJournal
from sink.airflow.observation import load_pinned_plan, observe_receipt
from sink.airflow.poll_http import AsyncReceiptPoller, MutationRefused
from sink.airflow.runtime_bridge import DeliveryCompleted, DeliveryPending, resume, submit_or_resume
from sink.contracts.transport import FailureKind, PreparedRequest, SendCertainty
from sink.design.query import load_design_contract


def _pending(stack: Stack, index: int = 0) -> DeliveryPending:
    d = stack.deployment
    start, end = d.scope(index)
    result = submit_or_resume(d.workload, start, end, locator=d.locator, worker_id="worker-a")
    assert isinstance(result, DeliveryPending), result
    return result


def _observations(stack: Stack, operation_id: str) -> list[tuple[int, str]]:
    path = stack.deployment.locator.journal.removeprefix("sqlite:")
    with sqlite3.connect(path) as conn:
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT observation_ordinal, acknowledgement_state FROM observations WHERE operation_id = ? "
            "ORDER BY observation_ordinal", (operation_id,))]


def test_two_copies_of_the_trigger_observe_once(stack: Stack) -> None:
    pending = _pending(stack)
    polls_seen = {"n": 0}

    async def both() -> list[object]:
        async def sleep(seconds: float) -> None:
            polls_seen["n"] += 1
            if polls_seen["n"] == 4:
                await asyncio.to_thread(stack.receiver.advance_clock, 1800)
            await asyncio.sleep(0.05)

        return await asyncio.gather(*(observe_receipt(pending.operation_id, stack.deployment.locator,
                                                      owner=f"copy-{i}", sleep=sleep) for i in range(2)))

    first, second = asyncio.run(both())
    assert first.execution_state == second.execution_state == "VERIFYING"  # type: ignore[attr-defined]
    assert first.observed_revision == second.observed_revision  # type: ignore[attr-defined]
    observed = _observations(stack, pending.operation_id)
    assert [o[0] for o in observed] == list(range(1, len(observed) + 1))  # contiguous ordinals, no duplicate
    assert [o[1] for o in observed].count("SUCCEEDED") == 1
    # A copy started after the child moved on (a repeated event, a late triggerer) polls nothing.
    late = asyncio.run(observe_receipt(pending.operation_id, stack.deployment.locator, owner="late"))
    assert (late.polls, late.observed_revision) == (0, first.observed_revision)  # type: ignore[attr-defined]
    done = resume(pending.parent_id, locator=stack.deployment.locator, worker_id="worker-b")
    assert isinstance(done, DeliveryCompleted)
    assert len(stack.posts()) == 1 and len(stack.receiver.effects()) == 1
    methods = {entry["method"] for entry in stack.proxy.log() if "/dataset-jobs/" in str(entry.get("path"))}
    assert methods == {"GET"}


def _poller(stack: Stack, pending: DeliveryPending) -> tuple[AsyncReceiptPoller, PreparedRequest]:
    async def open_it() -> tuple[AsyncReceiptPoller, PreparedRequest]:
        journal = await AsyncSqliteJournal.open(stack.deployment.locator.journal.removeprefix("sqlite:"),
                                                markers_dir=stack.deployment.locator.markers,
                                                contract=load_design_contract())
        plan = await load_pinned_plan(journal, stack.deployment.locator.artifacts, pending.operation_id)
        await journal.aclose()
        poller = await AsyncReceiptPoller.open(plan)
        return poller, PreparedRequest(method="GET", path_and_query="/mock/v1/dataset-jobs/none", semantic_headers=(),
                                       content_type=None, body=None)

    return asyncio.run(open_it())


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_the_poller_refuses_every_mutation_method(stack: Stack, method: str) -> None:
    poller, request = _poller(stack, _pending(stack))
    before = len(stack.proxy.log())
    mutation = PreparedRequest(method=method, path_and_query=request.path_and_query, semantic_headers=(),
                               content_type=None, body=None)
    with pytest.raises(MutationRefused):
        asyncio.run(poller.get(mutation))
    assert len(stack.proxy.log()) == before


def test_refused_authority_and_missing_credential_send_nothing(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    poller, request = _poller(stack, _pending(stack))
    before = len(stack.proxy.log())
    poller._allows = lambda address: False  # the network policy refuses the resolved address
    refused = asyncio.run(poller.get(request))
    assert refused.response is None and refused.evidence.failure is FailureKind.AUTHORITY_REFUSED
    assert refused.evidence.certainty is SendCertainty.NOT_STARTED
    poller._allows = lambda address: True
    monkeypatch.delenv("MOCK_RECEIVER_TOKEN")  # the binding's credential reference resolves to nothing
    missing = asyncio.run(poller.get(request))
    assert missing.evidence.failure is FailureKind.CREDENTIAL_UNAVAILABLE
    assert missing.evidence.certainty is SendCertainty.NOT_STARTED
    assert len(stack.proxy.log()) == before  # neither reached the proxy


def test_no_journal_call_runs_on_the_event_loop_thread(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from sink.journal.sqlite.adapter import SqliteJournal

    pending = _pending(stack)
    loop_threads: set[int] = set()
    calls: list[str] = []
    for name in ("get_operation", "get_receipt", "list_attempts", "get_parent", "acquire_lease", "record_observation",
                 "transition", "now"):
        original = getattr(SqliteJournal, name)

        def wrapped(self: object, *args: object, _original: object = original, _name: str = name,
                    **kwargs: object) -> object:
            calls.append(_name)
            assert threading.get_ident() not in loop_threads, f"{_name} ran on the event loop"
            return _original(self, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(SqliteJournal, name, wrapped)

    async def run() -> None:
        loop_threads.add(threading.get_ident())

        async def sleep(seconds: float) -> None:
            await asyncio.to_thread(stack.receiver.advance_clock, 1800)

        await observe_receipt(pending.operation_id, stack.deployment.locator, owner="o", sleep=sleep,
                              lease_ttl=timedelta(seconds=30))

    asyncio.run(run())
    assert {"acquire_lease", "record_observation", "transition"} <= set(calls)
