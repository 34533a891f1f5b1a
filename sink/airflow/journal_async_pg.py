"""The PostgreSQL journal for the triggerer: psycopg's asynchronous connection, the adapter's SQL.

Every statement is imported from ``sink.journal.postgres`` (never a copy) and every decision from
the pure journal policies, so a trigger's observation leaves the rows the synchronous adapter
would. One autocommit connection (FIELD-NOTES, psycopg 3) with explicit transactions; leases are
decided on the server clock. The axes CAS is pinned durable like the adapter's critical
transactions (``synchronous_commit`` on, ``fsync`` checked) unless opened non-durable for tests.
A zero-RPO journal is not observed from here: its critical commits need the synchronous quorum
proof that only the synchronous adapter carries, so opening one is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from sink.airflow.observer_rule import require_observer_transition
from sink.contracts.state import AcknowledgementState
from sink.design.query import DesignContract
from sink.journal.durability import REQUIRED_SYNCHRONOUS_COMMIT, Durability, check_postgres_settings
from sink.journal.ids import require_digest
from sink.journal.port import (
    JournalConfigurationError,
    JournalRejection,
    JournalUnavailable,
    LeaseUnavailable,
    RejectionReason,
    TransitionRejected,
    UnavailableOutcome,
)
from sink.journal.postgres.adapter import (
    CAS_AXES_SQL,
    COUNT_OBSERVATION_SQL,
    INSERT_OBSERVATION_SQL,
    SELECT_ATTEMPTS_SQL,
    SELECT_OPERATION_SQL,
    SELECT_RECEIPT_SQL,
)
from sink.journal.postgres.admission import SELECT_PARENT_SQL
from sink.journal.postgres.base import ACQUIRE_LEASE_SQL, REQUIRE_LEASE_SQL, lease_of
from sink.journal.postgres.connection import PIN_DURABLE_SQL
from sink.journal.postgres.rows import cas_axes_params, operation_of
from sink.journal.postgres.schema import validate_schema_name
from sink.journal.postgres.submit import attempt_of
from sink.journal.records import (
    Attempt,
    Lease,
    LeaseKind,
    LeaseRequest,
    Observation,
    OperationRow,
    Receipt,
    TransitionRequest,
)
from sink.journal.transition_policy import (
    check_revision,
    lease_subject,
    require_lease_owner,
    required_leases,
    resolve_transition,
)

Cursor = psycopg.AsyncCursor[dict[str, Any]]
_LOST = (psycopg.OperationalError, psycopg.InterfaceError)


class AsyncPostgresJournal:
    def __init__(self, conn: psycopg.AsyncConnection[Any], contract: DesignContract, durability: Durability) -> None:
        self._conn = conn
        self._contract = contract
        self._durability = durability
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, dsn: str, *, schema: str, contract: DesignContract,
                   durability: Durability = Durability.DURABLE, connect_timeout_s: float = 10.0,
                   zero_rpo: bool = False) -> AsyncPostgresJournal:
        if zero_rpo:
            raise JournalConfigurationError("a zero-RPO journal is observed by the synchronous adapter only")
        validate_schema_name(schema)
        try:
            conn = await psycopg.AsyncConnection.connect(
                dsn, autocommit=True, connect_timeout=max(1, int(connect_timeout_s)),
                options=f"-c search_path={schema},public")
        except _LOST as exc:
            raise JournalUnavailable(f"journal database unreachable: {type(exc).__name__}") from None
        return cls(conn, contract, Durability(durability))

    # ----- plumbing ----------------------------------------------------------------------------
    @asynccontextmanager
    async def _cursor(self, *, write: bool) -> AsyncIterator[Cursor]:
        async with self._lock:
            committing = False
            try:
                if not write:
                    async with self._conn.cursor(row_factory=dict_row) as cur:
                        yield cur
                    return
                async with self._conn.transaction(), self._conn.cursor(row_factory=dict_row) as cur:
                    yield cur
                    committing = True
            except _LOST as exc:
                outcome = UnavailableOutcome.OUTCOME_UNKNOWN if committing else UnavailableOutcome.NOT_SENT
                raise JournalUnavailable(f"journal connection lost ({type(exc).__name__})", outcome=outcome) from None

    async def aclose(self) -> None:
        await self._conn.close()

    # ----- reads -------------------------------------------------------------------------------
    async def now(self) -> datetime:
        async with self._cursor(write=False) as cur:
            await cur.execute("SELECT now() AS now")
            row = await cur.fetchone()
        assert row is not None
        value = row["now"]
        assert isinstance(value, datetime)
        return value

    @staticmethod
    async def _operation(cur: Cursor, operation_id: str, lock: str = "") -> OperationRow | None:
        await cur.execute(f"{SELECT_OPERATION_SQL} {lock}", (operation_id,))
        row = await cur.fetchone()
        return None if row is None else operation_of(row)

    async def get_operation(self, operation_id: str) -> OperationRow | None:
        async with self._cursor(write=False) as cur:
            return await self._operation(cur, operation_id)

    async def get_receipt(self, operation_id: str) -> Receipt | None:
        async with self._cursor(write=False) as cur:
            await cur.execute(SELECT_RECEIPT_SQL, (operation_id,))
            row = await cur.fetchone()
        return None if row is None else Receipt(row["receipt_id"], row["receipt_digest"])

    async def latest_attempt(self, operation_id: str) -> Attempt | None:
        async with self._cursor(write=False) as cur:
            await cur.execute(SELECT_ATTEMPTS_SQL, (operation_id,))
            rows = await cur.fetchall()
        return attempt_of(rows[-1]) if rows else None

    async def plan_ref(self, operation_id: str) -> str | None:
        async with self._cursor(write=False) as cur:
            row = await self._operation(cur, operation_id)
            if row is None:
                return None
            await cur.execute(SELECT_PARENT_SQL, (row.parent_id,))
            parent = await cur.fetchone()
        return None if parent is None else str(parent["plan_ref"])

    # ----- writes ------------------------------------------------------------------------------
    async def acquire_lease(self, request: LeaseRequest) -> Lease:
        async with self._cursor(write=True) as cur:
            await cur.execute(ACQUIRE_LEASE_SQL, {"kind": request.kind.value, "subject": request.subject_id,
                                                  "owner": request.owner, "ttl": request.ttl})
            row = await cur.fetchone()
        if row is None:
            raise LeaseUnavailable(RejectionReason.LEASE_HELD_BY_OTHER,
                                   f"{request.kind.value} lease on {request.subject_id} is held by another owner")
        return lease_of(row)

    @staticmethod
    async def _require_lease(cur: Cursor, kind: LeaseKind, subject_id: str, owner: str, *,
                             rejection: type[JournalRejection] = JournalRejection) -> None:
        await cur.execute(REQUIRE_LEASE_SQL, (kind.value, subject_id, owner))
        if await cur.fetchone() is None:
            raise rejection(RejectionReason.LEASE_NOT_HELD,
                            f"{kind.value} lease on {subject_id} is not held by the caller")

    async def record_observation(self, operation_id: str, *, observation_ordinal: int,
                                 acknowledgement_state: AcknowledgementState, evidence_digest: str,
                                 lease_owner: str) -> Observation:
        require_digest(evidence_digest, "evidence_digest")
        async with self._cursor(write=True) as cur:
            row = await self._operation(cur, operation_id, "FOR UPDATE")
            if row is None:
                raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {operation_id}")
            await self._require_lease(cur, LeaseKind.OBSERVATION, operation_id, lease_owner)
            if observation_ordinal != row.observation_count + 1:
                raise JournalRejection(
                    RejectionReason.OBSERVATION_ORDINAL_NOT_NEXT,
                    f"observation ordinal must be {row.observation_count + 1}, got {observation_ordinal}")
            await cur.execute(INSERT_OBSERVATION_SQL,
                              (operation_id, observation_ordinal, acknowledgement_state.value, evidence_digest))
            observed = await cur.fetchone()
            assert observed is not None
            await cur.execute(COUNT_OBSERVATION_SQL, (None, operation_id))  # no next-check: due at once
        return Observation(operation_id, observation_ordinal, acknowledgement_state, evidence_digest,
                           observed["observed_at"])

    async def transition(self, request: TransitionRequest) -> OperationRow:
        if request.evidence_digest is not None:
            require_digest(request.evidence_digest, "evidence_digest")
        if request.receipt is not None or request.actor.reconciliation_id is not None:
            raise TransitionRejected(RejectionReason.INVALID_REQUEST, "an observer stores no receipt or reconciliation")
        async with self._cursor(write=True) as cur:
            if self._durability is Durability.DURABLE:
                await cur.execute(PIN_DURABLE_SQL, (REQUIRED_SYNCHRONOUS_COMMIT,))
                pinned = await cur.fetchone()
                assert pinned is not None
                check_postgres_settings(str(pinned["fsync"]), str(pinned["synchronous_commit"]),
                                        transaction="transition")
            row = await self._operation(cur, request.operation_id, "FOR UPDATE")
            if row is None:
                raise TransitionRejected(RejectionReason.UNKNOWN_OPERATION, f"no operation {request.operation_id}")
            check_revision(row.operation_id, row.revision, request.expected_revision)
            chosen = resolve_transition(self._contract, row.axes, request.transition_id, request.actor)
            require_observer_transition(row.axes, chosen)
            for kind in required_leases(chosen):
                owner = require_lease_owner(chosen, kind, request.lease_owner)
                await self._require_lease(cur, kind, lease_subject(kind, row.operation_id, row.parent_id), owner,
                                          rejection=TransitionRejected)
            await cur.execute(CAS_AXES_SQL, cas_axes_params(
                row, chosen.target, transition_id=chosen.id, actor_kind=request.actor.kind.value,
                actor_id=request.actor.actor_id, reconciliation_id=None, evidence_digest=request.evidence_digest,
                decision=request.decision, facts=request.facts, next_check_after=request.next_check_after))
            if await cur.fetchone() is None:
                raise TransitionRejected(RejectionReason.STALE_REVISION, f"operation {row.operation_id} changed")
            updated = await self._operation(cur, row.operation_id)
        assert updated is not None
        return updated
