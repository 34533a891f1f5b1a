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

from sink.contracts.state import AcknowledgementState, ExecutionState
from sink.design.query import DesignContract, Transition
from sink.journal.durability import Durability
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import (
    Attempt,
    AxesState,
    Lease,
    LeaseRequest,
    Observation,
    OperationRow,
    Receipt,
    TransitionRequest,
)
from sink.journal.transition_policy import raises_effect_index, releases_capacity

OBSERVATION_LEASE = "observation_lease_held"


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


def require_observer_transition(source: AxesState, transition: Transition) -> None:
    """An observer applies only what the contract gives the observation-lease holder of a WAITING
    child (the ``poll_observed_*`` family and the observation deadline): never a verification, a
    capacity release or an effect-index raise, which stay the worker's."""
    if (source.execution_state is not ExecutionState.WAITING
            or OBSERVATION_LEASE not in transition.cas_preconditions
            or releases_capacity(transition.target) or raises_effect_index(source, transition.target)):
        raise TransitionRejected(RejectionReason.ILLEGAL_TRANSITION,
                                 f"transition {transition.id!r} is not an observer's to apply")


async def open_async_journal(journal: str, *, pg_schema: str, markers_dir: str, contract: DesignContract,
                             durability: Durability = Durability.DURABLE) -> AsyncObservationJournal:
    """The client for a locator's journal (``sqlite:PATH`` or a ``postgresql://`` DSN)."""
    if journal.startswith("sqlite:"):
        from sink.airflow.journal_async_sqlite import AsyncSqliteJournal  # noqa: PLC0415

        return await AsyncSqliteJournal.open(journal.removeprefix("sqlite:"), markers_dir=markers_dir,
                                             contract=contract, durability=durability)
    from sink.airflow.journal_async_pg import AsyncPostgresJournal  # noqa: PLC0415

    return await AsyncPostgresJournal.open(journal, schema=pg_schema, contract=contract, durability=durability)
