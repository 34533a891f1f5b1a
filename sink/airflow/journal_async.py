"""The trigger's small asynchronous journal client: only what read-only observation needs.

Two implementations keep the triggerer's event loop free of blocking calls: PostgreSQL through
psycopg's asynchronous connection, executing the very statements of the synchronous adapter
(``journal_async_pg``), and SQLite through the synchronous adapter run on a worker thread
(``journal_async_sqlite``). Both apply the same pure policies as the synchronous adapters, so the
same observation sequence leaves the same rows (tests/airflow/test_af_journal_contract.py).

Writes are limited to what an observer may do: take or renew the observation lease, append an
observation, and CAS the axes along a transition that neither releases remote-job capacity nor
raises the effect index (the ``poll_observed_*`` family). Anything else is refused.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sink.contracts.state import AcknowledgementState
from sink.design.query import DesignContract
from sink.journal.durability import Durability
from sink.journal.records import (
    Attempt,
    Lease,
    LeaseRequest,
    Observation,
    OperationRow,
    Receipt,
    TransitionRequest,
)


class AsyncObservationJournal(Protocol):
    async def now(self) -> datetime:
        """The database clock (every lease and deadline decision uses it)."""

    async def get_operation(self, operation_id: str) -> OperationRow | None: ...

    async def get_receipt(self, operation_id: str) -> Receipt | None: ...

    async def latest_attempt(self, operation_id: str) -> Attempt | None: ...

    async def plan_ref(self, operation_id: str) -> str | None:
        """The pinned plan artifact of the operation's parent (None for an unknown operation)."""

    async def acquire_lease(self, request: LeaseRequest) -> Lease: ...

    async def record_observation(self, operation_id: str, *, observation_ordinal: int,
                                 acknowledgement_state: AcknowledgementState, evidence_digest: str,
                                 lease_owner: str) -> Observation: ...

    async def transition(self, request: TransitionRequest) -> OperationRow: ...

    async def aclose(self) -> None: ...


async def open_async_journal(journal: str, *, pg_schema: str, markers_dir: str, contract: DesignContract,
                             durability: Durability = Durability.DURABLE) -> AsyncObservationJournal:
    """The client for a locator's journal (``sqlite:PATH`` or a ``postgresql://`` DSN)."""
    if journal.startswith("sqlite:"):
        from sink.airflow.journal_async_sqlite import AsyncSqliteJournal  # noqa: PLC0415

        return await AsyncSqliteJournal.open(journal.removeprefix("sqlite:"), markers_dir=markers_dir,
                                             contract=contract, durability=durability)
    from sink.airflow.journal_async_pg import AsyncPostgresJournal  # noqa: PLC0415

    return await AsyncPostgresJournal.open(journal, schema=pg_schema, contract=contract, durability=durability)
