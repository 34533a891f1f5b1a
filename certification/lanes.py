"""Run the matrix on N lanes in parallel, each lane with its own receiver + fault proxy pair.

Why lanes and not one shared pair: every row resets the receiver's ledger and the proxy's rules,
log and random stream (seeded) before it starts, and the checkers read the whole ledger and log;
two rows sharing a pair at the same time would see each other's effects. A lane owns one pair per
catalog (family) and runs one row-and-sink at a time on it, so each row is exactly as isolated as
in a serial run. Lanes pull rows from one queue in catalog order (a lane changes family at most
once or twice) and the outcomes are put back in catalog order, so the matrix is the same whatever
the parallelism or the scheduling, apart from timings.

Lanes are threads: a lane spends its time waiting on sink processes and HTTP calls.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from certification.matrix import Family, RowRunner
from certification.scenarios import Row
from certification.sinks import SinkSpec
from certification.verdicts import RowOutcome, SinkRowResult

FamilyFactory = Callable[[Row, Path, int], AbstractContextManager[Family]]
"""(first row of a catalog, lane work directory, seed) -> the lane's services for that catalog."""
DEFAULT_LANES = min(4, 2 * (os.cpu_count() or 1))
"""Lanes mostly wait (lease waits, Retry-After, process start-up), so two per core keep the cores busy."""
RowRun = Callable[[Family, Row, SinkSpec, Path, int, str], SinkRowResult]
"""(the lane's services, row, sink, the row's work directory, seed, role) -> that sink's result on the row."""
Progress = Callable[[str], None]
"""Called once per finished row-and-sink with a description of it."""


@dataclass(frozen=True, slots=True)
class LanePlan:
    rows: Sequence[Row]
    sinks: Sequence[SinkSpec]
    work_root: Path
    seed: int
    lanes: int


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

    def close(self) -> None:
        services, self._services, self._family, self._catalog = self._services, None, None, None
        if services is not None:
            services.__exit__(None, None, None)


def run_row(family: Family, row: Row, spec: SinkSpec, work: Path, seed: int, role: str  # noqa: PLR0917
            ) -> SinkRowResult:
    return RowRunner(family, row, spec, work, seed, role=role).run(must_be_caught=spec.name in row.caught_duplicating)


def role_of(plan: LanePlan, spec: SinkSpec) -> str:
    """The first sink of a run is the certified one, whatever its file says; the others are baselines."""
    return "certified" if spec is plan.sinks[0] else "baseline"


def run_lanes(plan: LanePlan, factory: FamilyFactory, progress: Progress, runner: RowRun = run_row,
              ) -> list[RowOutcome]:
    """Every row on every sink; outcomes in the rows' order. The first error a lane meets (a
    harness service unavailable, say) stops every lane and is raised here."""
    jobs: queue.SimpleQueue[tuple[int, Row]] = queue.SimpleQueue()
    for index, row in enumerate(plan.rows):
        jobs.put((index, row))
    results: dict[int, RowOutcome] = {}
    errors: list[BaseException] = []
    stop = threading.Event()
    lock = threading.Lock()

    def lane_main(lane: _Lane) -> None:
        try:
            while not stop.is_set():
                try:
                    index, row = jobs.get_nowait()
                except queue.Empty:
                    return
                family = lane.family_for(row)
                sink_results: list[SinkRowResult] = []
                for spec in plan.sinks:
                    if stop.is_set():
                        return
                    work = plan.work_root / "rows" / row.row_id / spec.name
                    sink_results.append(runner(family, row, spec, work, plan.seed, role_of(plan, spec)))
                    progress(f"{row.row_id} · {spec.name}")
                with lock:
                    results[index] = RowOutcome(row, tuple(sink_results))
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

    count = max(1, min(plan.lanes, len(plan.rows)))
    threads = [threading.Thread(target=lane_main, args=(_Lane(i, plan, factory),), name=f"certify-lane{i}")
               for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        stop.set()  # each lane finishes its current sink run, then stops its services
        for thread in threads:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return [results[index] for index in range(len(plan.rows))]
