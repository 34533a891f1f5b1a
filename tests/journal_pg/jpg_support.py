"""Builders and process workers of the PostgreSQL journal tests (spawned processes import this)."""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

import psycopg

from sink.contracts.errors import DeliveryError
from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore, MarkerStore, MayAttemptMarker
from sink.journal.port import DeliveryJournalPort, JournalRejection
from sink.journal.postgres import open_postgres_journal
from sink.journal.records import (
    ChildDescriptor,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    MutationKind,
    OperationRow,
    ParentAdmission,
    ScopeRange,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
)

TESTS_ONLY = Durability.NON_DURABLE_TESTS_ONLY
"""For the lossy session server (tests/conftest.py): tests not about durability only."""
NAMESPACE = "ns:pg-tests:dev:1"
CAPACITY = "receiver-jobs"
BASE = datetime(2026, 8, 1, tzinfo=UTC)


def new_schema() -> str:
    return "jpg_" + uuid.uuid4().hex[:12]


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def digest(label: str) -> str:
    return "sha256:" + hashlib.sha256(label.encode()).hexdigest()


def day(n: int) -> str:
    return (BASE + timedelta(days=n - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def generation(n: int) -> GenerationKey:
    return GenerationKey((BASE + timedelta(days=60 + n)).strftime("%Y-%m-%dT%H:%M:%SZ"), 0)


def child(ordinal: int, start: str, end: str, *, key: str, domain: str = "domain-a",
          gen: GenerationKey | None = None) -> ChildDescriptor:
    return ChildDescriptor(
        ordinal=ordinal, scope=ScopeRange(start, end), delivery_key=key,
        mutation_intent_digest=digest(f"intent:{key}"), payload_ref=f"payload/{key}",
        payload_digest=digest(f"payload:{key}"), generation=gen or generation(0), frontier_order=ordinal,
        coverage_proof_digest=digest(f"coverage:{key}"), effect_conflict_domain=domain,
        mutation_kind=MutationKind.PARTITION_REPLACE,
    )


def admission(parent_key: str, children: list[ChildDescriptor]) -> ParentAdmission:
    return ParentAdmission(
        operation_namespace=NAMESPACE, parent_delivery_key=parent_key,
        parent_plan_digest=digest(f"plan:{parent_key}"), plan_ref=f"plans/{parent_key}",
        profile_contract_digest=digest("profile"), children=tuple(children),
    )


def daily_parent(parent_key: str, days: int, *, domain: str = "domain-a",
                 gen: GenerationKey | None = None, first_day: int = 1) -> ParentAdmission:
    """`days` children of one day each, starting at `first_day` (hours suffice for > 31 children)."""
    return admission(parent_key, [
        child(i, _hour(first_day, i), _hour(first_day, i + 1), key=f"{parent_key}.c{i}", domain=domain, gen=gen)
        for i in range(days)
    ])


def _hour(first_day: int, offset: int) -> str:
    return (BASE + timedelta(days=first_day - 1, hours=offset)).strftime("%Y-%m-%dT%H:%M:%SZ")


def seal(journal: DeliveryJournalPort, op: OperationRow) -> OperationRow:
    return journal.transition(TransitionRequest(op.operation_id, op.revision, "plan_sealed"))


def publish_marker(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow) -> str:
    marker = MayAttemptMarker(
        operation_namespace=op.operation_namespace, operation_id=op.operation_id, parent_id=op.parent_id,
        delivery_key=op.delivery_key, attempt_ordinal=op.attempt_count + 1, generation=op.descriptor.generation,
        expected_revision=op.revision, journal_epoch=journal.gate_status().journal_epoch,
        mutation_intent_digest=op.descriptor.mutation_intent_digest,
        created_at_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    return markers.create_if_absent(marker).digest


def submit_request(op: OperationRow, marker_digest: str, owner: str) -> SubmitRequest:
    return SubmitRequest(operation_id=op.operation_id, expected_revision=op.revision,
                         attempt_ordinal=op.attempt_count + 1, marker_digest=marker_digest,
                         lease_owner=owner, capacity_scope=CAPACITY)


def submit(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow, owner: str) -> SubmitGrant:
    journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, owner, timedelta(seconds=60)))
    return journal.reserve_and_mark_submitting(submit_request(op, publish_marker(journal, markers, op), owner))


def outcome_of(exc: BaseException) -> str:
    if isinstance(exc, DeliveryError):
        return exc.code.value
    if isinstance(exc, JournalRejection):
        return exc.reason.value
    return f"unexpected:{type(exc).__name__}:{exc}"


# ----- racing workers (multiprocessing spawn) ------------------------------------------------------
def race_worker(worker_id: int, dsn: str, schema: str, marker_root: str, barrier: Barrier,
                tasks: Any, results: Any) -> None:
    """Run tasks from this worker's own `tasks` queue in lockstep with the other workers (the
    barrier releases all of them at once); report one outcome per task."""
    journal = open_postgres_journal(dsn, durability=TESTS_ONLY, schema=schema,
                                    markers=FileMarkerStore(Path(marker_root)), max_connections=1)
    markers = FileMarkerStore(Path(marker_root))
    try:
        while True:
            task = tasks.get(timeout=120)
            if task is None:
                return
            kind, payload = task
            barrier.wait(timeout=60)
            try:
                outcome = _run_race_task(journal, markers, worker_id, kind, payload)
            except Exception as exc:  # every outcome is reported and asserted by the test
                outcome = outcome_of(exc)
            results.put((worker_id, kind, outcome))
    finally:
        journal.close()


def _run_race_task(journal: DeliveryJournalPort, markers: MarkerStore, worker_id: int, kind: str,
                   payload: Any) -> str:
    if kind == "admit":
        admitted = journal.admit_parent(payload)
        return "created" if admitted.created else "resumed"
    if kind == "submit_same":
        journal.reserve_and_mark_submitting(payload)
        return "won"
    if kind == "admit_and_submit":
        admitted = journal.admit_parent(payload)
        op = seal(journal, admitted.children[0])
        submit(journal, markers, op, owner=f"worker-{worker_id}")
        return "won"
    raise ValueError(kind)


# ----- a process killed inside a transaction ------------------------------------------------------
def pausing_worker(dsn: str, schema: str, marker_root: str, point: str, action: str, payload: Any,
                   paused: Event) -> None:
    """Run `action`; at fault point `point` signal `paused` and wait to be SIGKILLed."""

    def hook(reached: str) -> None:
        if reached == point:
            paused.set()
            time.sleep(300)

    journal = open_postgres_journal(dsn, durability=TESTS_ONLY, schema=schema,
                                    markers=FileMarkerStore(Path(marker_root)), max_connections=1, fault_hook=hook)
    if action == "admit":
        journal.admit_parent(payload)
    elif action == "submit":
        journal.reserve_and_mark_submitting(payload)
    elif action == "transition":
        journal.transition(payload)
    else:
        raise ValueError(action)
    os._exit(3)  # reaching here means the fault point was never hit
