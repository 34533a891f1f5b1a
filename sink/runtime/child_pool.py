"""Bounded child concurrency of the sync family (seed: "Synchronous batch profiles may still use a
certified bounded child concurrency"; async stays one child at a time in V1).

Each child is still driven by ``Supervisor.drive`` from its own journal row, in the seed's per-child
order; only whole children run side by side, in at most ``width`` threads. Threads fit the
transport (one thread-safe httpx client, per-request trace state in a context variable) and the
journal adapters (SQLite serialises on its lock and write transaction, PostgreSQL uses a pool).
Results come back in child order, so the parent outcome does not depend on which thread finished
first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sink.contracts.profile import OperationProfile

T = TypeVar("T")


def sync_child_width(profile: OperationProfile) -> int:
    """How many children may be in flight at once: the profile's ``limits.max_in_flight_children``,
    never more than its active-request bound (each in-flight child holds one request and one
    capacity slot; more threads would only be refused), and always 1 for the async family."""
    if profile.protocol_family != "sync_batch":
        return 1
    return max(1, min(profile.limits.max_in_flight_children, profile.rate_limits.max_active_requests))


def drive_all(drive: Callable[[str], T], operation_ids: Sequence[str], width: int) -> list[T]:
    """``drive`` every child, at most ``width`` at a time; results in the order of ``operation_ids``.

    As in a serial run, a refusal (an exception) stops the parent: no child starts after it, the
    children already started finish (none is abandoned half-way inside its attempt), and the first
    exception in child order is raised.
    """
    if width <= 1 or len(operation_ids) <= 1:
        return [drive(operation_id) for operation_id in operation_ids]
    refused = threading.Event()

    def guarded(operation_id: str) -> T | None:
        if refused.is_set():
            return None
        try:
            return drive(operation_id)
        except BaseException:
            refused.set()
            raise

    with ThreadPoolExecutor(max_workers=min(width, len(operation_ids)), thread_name_prefix="restproof-child") as pool:
        futures = [pool.submit(guarded, operation_id) for operation_id in operation_ids]
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    results = [future.result() for future in futures]
    return [result for result in results if result is not None]
