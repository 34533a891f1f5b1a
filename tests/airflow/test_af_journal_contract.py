"""Contract: the trigger's asynchronous journal clients leave exactly the rows the synchronous
adapters leave, for the same observation sequence, on SQLite and on PostgreSQL, and the rows of
the two backends agree with each other.

Each case builds two identical journals holding one WAITING async child, replays the same
sequence (lease, observations, transitions, and the refusals a duplicate observer meets) through
the synchronous adapter on one and the asynchronous client on the other, and compares every row
the sequence can touch, timestamps aside.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql
import pytest

_JOURNAL_TESTS = str(Path(__file__).resolve().parents[1] / "journal")
if _JOURNAL_TESTS not in sys.path:
    sys.path.insert(0, _JOURNAL_TESTS)

from jn_builders import CAPACITY, digest, seal, step, submit, week_parent  # noqa: E402

from sink.airflow.journal_async import AsyncObservationJournal, open_async_journal  # noqa: E402
from sink.contracts.state import AcknowledgementState, ExecutionState  # noqa: E402
from sink.design.query import load_design_contract  # noqa: E402
from sink.journal.durability import Durability  # noqa: E402
from sink.journal.markers import FileMarkerStore  # noqa: E402
from sink.journal.port import (  # noqa: E402
    DeliveryJournalPort,
    JournalDurabilityNotProven,
    JournalRejection,
    RejectionReason,
    TransitionRejected,
)
from sink.journal.postgres import open_postgres_journal  # noqa: E402
from sink.journal.records import LeaseKind, LeaseRequest, OperationRow, Receipt, TransitionRequest  # noqa: E402
from sink.journal.sqlite.adapter import open_sqlite_journal  # noqa: E402

TESTS_ONLY = Durability.NON_DURABLE_TESTS_ONLY
"""The session server runs lossy for speed (tests/conftest.py); durability has its own test here."""

CONTRACT = load_design_contract()
OBSERVER, OTHER = "triggerer:host:1:aaaa", "triggerer:host:2:bbbb"
ACK = AcknowledgementState


@dataclass
class Twin:
    """One journal: its synchronous adapter, how to open its async client, how to dump its rows."""

    sync: DeliveryJournalPort
    open_async: Callable[[], Any]
    dump: Callable[[], dict[str, list[tuple[Any, ...]]]]
    operation: OperationRow


def _waiting(journal: DeliveryJournalPort, markers: FileMarkerStore) -> OperationRow:
    journal.configure_capacity(CAPACITY, 4)
    op = seal(journal, journal.admit_parent(week_parent("contract")).children[0])
    submitting = submit(journal, markers, op).operation
    accepted = step(journal, submitting, "receipt_accepted", receipt=Receipt("job-1", digest("receipt-1")))
    return step(journal, accepted, "continuation_pending")


_QUERIES = {
    "operations": "SELECT operation_id, execution_state, remote_effect, acknowledgement_state, verification_state, "
                  "checkpoint_state, revision, attempt_count, observation_count FROM operations ORDER BY operation_id",
    "observations": "SELECT operation_id, observation_ordinal, acknowledgement_state, evidence_digest "
                    "FROM observations ORDER BY operation_id, observation_ordinal",
    "transition_log": "SELECT operation_id, revision, transition_id, actor_kind, actor_id, reconciliation_id, "
                      "evidence_digest FROM transition_log ORDER BY operation_id, revision",
    "leases": "SELECT {kind}, subject_id, owner, fencing_token FROM leases ORDER BY {kind}, subject_id",
    "receipts": "SELECT operation_id, receipt_id, receipt_digest FROM receipts ORDER BY operation_id",
}


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psycopg.sql.Identifier(schema)))


def _sqlite_twin(path: Path) -> Iterator[Twin]:
    markers_dir = path.parent / f"{path.stem}-markers"
    markers = FileMarkerStore(markers_dir)
    journal = open_sqlite_journal(path, markers=markers)

    def dump() -> dict[str, list[tuple[Any, ...]]]:
        with sqlite3.connect(path) as conn:
            return {name: [tuple(r) for r in conn.execute(query.format(kind="kind"))]
                    for name, query in _QUERIES.items()}

    try:
        op = _waiting(journal, markers)
        yield Twin(journal, lambda: open_async_journal(f"sqlite:{path}", pg_schema="unused",
                                                       markers_dir=str(markers_dir), contract=CONTRACT), dump, op)
    finally:
        journal.close()


def _postgres_twin(dsn: str, tmp: Path) -> Iterator[Twin]:
    schema = "af_" + uuid.uuid4().hex[:12]
    markers = FileMarkerStore(tmp / f"{schema}-markers")
    try:
        journal = open_postgres_journal(dsn, durability=TESTS_ONLY, schema=schema, markers=markers)

        def dump() -> dict[str, list[tuple[Any, ...]]]:
            with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
                return {name: [tuple(r) for r in conn.execute(query.format(kind="lease_kind").encode())]
                        for name, query in _QUERIES.items()}

        try:
            op = _waiting(journal, markers)
            yield Twin(journal, lambda: open_async_journal(dsn, pg_schema=schema, markers_dir=str(tmp),
                                                           contract=CONTRACT, durability=TESTS_ONLY), dump, op)
        finally:
            journal.close()
    finally:
        drop_schema(dsn, schema)


@pytest.fixture(params=["sqlite", "postgres"])
def twins(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Twin, Twin]]:
    if request.param == "sqlite":
        first, second = _sqlite_twin(tmp_path / "a.sqlite3"), _sqlite_twin(tmp_path / "b.sqlite3")
    else:
        dsn = request.getfixturevalue("pg_dsn")
        first, second = _postgres_twin(dsn, tmp_path), _postgres_twin(dsn, tmp_path)
    a, b = next(first), next(second)
    try:
        yield a, b
    finally:
        for generator in (first, second):
            generator.close()


class SyncClient:
    """The synchronous adapter behind the async client's interface (the reference side)."""

    def __init__(self, journal: DeliveryJournalPort) -> None:
        self._journal = journal

    async def get_operation(self, operation_id: str) -> OperationRow | None:
        return self._journal.get_operation(operation_id)

    async def acquire_lease(self, request: LeaseRequest) -> object:
        return self._journal.acquire_lease(request)

    async def record_observation(self, operation_id: str, **kwargs: Any) -> object:
        return self._journal.record_observation(operation_id, **kwargs)

    async def transition(self, request: TransitionRequest) -> OperationRow:
        return self._journal.transition(request)


