"""Run the matrix on N lanes in parallel, each lane with its own receiver + fault proxy pair.

Why lanes and not one shared pair: every row resets the receiver's ledger and the proxy's rules,
log and random stream (seeded) before it starts, and the checkers read the whole ledger and log;
two rows sharing a pair at the same time would see each other's effects. A lane owns one pair per
catalog (family) and runs one row-and-sink at a time on it, so each row is exactly as isolated as
in a serial run. Starting a catalog's services costs a lane seconds of CPU (a receiver, a proxy, a
bundle export), so a lane keeps to its catalog while that catalog has runs, and only then joins the
catalog with the most expected seconds left per lane already on it (``_Scheduler``): with one queue in
catalog order every lane started every catalog's services, which on 13 catalogs and 8 lanes was a third
of the run's CPU. The unit of work is one sink's run of a row, longest expected first
(``row_cost``): a row whose receiver holds a request 34 s no longer holds one lane for all its sinks
in turn at the end of the run. The outcomes are put back in catalog order, so the matrix is the same
whatever the parallelism or the scheduling, apart from timings.

Lanes are threads: a lane spends its time waiting on sink processes and HTTP calls.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from certification.matrix import Family, RowRunner
from certification.row_cost import expected_seconds
from certification.scenarios import Row
from certification.sinks import RUN_TIMEOUT_S, SinkSpec
from certification.verdicts import RowOutcome, SinkRowResult

FamilyFactory = Callable[[Row, Path, int], AbstractContextManager[Family]]
"""(first row of a catalog, lane work directory, seed) -> the lane's services for that catalog."""
DEFAULT_LANES = min(12, 6 * (os.cpu_count() or 1))
"""Lanes mostly wait (lease waits, Retry-After, holds, polls), so six per core keep the cores busy:
the full catalog (580 rows) on two cores took 698 s of matrix wall with 8 lanes and 430-505 s with 12
(docs/certification.md)."""
Progress = Callable[[str], None]
"""Called once per finished row-and-sink with a description of it."""


@dataclass(frozen=True, slots=True)
class RowJob:
    """One sink on one row."""

    row: Row
    sink: SinkSpec
    role: str
    work: Path
    seed: int
    run_timeout: float


RowRun = Callable[[Family, RowJob], SinkRowResult]
"""(the lane's services, the job) -> that sink's result on the row."""
@dataclass(frozen=True, slots=True)
class PlanItem:
    row: Row
    sinks: tuple[tuple[SinkSpec, str], ...]
    """Each sink with its role on this row, in the order they run."""


@dataclass(frozen=True, slots=True)
class LanePlan:
    items: Sequence[PlanItem]
    work_root: Path
    seed: int
    lanes: int
    run_timeout: float = RUN_TIMEOUT_S

    @classmethod
    def matrix(cls, rows: Sequence[Row], sinks: Sequence[SinkSpec], work_root: Path, seed: int, *, lanes: int,
               run_timeout: float = RUN_TIMEOUT_S) -> LanePlan:
        """Every row on every sink: the first sink is the certified one, whatever its file says; the
        others are baselines."""
        roles = tuple((spec, "certified" if index == 0 else "baseline") for index, spec in enumerate(sinks))
        return cls([PlanItem(row, roles) for row in rows], work_root, seed, lanes, run_timeout)


class _Lane:
    def __init__(self, index: int, plan: LanePlan, factory: FamilyFactory) -> None:
        self.index, self.plan, self.factory = index, plan, factory
        self._catalog: Path | None = None
        self._family: Family | None = None
        self._services: AbstractContextManager[Family] | None = None
        self._opened = 0

    def family_for(self, row: Row) -> Family:
        if self._catalog != row.catalog or self._family is None:
            self.close()
            work = self.plan.work_root / f"lane{self.index}" / f"services{self._opened}"
            self._opened += 1
            self._services = self.factory(row, work, self.plan.seed)
            self._family = self._services.__enter__()
            self._catalog = row.catalog
        return self._family

    @property
    def catalog(self) -> Path | None:
        """The catalog whose services this lane holds (None before its first row)."""
        return self._catalog

    def close(self) -> None:
        services, self._services, self._family, self._catalog = self._services, None, None, None
        if services is not None:
            services.__exit__(None, None, None)


@dataclass(frozen=True, slots=True)
class _Job:
    """One sink's run of one plan item, and where its result goes."""

    index: int
    position: int
    row: Row
    sink: SinkSpec
    role: str
    cost: float


