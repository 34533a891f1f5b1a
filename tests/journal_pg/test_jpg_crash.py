"""The PostgreSQL server crashes under concurrent critical submits; no ordinal is granted twice.

Each round lets worker processes loop critical submits for a random 0.2-0.9 s, then crashes the
server one way (SIGKILL of every server process, SIGKILL of one backend, immediate shutdown),
restarts it and lets the workers go on; at the end the invariants are read through the port
(``jpg_crash_support.check_invariants``). Two server configurations:

* durable (fsync on; the journal pins synchronous_commit on in every critical transaction): every
  reported grant survives, and the invariants hold;
* lossy (fsync off, synchronous_commit off): the durable journal refuses to open at all; in the
  tests-only mode grants may be lost, but a lost grant is reported as an orphan with possible
  remote effect and its ordinal is never granted again.

Bounded: ``RESTPROOF_CRASH_ROUNDS`` rounds per configuration (default 3, one per crash mode).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jpg_crash_support import check_invariants, crash, crash_worker
from jpg_support import CAPACITY, daily_parent, seal

from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import JournalDurabilityNotProven
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.cluster import Cluster, ClusterSet

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

WORKERS = 3
OPS_PER_WORKER = 3
MODES = ("sigkill_all", "sigkill_backend", "immediate")
ROUNDS = int(os.environ.get("RESTPROOF_CRASH_ROUNDS", "3"))
SETTINGS = {
    "durable": {"fsync": "on", "synchronous_commit": "on"},
    "lossy": {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
}


@pytest.fixture
def clusters() -> Iterator[ClusterSet]:
    made = ClusterSet()
    try:
        yield made
    finally:
        made.destroy_all()


def _drain(results: Any, into: list[tuple[Any, ...]]) -> None:
    while True:
        try:
            into.append(results.get_nowait())
        except Empty:
            return


def _run_rounds(cluster: Cluster, schema: str, marker_root: Path, durability: Durability,
                op_ids: list[str], rng: random.Random) -> list[tuple[Any, ...]]:
    ctx = mp.get_context("spawn")
    stop, results = ctx.Event(), ctx.Queue()
    share = [op_ids[i::WORKERS] for i in range(WORKERS)]
    procs = [ctx.Process(target=crash_worker, args=(i, cluster.dsn(), schema, str(marker_root), durability.value,
                                                    share[i], stop, results), daemon=True)
             for i in range(WORKERS)]
    events: list[tuple[Any, ...]] = []
    for proc in procs:
        proc.start()
    try:
        deadline = time.monotonic() + 60
        while not any(e[0] == "grant" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
            _drain(results, events)
        for round_no in range(ROUNDS):
            time.sleep(rng.uniform(0.2, 0.9))
            crash(cluster, MODES[round_no % len(MODES)])
            _drain(results, events)
        time.sleep(1.0)  # the workers reconnect and go on after the last crash
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
        _drain(results, events)
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return events


@pytest.mark.parametrize("setting", ["durable", "lossy"])
def test_jpg_server_crashes_never_grant_an_ordinal_twice(clusters: ClusterSet, tmp_path: Path, setting: str) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    cluster = clusters.primary(SETTINGS[setting])
    schema = "crash_" + uuid.uuid4().hex[:10]
    markers = FileMarkerStore(tmp_path / "markers")
    if setting == "lossy":  # the durable journal refuses to grant on this server: it does not even open
        with pytest.raises(JournalDurabilityNotProven):
            open_postgres_journal(cluster.dsn(), schema=schema, markers=markers)
    durability = Durability.DURABLE if setting == "durable" else Durability.NON_DURABLE_TESTS_ONLY
    journal = open_postgres_journal(cluster.dsn(), schema=schema, markers=markers, durability=durability,
                                    connect_timeout_s=5)
    try:
        journal.configure_capacity(CAPACITY, WORKERS * OPS_PER_WORKER)
        children = journal.admit_parent(daily_parent("crash", WORKERS * OPS_PER_WORKER)).children
        op_ids = [seal(journal, child).operation_id for child in children]
        events = _run_rounds(cluster, schema, tmp_path / "markers", durability, op_ids, rng)
        grants = [(e[1], e[2], e[3]) for e in events if e[0] == "grant"]
        counts = check_invariants(journal, markers, op_ids, grants, CAPACITY)
    finally:
        journal.close()
    print(f"crash test {setting} seed={seed} rounds={ROUNDS}: {counts}, "
          f"unavailable={sum(1 for e in events if e[0] == 'unavailable')}")
    assert counts["grants"] > 0
    if setting == "durable":
        assert counts["lost_grants"] == 0, f"durable server lost acknowledged grants (seed {seed})"
