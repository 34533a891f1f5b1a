"""The provider's continuation on the real runtime, receiver and proxy, without Airflow: submit
and detach on the worker, observe read-only from an event loop, resume on the worker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from af_support import Stack

from sink.airflow.observation import observe_receipt
from sink.airflow.runtime_bridge import DeliveryCompleted, DeliveryPending, resume, submit_or_resume
from sink.journal.durability import Durability


def clock_advancer(stack: Stack, after_sleeps: int) -> Callable[[float], Awaitable[None]]:
    """An observer's sleep that advances the receiver clock 30 minutes at its n-th call."""
    calls = {"n": 0}

    async def sleep(seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] == after_sleeps:
            await asyncio.to_thread(stack.receiver.advance_clock, 1800)
        await asyncio.sleep(0.01)

    return sleep


def test_submit_detach_observe_then_complete_with_one_post(stack: Stack) -> None:
    d = stack.deployment
    start, end = d.scope(0)
    first = submit_or_resume(d.workload, start, end, locator=d.locator, worker_id="worker-a")
    assert isinstance(first, DeliveryPending), first
    sleep = clock_advancer(stack, after_sleeps=2)
    event = asyncio.run(observe_receipt(first.operation_id, d.locator, owner="observer-1", sleep=sleep,
                                        lease_ttl=timedelta(seconds=30), durability=Durability.DURABLE))
    assert event.execution_state == "VERIFYING"
    assert event.polls == 3  # two RUNNING answers, the clock moved 30 minutes, then the terminal one
    done = resume(first.parent_id, locator=d.locator, worker_id="worker-b")
    assert isinstance(done, DeliveryCompleted), done
    assert done.operation_ids == (first.operation_id,)
    assert len(stack.posts()) == 1
    assert len(stack.receiver.effects()) == 1