class _Scheduler:
    """Hands each lane its next sink run: from the catalog whose services the lane has, while it has
    runs, longest expected first (``row_cost``); otherwise from the catalog with the most expected
    seconds left per lane on it (ties: catalog order). A row's sinks are separate runs, so a slow row
    occupies one lane per sink for its own time, instead of one lane for the sum of them."""

    def __init__(self, items: Sequence[PlanItem]) -> None:
        jobs: dict[Path, list[_Job]] = {}
        for index, item in enumerate(items):
            for position, (spec, role) in enumerate(item.sinks):
                cost = expected_seconds(item.row, role)
                jobs.setdefault(item.row.catalog, []).append(_Job(index, position, item.row, spec, role, cost))
        self._queues = {catalog: deque(sorted(queue, key=lambda job: -job.cost)) for catalog, queue in jobs.items()}
        self._order = {catalog: position for position, catalog in enumerate(self._queues)}
        self._lanes: dict[Path, int] = dict.fromkeys(self._queues, 0)
        self._lock = threading.Lock()

    def next(self, current: Path | None) -> _Job | None:
        with self._lock:
            if current is not None and self._queues.get(current):
                return self._queues[current].popleft()
            if current in self._lanes:
                self._lanes[current] -= 1  # this lane leaves its drained catalog
            waiting = [catalog for catalog, jobs in self._queues.items() if jobs]
            if not waiting:
                return None
            chosen = max(waiting, key=lambda catalog: (sum(job.cost for job in self._queues[catalog])
                                                       / (self._lanes[catalog] + 1), -self._order[catalog]))
            self._lanes[chosen] += 1
            return self._queues[chosen].popleft()


def run_row(family: Family, job: RowJob) -> SinkRowResult:
    runner = RowRunner(family, job.row, job.sink, job.work, job.seed, role=job.role, run_timeout=job.run_timeout)
    return runner.run(must_be_caught=job.sink.name in job.row.caught_duplicating)


def run_lanes(plan: LanePlan, factory: FamilyFactory, progress: Progress, runner: RowRun = run_row,
              ) -> list[RowOutcome]:
    """Every item's sinks on its row; outcomes in the items' order. The first error a lane meets (a
    harness service unavailable, say) stops every lane and is raised here."""
    jobs = _Scheduler(plan.items)
    results: dict[int, list[SinkRowResult | None]] = {i: [None] * len(item.sinks) for i, item in enumerate(plan.items)}
    errors: list[BaseException] = []
    stop = threading.Event()
    lock = threading.Lock()

    def lane_main(lane: _Lane, closed: threading.Event) -> None:
        try:
            while not stop.is_set():
                job = jobs.next(lane.catalog)
                if job is None:
                    return
                row, spec = job.row, job.sink
                family = lane.family_for(row)
                work = plan.work_root / "rows" / row.row_id / spec.name
                result = runner(family, RowJob(row, spec, job.role, work, plan.seed, plan.run_timeout))
                with lock:
                    results[job.index][job.position] = result
                progress(f"{row.row_id} · {spec.name}")
        except BaseException as exc:  # handed to the caller, which re-raises it
            with lock:
                errors.append(exc)
            stop.set()
        finally:
            try:
                lane.close()
            except BaseException as exc:  # a service that will not stop is an error too
                with lock:
                    errors.append(exc)
            finally:
                closed.set()

    count = max(1, min(plan.lanes, sum(len(item.sinks) for item in plan.items)))
    closed = [threading.Event() for _ in range(count)]
    threads = [threading.Thread(target=lane_main, args=(_Lane(i, plan, factory), closed[i]), name=f"certify-lane{i}")
               for i in range(count)]
    try:
        for thread in threads:
            thread.start()
        _until_closed(closed)
    except KeyboardInterrupt:
        stop.set()  # each lane finishes its current sink run, then stops its services
        for thread, event in zip(threads, closed, strict=True):
            if thread.ident is None:  # never started: nothing to close
                event.set()
        _until_closed(closed, interruptible=False)
        raise
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [RowOutcome(item.row, _complete(results[index])) for index, item in enumerate(plan.items)]


def _complete(results: list[SinkRowResult | None]) -> tuple[SinkRowResult, ...]:
    done = tuple(result for result in results if result is not None)
    if len(done) != len(results):  # a lane returns only when the scheduler has no run left
        raise RuntimeError("a row's sink run has no result although every lane finished")
    return done


def _until_closed(closed: Sequence[threading.Event], *, interruptible: bool = True) -> None:
    """Wait until every lane has stopped its services. Never ``Thread.join`` here: a join that Ctrl-C
    interrupts can leave CPython (3.11) believing the thread ended, and the process then exits with
    the lane's receiver and proxy still running. After the first Ctrl-C a further one is not allowed
    to cut the wait short, for the same reason: each lane ends within its current sink run's limit."""
    for event in closed:
        while True:
            try:
                if event.wait(0.5):
                    break
            except KeyboardInterrupt:
                if interruptible:
                    raise