async def _sequence(client: Any, operation_id: str) -> list[str]:
    """The observation sequence of a trigger and a duplicate of it; returns what was refused."""
    refused: list[str] = []

    async def attempt(label: str, call: Any) -> Any:
        try:
            return await call
        except JournalRejection as exc:
            refused.append(f"{label}:{exc.reason.value}")
            return None

    ttl = timedelta(seconds=60)
    await client.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, operation_id, OBSERVER, ttl))
    await attempt("duplicate-lease", client.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, operation_id, OTHER,
                                                                       ttl)))
    row = await client.get_operation(operation_id)
    await client.record_observation(operation_id, observation_ordinal=row.observation_count + 1,
                                    acknowledgement_state=ACK.RUNNING, evidence_digest=digest("poll-1"),
                                    lease_owner=OBSERVER)
    row = await client.get_operation(operation_id)
    row = await client.transition(TransitionRequest(operation_id, row.revision, "poll_observed_running",
                                                    evidence_digest=digest("poll-1"), lease_owner=OBSERVER))
    # A duplicate observer without the lease, or with a stale ordinal or revision, changes nothing.
    await attempt("no-lease-observation", client.record_observation(
        operation_id, observation_ordinal=row.observation_count + 1, acknowledgement_state=ACK.RUNNING,
        evidence_digest=digest("dup"), lease_owner=OTHER))
    await attempt("stale-ordinal", client.record_observation(
        operation_id, observation_ordinal=row.observation_count, acknowledgement_state=ACK.RUNNING,
        evidence_digest=digest("dup"), lease_owner=OBSERVER))
    await attempt("stale-revision", client.transition(TransitionRequest(
        operation_id, row.revision - 1, "poll_observed_succeeded", evidence_digest=digest("dup"),
        lease_owner=OBSERVER)))
    await attempt("no-lease-transition", client.transition(TransitionRequest(
        operation_id, row.revision, "poll_observed_succeeded", evidence_digest=digest("dup"), lease_owner=OTHER)))
    await client.record_observation(operation_id, observation_ordinal=row.observation_count + 1,
                                    acknowledgement_state=ACK.SUCCEEDED, evidence_digest=digest("poll-2"),
                                    lease_owner=OBSERVER)
    row = await client.get_operation(operation_id)
    await client.transition(TransitionRequest(operation_id, row.revision, "poll_observed_succeeded",
                                              evidence_digest=digest("poll-2"), lease_owner=OBSERVER))
    return refused


