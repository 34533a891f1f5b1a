"""Eight processes race on the PostgreSQL journal: exactly one winner every round.

Workers are spawned processes with their own connections; a barrier releases them together so
they reach the same rows at the same moment. Rounds are bounded in count and in wall time.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from jpg_support import (
    TESTS_ONLY,
    admission,
    child,
    daily_parent,
    day,
    drop_schema,
    generation,
    new_schema,
    publish_marker,
    race_worker,
    seal,
    submit_request,
)

from sink.contracts.errors import ErrorCode
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, RejectionReason
from sink.journal.postgres import open_postgres_journal
from sink.journal.records import LeaseKind, LeaseRequest

WORKERS = 8
ROUNDS = 12
SCENARIO_BUDGET_S = 15.0

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(180)]


@dataclass
class Race:
    journal: DeliveryJournalPort
    markers: FileMarkerStore
    dsn: str
    schema: str
    queues: list[Any]
    results: Any

    def round(self, kind: str, payloads: list[Any]) -> list[str]:
        for queue, payload in zip(self.queues, payloads, strict=True):
            queue.put((kind, payload))
        outcomes = [self.results.get(timeout=90) for _ in self.queues]
        return [outcome for _, _, outcome in outcomes]

    def scalar(self, query: str, *params: object) -> Any:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.schema}", public')
            row = conn.execute(query, params).fetchone()
            assert row is not None
            return row[0]


@pytest.fixture(scope="module")
def race(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Race]:
    schema = new_schema()
    marker_root = tmp_path_factory.mktemp("race-markers")
    markers = FileMarkerStore(marker_root)
    journal = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers)
    journal.configure_capacity("receiver-jobs", 10_000)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    queues = [ctx.Queue() for _ in range(WORKERS)]
    results = ctx.Queue()
    procs = [ctx.Process(target=race_worker, args=(i, pg_dsn, schema, str(marker_root), barrier, queues[i], results),
                         daemon=True) for i in range(WORKERS)]
    for proc in procs:
        proc.start()
    try:
        yield Race(journal, markers, pg_dsn, schema, queues, results)
    finally:
        for queue in queues:
            queue.put(None)
        for proc in procs:
            proc.join(timeout=20)
            if proc.is_alive():
                proc.kill()
        journal.close()
        drop_schema(pg_dsn, schema)


def _bounded_rounds() -> Iterator[int]:
    started = time.monotonic()
    for index in range(ROUNDS):
        if index >= 3 and time.monotonic() - started > SCENARIO_BUDGET_S:
            return
        yield index


def test_jpg_eight_processes_admit_the_same_parent_exactly_one_creates(race: Race) -> None:
    for index in _bounded_rounds():
        parent = daily_parent(f"race-admit-{index}", 24, domain=f"admit-domain-{index}")
        outcomes = race.round("admit", [parent] * WORKERS)
        assert Counter(outcomes) == {"created": 1, "resumed": WORKERS - 1}, outcomes
        assert race.scalar("SELECT count(*) FROM operations WHERE parent_id = %s", parent.parent_id) == 24


def test_jpg_eight_processes_cas_the_same_child_to_submitting_exactly_one_wins(race: Race) -> None:
    owner = "supervisor-replayed"  # the same task replayed 8 times holds the same lease identity
    for index in _bounded_rounds():
        admitted = race.journal.admit_parent(daily_parent(f"race-cas-{index}", 1, domain=f"cas-domain-{index}"))
        op = seal(race.journal, admitted.children[0])
        race.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, owner))
        request = submit_request(op, publish_marker(race.journal, race.markers, op), owner)
        outcomes = race.round("submit_same", [request] * WORKERS)
        assert outcomes.count("won") == 1, outcomes
        assert set(outcomes) - {"won"} <= {RejectionReason.STALE_REVISION.value}, outcomes
        stored = race.journal.get_operation(op.operation_id)
        assert stored is not None and stored.axes.execution_state.value == "SUBMITTING"
        assert stored.revision == op.revision + 1
        assert len(race.journal.list_attempts(op.operation_id)) == 1
        assert race.scalar("SELECT count(*) FROM capacity_slots WHERE operation_id = %s", op.operation_id) == 1


def test_jpg_eight_processes_admit_and_submit_overlapping_generations_exactly_one_wins(race: Race) -> None:
    refusals = {ErrorCode.STALE_GENERATION.value, ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT.value}
    seen: Counter[str] = Counter()
    for index in _bounded_rounds():
        domain = f"overlap-domain-{index}"
        # Every worker's child overlaps every other's (staggered by one hour); generations differ.
        payloads = [
            admission(f"race-gen-{index}-{w}", [child(0, _shift(w), _shift(w + 48), key=f"race-gen-{index}-{w}.c0",
                                                      domain=domain, gen=generation(w * 7 % WORKERS))])
            for w in range(WORKERS)
        ]
        outcomes = race.round("admit_and_submit", payloads)
        seen.update(outcomes)
        assert outcomes.count("won") == 1, outcomes
        assert set(outcomes) - {"won"} <= refusals, outcomes
        submitting = race.scalar(
            "SELECT count(*) FROM operations WHERE effect_conflict_domain = %s AND execution_state = 'SUBMITTING'",
            domain,
        )
        assert submitting == 1
        assert race.scalar(
            "SELECT count(*) FROM attempts a JOIN operations o USING (operation_id) "
            "WHERE o.effect_conflict_domain = %s", domain) == 1
    # Only the winner ever reached SUBMITTING; the losers stayed before it with no attempt.
    assert seen["won"] >= 3


def _shift(hours: int) -> str:
    base = datetime.strptime(day(1), "%Y-%m-%dT%H:%M:%SZ")
    return (base + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")



def test_jpg_eight_parents_race_for_one_child_key_exactly_one_admits(race: Race) -> None:
    # Different parents and different domains (no common lock row): the unique key decides.
    for index in _bounded_rounds():
        shared_key = f"race-shared-child-{index}"
        payloads = [admission(f"race-key-{index}-{w}", [child(0, day(1), day(2), key=shared_key,
                                                               domain=f"key-domain-{index}-{w}")])
                    for w in range(WORKERS)]
        outcomes = race.round("admit", payloads)
        assert Counter(outcomes) == {"created": 1, ErrorCode.INTENT_CONFLICT.value: WORKERS - 1}, outcomes
        assert race.scalar("SELECT count(*) FROM parents WHERE parent_delivery_key LIKE %s",
                           f"race-key-{index}-%") == 1
