"""Journal benchmark: critical submit transactions per second and 1,000-child admission time.

Runs the same workloads on the PostgreSQL adapter (a throwaway cluster from the server
binaries, or RESTPROOF_PG_DSN) and on the SQLite adapter, with 1 and 8 worker processes, and
prints the figures side by side with the cluster settings used.

    python benchmarks/bench_journal.py            # full run
    python benchmarks/bench_journal.py --quick    # small CI smoke run

Timed: only ``reserve_and_mark_submitting`` (the critical transaction: gate, domain lock, op
lock, lease, marker read, overlap fence, attempt append, capacity slot, CAS) and
``admit_parent``. Untimed preparation: admission, sealing, leases, MAY_ATTEMPT markers.
Targets: >= 1,000 critical submit tx/s on PostgreSQL with 8 workers; 1,000-child admission < 0.5 s.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path
from threading import BrokenBarrierError
from typing import Any

from certification.procfs import children_of, stat_fields
from sink.journal.markers import FileMarkerStore, MayAttemptMarker
from sink.journal.port import DeliveryJournalPort
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.cluster import ClusterUnavailable, start_primary
from sink.journal.records import (
    ChildDescriptor,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    MutationKind,
    ParentAdmission,
    ScopeRange,
    SubmitRequest,
    TransitionRequest,
)

try:
    from sink.journal.sqlite.adapter import open_sqlite_journal
except ImportError:  # the embedded adapter is optional for this benchmark
    open_sqlite_journal = None  # type: ignore[assignment]

BASE = datetime(2026, 1, 1, tzinfo=UTC)
CAPACITY = "bench-jobs"
# Durable defaults (fsync on, synchronous_commit on); only memory/WAL sizing is raised.
PG_SETTINGS: dict[str, str | int] = {
    "max_connections": 100,
    "shared_buffers": "256MB",
    "max_wal_size": "2GB",
    "checkpoint_timeout": "15min",
}


def _digest(label: str) -> str:
    return "sha256:" + hashlib.sha256(label.encode()).hexdigest()


def _instant(hours: int) -> str:
    return (BASE + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_parent(key: str, children: int, domain: str, first_hour: int = 0) -> ParentAdmission:
    return ParentAdmission(
        operation_namespace="ns:bench:prod:1", parent_delivery_key=key, parent_plan_digest=_digest(f"plan:{key}"),
        plan_ref=f"plans/{key}", profile_contract_digest=_digest("profile"),
        children=tuple(
            ChildDescriptor(
                ordinal=i, scope=ScopeRange(_instant(first_hour + i), _instant(first_hour + i + 1)),
                delivery_key=f"{key}.c{i}",
                mutation_intent_digest=_digest(f"intent:{key}:{i}"), payload_ref=f"payload/{key}/{i}",
                payload_digest=_digest(f"payload:{key}:{i}"),
                generation=GenerationKey("2026-06-01T00:00:00Z", 0), frontier_order=i,
                coverage_proof_digest=_digest(f"coverage:{key}:{i}"), effect_conflict_domain=domain,
                mutation_kind=MutationKind.PARTITION_REPLACE,
            )
            for i in range(children)
        ),
    )


@dataclass(frozen=True)
class Target:
    kind: str  # "postgresql" | "sqlite"
    location: str  # DSN or file path
    schema: str
    data_dir: Path | None  # a throwaway cluster's data directory (for server CPU accounting)


def open_journal(target: Target, markers: FileMarkerStore) -> DeliveryJournalPort:
    if target.kind == "postgresql":
        return open_postgres_journal(target.location, schema=target.schema, markers=markers, max_connections=2)
    if open_sqlite_journal is None:
        raise RuntimeError("the SQLite adapter (sink.journal.sqlite) is not available")
    # Eight processes share one file and one write lock: wait for it as long as a run may take.
    return open_sqlite_journal(Path(target.location), markers=markers, busy_timeout_s=600.0)


def _prepare_submits(journal: DeliveryJournalPort, markers: FileMarkerStore, key: str, count: int,
                     domain: str, owner: str, first_hour: int) -> list[SubmitRequest]:
    """Admit `count` children, seal them, take their leases and publish their markers (untimed)."""
    admitted = journal.admit_parent(build_parent(key, count, domain, first_hour))
    epoch = journal.gate_status().journal_epoch
    requests = []
    for child in admitted.children:
        op = journal.transition(TransitionRequest(child.operation_id, child.revision, "plan_sealed"))
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, owner, timedelta(minutes=30)))
        stored = markers.create_if_absent(MayAttemptMarker(
            operation_namespace=op.operation_namespace, operation_id=op.operation_id, parent_id=op.parent_id,
            delivery_key=op.delivery_key, attempt_ordinal=1, generation=op.descriptor.generation,
            expected_revision=op.revision, journal_epoch=epoch,
            mutation_intent_digest=op.descriptor.mutation_intent_digest,
            created_at_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        ))
        requests.append(SubmitRequest(op.operation_id, op.revision, 1, stored.digest, owner, CAPACITY))
    return requests


def worker(target: Target, marker_root: str, workload: str, index: int, size: int, shared_domain: bool,
           start: Barrier, done: Barrier, results: Any) -> None:
    try:
        _work(target, marker_root, workload, index, size, shared_domain, start, done, results)
    except BaseException as exc:
        start.abort()  # release everyone instead of leaving them waiting
        done.abort()
        results.put((index, 0.0, 0.0, 0.0, f"{type(exc).__name__}: {exc}"))


def _work(target: Target, marker_root: str, workload: str, index: int, size: int, shared_domain: bool,
          start: Barrier, done: Barrier, results: Any) -> None:
    markers = FileMarkerStore(Path(marker_root))
    journal = open_journal(target, markers)
    run = uuid.uuid4().hex[:8]
    domain = "bench-shared" if shared_domain else f"bench-{run}-{index}"
    try:
        if workload == "submit":
            # Disjoint scopes per worker: a shared domain then contends on its lock row only.
            requests = _prepare_submits(journal, markers, f"sub-{run}-{index}", size, domain, f"w{index}",
                                        first_hour=index * size)
            start.wait(timeout=600)  # prepared
            start.wait(timeout=600)  # go (after the server CPU sample)
            began, cpu = time.monotonic(), time.process_time()
            for request in requests:
                journal.reserve_and_mark_submitting(request)
            ops = len(requests)
        else:
            parent = build_parent(f"adm-{run}-{index}", size, domain)
            start.wait(timeout=600)  # prepared
            start.wait(timeout=600)  # go (after the server CPU sample)
            began, cpu = time.monotonic(), time.process_time()
            ops = len(journal.admit_parent(parent).children)
        ended, cpu = time.monotonic(), time.process_time() - cpu
        done.wait(timeout=600)  # keep the connection (and its backend's CPU counters) until sampled
        results.put((index, began, ended, cpu, ops))
    finally:
        journal.close()


def server_ticks(data_dir: Path | None) -> dict[int, int] | None:
    """CPU ticks of every live server process (the postmaster and its children: backends, WAL
    writer, checkpointer, ...), read from Linux /proc."""
    if data_dir is None:
        return None
    try:
        postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError):
        return None
    ticks = {pid: _proc_ticks(pid) for pid in (postmaster, *children_of(postmaster))}
    return {pid: spent for pid, spent in ticks.items() if spent is not None}


def server_cpu_between(before: dict[int, int] | None, after: dict[int, int] | None) -> float | None:
    """CPU seconds spent in the window by processes alive at both samples (the benchmark's backends
    are: workers keep their connections until after the second sample). A process that started
    or ended inside the window (e.g. an autovacuum worker) is left out, so this is a lower bound."""
    if before is None or after is None:
        return None
    spent = sum(after[pid] - before[pid] for pid in before.keys() & after.keys())
    return spent / os.sysconf("SC_CLK_TCK")


def _proc_ticks(pid: int) -> int | None:
    fields = stat_fields(pid)
    # After the command: state(0) ... utime(11) stime(12).
    return int(fields[11]) + int(fields[12]) if fields is not None and len(fields) > 12 else None


@dataclass(frozen=True)
class Measure:
    ops: int
    wall_s: float
    per_worker_s: tuple[float, ...]
    client_cpu_s: float
    server_cpu_s: float | None

    @property
    def rate(self) -> float:
        return self.ops / self.wall_s if self.wall_s > 0 else float("inf")

    def cpu_note(self) -> str:
        client = 1000 * self.client_cpu_s / max(1, self.ops)
        if self.server_cpu_s is None:
            return f"client CPU {client:.2f} ms/op"
        server = 1000 * self.server_cpu_s / max(1, self.ops)
        return f"client CPU {client:.2f} ms/op, server CPU {server:.2f} ms/op"


def measure(target: Target, marker_root: str, workload: str, workers: int, size: int,
            shared_domain: bool = False) -> Measure:
    ctx = mp.get_context("spawn")
    start, done = ctx.Barrier(workers + 1), ctx.Barrier(workers + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(target, marker_root, workload, i, size, shared_domain, start, done,
                                              results)) for i in range(workers)]
    for proc in procs:
        proc.start()
    try:
        start.wait(timeout=900)  # every worker has prepared; none may start before the sample
        server_before = server_ticks(target.data_dir)
        start.wait(timeout=900)
        done.wait(timeout=900)
        server_after = server_ticks(target.data_dir)
    except BrokenBarrierError:
        server_before = server_after = None
    rows = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    failures = [r[4] for r in rows if isinstance(r[4], str)]
    if failures:
        raise RuntimeError(f"{len(failures)} benchmark worker(s) failed; first: {failures[0]}")
    server = server_cpu_between(server_before, server_after)
    return Measure(sum(r[4] for r in rows), max(r[2] for r in rows) - min(r[1] for r in rows),
                   tuple(r[2] - r[1] for r in rows), sum(r[3] for r in rows), server)


def _pg_target(settings: dict[str, str | int], keep: list[Callable[[], None]]) -> tuple[Target, str]:
    dsn = os.environ.get("RESTPROOF_PG_DSN")
    if dsn:
        return (Target("postgresql", dsn, "bench_" + uuid.uuid4().hex[:10], None),
                "existing server (RESTPROOF_PG_DSN); its settings apply")
    cluster = start_primary(settings)
    keep.append(cluster.destroy)
    described = ", ".join(f"{k}={v}" for k, v in settings.items())
    durability = "" if {"fsync", "synchronous_commit"} & settings.keys() else \
        "; fsync=on, synchronous_commit=on (server defaults)"
    return Target("postgresql", cluster.dsn(), "bench_journal", cluster.data_dir), \
        f"throwaway cluster: {described}{durability}"


def _parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.replace("_", "").isalnum() or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with a PostgreSQL setting name, got {text!r}")
    return key, value


def run_target(target: Target, marker_root: str, submits: int, children: int) -> dict[str, tuple[str, Measure]]:
    """Every measurement of one adapter, keyed by a row label."""
    setup = open_journal(target, FileMarkerStore(Path(marker_root)))
    # Slots stay held until an attempt resolves and the benchmark resolves none: one per submit.
    setup.configure_capacity(CAPACITY, 4 * submits + 64)
    setup.close()
    rows: dict[str, tuple[str, Measure]] = {}
    for workers in (1, 8):
        sub = measure(target, marker_root, "submit", workers, max(1, submits // workers))
        rows[f"critical submit, {workers} worker(s), own domains"] = (
            f"{sub.rate:,.0f} tx/s ({sub.ops} tx, {sub.wall_s:.2f} s)", sub)
        adm = measure(target, marker_root, "admit", workers, children)
        rows[f"admit {children}-child parent, {workers} worker(s) at once"] = (
            f"median {statistics.median(adm.per_worker_s):.3f} s, max {max(adm.per_worker_s):.3f} s", adm)
    shared = measure(target, marker_root, "submit", 8, max(1, submits // 8), shared_domain=True)
    rows["critical submit, 8 workers, ONE shared domain"] = (
        f"{shared.rate:,.0f} tx/s ({shared.ops} tx, {shared.wall_s:.2f} s)", shared)
    return rows


def sqlite_sync_probe(root: Path, submits: int) -> dict[str, float]:
    """Single-process critical submits on SQLite with PRAGMA synchronous FULL and NORMAL, to show
    what the per-commit WAL fsync costs. Measurement only: the adapter itself always runs FULL
    (docs/journal.md explains why) and offers no option to weaken it; the probe sets the pragma
    on the adapter's private connection after opening."""
    rates: dict[str, float] = {}
    for mode in ("FULL", "NORMAL"):
        folder = root / f"sync-{mode.lower()}"
        markers = FileMarkerStore(folder / "markers")
        journal = open_sqlite_journal(folder / "journal.sqlite3", markers=markers)
        try:
            journal.configure_capacity(CAPACITY, submits + 8)
            requests = _prepare_submits(journal, markers, f"sync-{mode}", submits, "sync-probe", "probe", 0)
            journal._conn.execute(f"PRAGMA synchronous={mode}")  # measurement only (see docstring)
            began = time.monotonic()
            for request in requests:
                journal.reserve_and_mark_submitting(request)
            rates[mode] = len(requests) / (time.monotonic() - began)
        finally:
            journal.close()
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a CI smoke run")
    parser.add_argument("--submits", type=int, default=None, help="critical submits per measurement")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--sqlite-sync-probe", action="store_true",
                        help="also time 1-process SQLite submits with synchronous=FULL vs NORMAL (fsync cost)")
    parser.add_argument("--pg-setting", type=_parse_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="extra setting of the throwaway cluster (reported in the output)")
    args = parser.parse_args(argv)
    # SIGTERM (e.g. a CI timeout) unwinds through `finally`, so the throwaway cluster is stopped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    submits = args.submits if args.submits is not None else (160 if args.quick else 1600)
    if not 8 <= submits <= 100_000:
        parser.error("--submits must be between 8 and 100000")
    children = 1000
    settings: dict[str, str | int] = {**PG_SETTINGS, **dict(args.pg_setting)}
    cleanups: list[Callable[[], None]] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-journal-"))
    try:
        try:
            pg, pg_note = _pg_target(settings, cleanups)
        except ClusterUnavailable as exc:
            print(f"bench_journal: PostgreSQL unavailable: {exc}", file=sys.stderr)
            return 3
        results = {"postgresql": run_target(pg, str(tmp / "markers-pg"), submits, children)}
        if not args.skip_sqlite and open_sqlite_journal is not None:
            lite = Target("sqlite", str(tmp / "journal.sqlite3"), "", None)
            try:
                results["sqlite"] = run_target(lite, str(tmp / "markers-sqlite"), submits, children)
            except RuntimeError as exc:
                print(f"bench_journal: SQLite run failed: {exc}", file=sys.stderr)
        _print_table(results, pg_note, quick=args.quick)
        if args.sqlite_sync_probe and open_sqlite_journal is not None:
            rates = sqlite_sync_probe(tmp / "sync-probe", submits)
            full, normal = rates["FULL"], rates["NORMAL"]
            print(f"SQLite fsync probe, 1 process, {submits} submits: synchronous=FULL {full:,.0f} tx/s, "
                  f"NORMAL {normal:,.0f} tx/s; the per-commit fsync takes "
                  f"{1000 * (1 / full - 1 / normal):.2f} ms of {1000 / full:.2f} ms per submit "
                  "(the adapter always uses FULL)")
        return 0
    finally:
        for cleanup in cleanups:
            cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def _print_table(results: dict[str, dict[str, tuple[str, Measure]]], pg_note: str, *, quick: bool) -> None:
    print(f"PostgreSQL: {pg_note}")
    print("SQLite: WAL, synchronous=FULL, one file shared by all worker processes")
    print(f"host: {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f}; mode: {'quick' if quick else 'full'}")
    labels = list(results["postgresql"])
    width = max(len(label) for label in labels)
    kinds = list(results)
    print(f"{'':<{width}}  " + "  ".join(f"{kind:<36}" for kind in kinds) + "  postgresql vs sqlite")
    for label in labels:
        cells = [results[kind][label][0] for kind in kinds]
        ratio = ""
        if len(kinds) == 2:
            pg, lite = results["postgresql"][label][1], results["sqlite"][label][1]
            ratio = f"{pg.rate / lite.rate:.2f}x throughput" if "submit" in label else \
                f"{max(lite.per_worker_s) / max(pg.per_worker_s):.2f}x speed"
        print(f"{label:<{width}}  " + "  ".join(f"{c:<36}" for c in cells) + f"  {ratio}")
    print("CPU per operation (what the 2 cores spend; the sum bounds the rate on this host):")
    for label in labels:
        print(f"  {label:<{width}}  " + "  |  ".join(f"{kind}: {results[kind][label][1].cpu_note()}"
                                                       for kind in kinds))


if __name__ == "__main__":
    raise SystemExit(main())