def _rows(twin: Twin) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the sequence can touch. The transition log before it is left out: the submit's
    evidence is the MAY_ATTEMPT marker digest, which binds its creation second."""
    rows = twin.dump()
    rows["transition_log"] = [r for r in rows["transition_log"] if r[1] > twin.operation.revision]
    return rows


async def _through_async(twin: Twin, body: Callable[[AsyncObservationJournal], Any]) -> Any:
    client = await twin.open_async()
    try:
        return await body(client)
    finally:
        await client.aclose()


def test_async_client_leaves_the_rows_of_the_sync_adapter(twins: tuple[Twin, Twin]) -> None:
    reference, candidate = twins
    assert _rows(reference) == _rows(candidate)  # the same starting rows
    expected_refusals = asyncio.run(_sequence(SyncClient(reference.sync), reference.operation.operation_id))
    refusals = asyncio.run(_through_async(candidate, lambda c: _sequence(c, candidate.operation.operation_id)))
    assert refusals == expected_refusals == [
        "duplicate-lease:lease_held_by_other", "no-lease-observation:lease_not_held",
        "stale-ordinal:observation_ordinal_not_next", "stale-revision:stale_revision",
        "no-lease-transition:lease_not_held"]
    rows = _rows(candidate)
    assert rows == _rows(reference)
    assert [r[2] for r in rows["transition_log"]] == ["poll_observed_running", "poll_observed_succeeded"]
    (operation,) = [r for r in rows["operations"] if r[0] == candidate.operation.operation_id]
    assert operation[1] == ExecutionState.VERIFYING.value and operation[3] == ACK.SUCCEEDED.value
    assert [o[2] for o in rows["observations"]] == [ACK.RUNNING.value, ACK.SUCCEEDED.value]


def test_both_backends_leave_the_same_rows(pg_dsn: str, tmp_path: Path) -> None:
    dumps = []
    for make in (lambda: _sqlite_twin(tmp_path / "s.sqlite3"), lambda: _postgres_twin(pg_dsn, tmp_path)):
        generator = make()
        twin = next(generator)
        try:
            asyncio.run(_through_async(twin, lambda c, t=twin: _sequence(c, t.operation.operation_id)))
            dumps.append(_rows(twin))
        finally:
            generator.close()
    assert dumps[0] == dumps[1]


def test_an_observer_never_releases_capacity_or_decides_an_effect(twins: tuple[Twin, Twin]) -> None:
    """After the terminal observation only the worker's verifier may move the child (it decides
    the effect and releases the remote-job slot): the async client refuses, the row stays."""
    _, candidate = twins
    op_id = candidate.operation.operation_id

    async def body(client: AsyncObservationJournal) -> None:
        await _sequence(client, op_id)
        row = await client.get_operation(op_id)
        assert row is not None and row.axes.execution_state is ExecutionState.VERIFYING
        for transition in CONTRACT.transitions_from(row.axes):
            with pytest.raises(TransitionRejected) as caught:
                await client.transition(TransitionRequest(op_id, row.revision, transition.id,
                                                          evidence_digest=digest("v"), lease_owner=OBSERVER))
            assert caught.value.reason in (RejectionReason.ILLEGAL_TRANSITION, RejectionReason.OPERATOR_REQUIRED,
                                           RejectionReason.LEASE_NOT_HELD)

    asyncio.run(_through_async(candidate, body))
    assert [r[1] for r in candidate.dump()["operations"] if r[0] == op_id] == [ExecutionState.VERIFYING.value]


def test_durable_async_client_refuses_a_lossy_server(pg_dsn: str, tmp_path: Path) -> None:
    """The session server runs with fsync off: a durable client refuses the axes CAS there, as the
    synchronous adapter refuses to open, and writes nothing."""
    generator = _postgres_twin(pg_dsn, tmp_path)
    twin = next(generator)
    try:
        before = twin.dump()

        async def body() -> None:
            client = await open_async_journal(pg_dsn, pg_schema=_schema_of(twin), markers_dir=str(tmp_path),
                                              contract=CONTRACT, durability=Durability.DURABLE)
            try:
                await client.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, twin.operation.operation_id,
                                                        OBSERVER, timedelta(seconds=60)))
                with pytest.raises(JournalDurabilityNotProven):
                    await client.transition(TransitionRequest(
                        twin.operation.operation_id, twin.operation.revision, "poll_observed_running",
                        evidence_digest=digest("p"), lease_owner=OBSERVER))
            finally:
                await client.aclose()

        asyncio.run(body())
        after = twin.dump()
        assert after["operations"] == before["operations"] and after["transition_log"] == before["transition_log"]
    finally:
        generator.close()


def _schema_of(twin: Twin) -> str:
    return str(twin.sync.schema)  # type: ignore[attr-defined]
