"""The PostgreSQL server crashes under concurrent critical submits; no ordinal is granted twice.

Each round lets worker processes loop critical submits for a random 0.2-0.9 s, then crashes the
server one way (SIGKILL of every server process, SIGKILL of one backend, immediate shutdown) and
restarts it while the workers go on; after the last crash the workers themselves are SIGKILLed a
random moment later (so some operations stay SUBMITTING), and the invariants are read through the
port (``jpg_crash_support.check_invariants``). One cluster (tests/journal_pg/jpg_durable_cluster.py), two
configurations, in this order:

* durable (fsync on; server default synchronous_commit off, which the journal's per-transaction
  pin overrides): every reported grant survives and the invariants hold;
* lossy (fsync off, synchronous_commit off, set by ALTER SYSTEM + reload): the durable journal
  opened before refuses its next grant and a new durable journal refuses to open; in the
  tests-only mode grants may be lost, but a lost grant is reported as an orphan with possible
  remote effect and its ordinal is never granted again.

Bounded: ``RESTPROOF_CRASH_ROUNDS`` rounds per configuration (default 3, one per crash mode).
Set it higher for a long run (e.g. 30); the seed is printed with the counts.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jpg_crash_support import check_invariants, crash, crash_worker, set_server_setting
from jpg_durable_cluster import durable_cluster_fixture  # noqa: F401 - provides `durable_cluster`
from jpg_support import CAPACITY, daily_parent, seal

from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort, JournalDurabilityNotProven
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.cluster import Cluster

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

WORKERS = 3
OPS_PER_WORKER = 3
MODES = ("sigkill_all", "sigkill_backend", "immediate")
ROUNDS = int(os.environ.get("RESTPROOF_CRASH_ROUNDS", "3"))
LOSSY = {"fsync": ("off", "on"), "synchronous_commit": ("off", "off"), "full_page_writes": ("off", "on")}
"""name: (lossy value, value after RESET: the cluster's own configuration)."""


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
        deadline = time.monotonic() + 30
        while not any(e[0] == "grant" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
            _drain(results, events)
        for round_no in range(ROUNDS):
            time.sleep(rng.uniform(0.2, 0.9))
            crash(cluster, MODES[round_no % len(MODES)])
            _drain(results, events)
        time.sleep(rng.uniform(0.3, 1.0))  # the workers reconnect and go on after the last crash
    finally:
        stop.set()
        for proc in procs:  # the workers die too, at a random point of their loop
            proc.kill()
            proc.join(timeout=30)
        _drain(results, events)
    crashed = [e[2] for e in events if e[0] == "crashed"]
    assert not crashed, crashed
    return events


def _crash_run(cluster: Cluster, journal: DeliveryJournalPort, schema: str, markers: FileMarkerStore,
               durability: Durability, rng: random.Random) -> dict[str, int]:
    journal.configure_capacity(CAPACITY, WORKERS * OPS_PER_WORKER)
    children = journal.admit_parent(daily_parent("crash", WORKERS * OPS_PER_WORKER)).children
    op_ids = [seal(journal, child).operation_id for child in children]
    events = _run_rounds(cluster, schema, markers.root, durability, op_ids, rng)
    grants = [(e[1], e[2], e[3]) for e in events if e[0] == "grant"]
    counts = check_invariants(journal, markers, op_ids, grants, CAPACITY)
    counts["unavailable"] = sum(1 for e in events if e[0] == "unavailable")
    return counts


def test_jpg_server_crashes_never_grant_an_ordinal_twice(durable_cluster: Cluster, tmp_path: Path) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    cluster = durable_cluster
    durable_schema, lossy_schema = ("crash_" + uuid.uuid4().hex[:10] for _ in range(2))
    markers = FileMarkerStore(tmp_path / "markers-durable")
    lossy_markers = FileMarkerStore(tmp_path / "markers-lossy")  # same operation ids: own marker store
    durable = open_postgres_journal(cluster.dsn(), schema=durable_schema, markers=markers, connect_timeout_s=5)
    try:
        durable_counts = _crash_run(cluster, durable, durable_schema, markers, Durability.DURABLE, rng)
        print(f"crash test durable seed={seed} rounds={ROUNDS}: {durable_counts}")
        assert durable_counts["grants"] > 0
        assert durable_counts["lost_grants"] == 0, f"a durable server lost acknowledged grants (seed {seed})"

        for name, (lossy_value, _) in LOSSY.items():
            set_server_setting(cluster, name, lossy_value)
        try:
            probe = durable.admit_parent(daily_parent("probe", 1)).children  # admission is critical too
        except JournalDurabilityNotProven:
            probe = ()
        assert probe == (), "a durable journal committed a critical transaction on fsync=off"
        with pytest.raises(JournalDurabilityNotProven):
            open_postgres_journal(cluster.dsn(), schema=lossy_schema, markers=lossy_markers)
        lossy = open_postgres_journal(cluster.dsn(), schema=lossy_schema, markers=lossy_markers,
                                      durability=Durability.NON_DURABLE_TESTS_ONLY, connect_timeout_s=5)
        try:
            lossy_counts = _crash_run(cluster, lossy, lossy_schema, lossy_markers,
                                      Durability.NON_DURABLE_TESTS_ONLY, rng)
        finally:
            lossy.close()
        print(f"crash test lossy seed={seed} rounds={ROUNDS}: {lossy_counts}")
        assert lossy_counts["grants"] > 0
    finally:
        for name, (_, configured) in LOSSY.items():
            set_server_setting(cluster, name, None, expected=configured)
        durable.close()
