"""The provider's triggers, run in Airflow's shared asyncio triggerer.

``DeliveryReceiptTrigger(operation_id, journal_locator)``: read-only observation of one accepted
async child (``sink.airflow.observation``). Its keyword arguments are JSON and hold only the
operation id and a non-secret ``JournalLocator``; everything else (the pinned plan, the receipt,
the binding's credential reference) is read from durable authority when it runs, and a credential
is resolved in memory only. It yields one ``TriggerEvent({"operation_id", "observed_revision"})``
once the journal shows the child moved on: a hint for ``execute_complete``, which rereads the
journal. Several copies of it (a triggerer restart, two triggerers after a partition) are
harmless: the journal's observation lease, ordinals and revision CAS admit one observation at a
time and every copy ends on the same journal state.

``DeliveryWaitTrigger(seconds)``: a plain timer for a delivery that must wait (a remote-job slot
or a lease held by another live worker); nothing is read or sent.

Heavy imports (the journal clients, the plan, httpcore) happen inside ``run``, on the triggerer
only, never when a DAG file or the scheduler loads this module.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sink.airflow.airflow_compat import BaseTrigger, TriggerEvent
from sink.airflow.locator import JournalLocator, LocatorError

_OPERATION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,255}\Z")
MAX_WAIT_SECONDS = 3600.0


def check_operation_id(value: object) -> str:
    if not isinstance(value, str) or not _OPERATION_ID.fullmatch(value):
        raise LocatorError("airflow.trigger.invalid_operation_id", "the operation id is not a journal identifier")
    return value


class DeliveryReceiptTrigger(BaseTrigger):  # type: ignore[misc]
    def __init__(self, operation_id: str, journal_locator: dict[str, str] | JournalLocator) -> None:
        super().__init__()
        self.operation_id = check_operation_id(operation_id)
        self.locator = JournalLocator.from_kwargs(journal_locator)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"operation_id": self.operation_id, "journal_locator": self.locator.as_kwargs()})

    def _owner(self) -> str:
        # One owner per running copy: two copies never share a lease.
        host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:60] or "host"
        return f"triggerer:{host}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    def _load_observer(self) -> Any:
        """Import what this observation needs (seconds of imports on a cold triggerer) off the loop."""
        client = "journal_async_pg" if self.locator.kind == "postgresql" else "journal_async_sqlite"
        importlib.import_module(f"sink.airflow.{client}")
        importlib.import_module("sink.airflow.poll_http")
        return importlib.import_module("sink.airflow.observation")

    async def run(self) -> AsyncIterator[Any]:
        observation = await asyncio.to_thread(self._load_observer)
        event = await observation.observe_receipt(self.operation_id, self.locator, owner=self._owner())
        yield TriggerEvent({"operation_id": event.operation_id, "observed_revision": event.observed_revision})


class DeliveryWaitTrigger(BaseTrigger):  # type: ignore[misc]
    def __init__(self, seconds: float) -> None:
        super().__init__()
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= MAX_WAIT_SECONDS:
            raise LocatorError("airflow.trigger.invalid_wait", f"a wait is 0-{MAX_WAIT_SECONDS:.0f} seconds")
        self.seconds = float(seconds)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {"seconds": self.seconds})

    async def run(self) -> AsyncIterator[Any]:
        await asyncio.sleep(self.seconds)
        yield TriggerEvent({"waited_seconds": self.seconds})
