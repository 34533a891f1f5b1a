"""The SQLite journal for the triggerer: the synchronous adapter, every call on a worker thread.

SQLite is the local-development journal. Its adapter serialises calls on one connection under a
lock (``check_same_thread=False``), so ``asyncio.to_thread`` runs each call off the event loop
and the rows written are exactly those of the synchronous adapter.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from sink.airflow.observer_rule import require_observer_transition
from sink.contracts.state import AcknowledgementState
from sink.design.query import DesignContract
from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import Attempt, Lease, LeaseRequest, Observation, OperationRow, Receipt, TransitionRequest
from sink.journal.sqlite.adapter import SqliteJournal, open_sqlite_journal


class AsyncSqliteJournal:
    def __init__(self, journal: SqliteJournal, contract: DesignContract) -> None:
        self._journal = journal
        self._contract = contract

    @classmethod
    async def open(cls, path: str, *, markers_dir: str, contract: DesignContract,
                   durability: Durability = Durability.DURABLE) -> AsyncSqliteJournal:
        journal = await asyncio.to_thread(open_sqlite_journal, Path(path), markers=FileMarkerStore(Path(markers_dir)),
                                          contract=contract, durability=durability)
        return cls(journal, contract)

    async def now(self) -> datetime:
        return await asyncio.to_thread(self._journal.now)

    async def get_operation(self, operation_id: str) -> OperationRow | None:
        return await asyncio.to_thread(self._journal.get_operation, operation_id)

    async def get_receipt(self, operation_id: str) -> Receipt | None:
        return await asyncio.to_thread(self._journal.get_receipt, operation_id)

    async def latest_attempt(self, operation_id: str) -> Attempt | None:
        attempts = await asyncio.to_thread(self._journal.list_attempts, operation_id)
        return attempts[-1] if attempts else None

    async def plan_ref(self, operation_id: str) -> str | None:
        row = await self.get_operation(operation_id)
        if row is None:
            return None
        parent = await asyncio.to_thread(self._journal.get_parent, row.parent_id)
        return None if parent is None else parent.plan_ref

    async def acquire_lease(self, request: LeaseRequest) -> Lease:
        return await asyncio.to_thread(self._journal.acquire_lease, request)

    async def record_observation(self, operation_id: str, *, observation_ordinal: int,
                                 acknowledgement_state: AcknowledgementState, evidence_digest: str,
                                 lease_owner: str) -> Observation:
        return await asyncio.to_thread(
            lambda: self._journal.record_observation(
                operation_id, observation_ordinal=observation_ordinal, acknowledgement_state=acknowledgement_state,
                evidence_digest=evidence_digest, lease_owner=lease_owner))

    async def transition(self, request: TransitionRequest) -> OperationRow:
        row = await self.get_operation(request.operation_id)
        if row is None:
            raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {request.operation_id}")
        chosen = self._contract.transition_by_id(request.transition_id, row.axes)
        if chosen is not None:
            # Checked before the write; the adapter re-checks revision, lease and listing inside
            # its transaction, so a row that moved meanwhile is refused there (stale revision).
            require_observer_transition(row.axes, chosen)
        return await asyncio.to_thread(self._journal.transition, request)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._journal.close)
