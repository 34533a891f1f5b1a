"""Lanes: the outcomes are the same, in catalog order, whatever the parallelism; each lane owns its
services per catalog and stops them; one lane's error stops the run and is raised; the first sink of
a matrix is the certified one, whatever its file says."""

from __future__ import annotations

import _thread
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from certification.checkers import Counters
from certification.history import Ending
from certification.lanes import LanePlan, PlanItem, RowJob, _Scheduler, run_lanes
from certification.matrix import Family
from certification.scenarios import Expect, Fault, Row
from certification.services import ServiceUnavailable
from certification.sinks import bundled_sinks
from certification.verdicts import SinkRowResult

SINKS = [bundled_sinks()["reference"], bundled_sinks()["naive-retry"]]


def _rows() -> list[Row]:
    return [Row(row_id=f"{catalog}.r{i}", catalog=Path(f"{catalog}.yaml"), family="sync_batch",
                workload=Path("w.yaml"), receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01",
                scope_to="2026-03-05", fault=Fault(type="none"), expect=Expect(end=(Ending.FIRST_RUN,)))
            for catalog in ("a", "b") for i in range(6)]


class Services:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: dict[int, str] = {}
        self.opened: list[str] = []
        self.in_use: set[int] = set()

    @contextmanager
    def factory(self, row: Row, work: Path, seed: int) -> Iterator[Family]:
        token = id(work)
        with self.lock:
            self.open[token] = row.catalog.name
            self.opened.append(row.catalog.name)
        try:
            yield cast(Family, {"catalog": row.catalog.name, "token": token})
        finally:
            with self.lock:
                del self.open[token]

    def runner(self, family: Family, job: RowJob) -> SinkRowResult:
        row, spec = job.row, job.sink
        services = cast(dict[str, Any], family)
        assert services["catalog"] == row.catalog.name  # a row runs on its own catalog's services
        with self.lock:
            assert services["token"] not in self.in_use  # one row at a time on one pair of services
            self.in_use.add(services["token"])
        time.sleep(random.uniform(0, 0.01))  # scheduling noise
        with self.lock:
            self.in_use.discard(services["token"])
        assert job.work.parts[-3:] == ("rows", row.row_id, spec.name)
        return SinkRowResult(spec.name, job.role, "PASS", Counters(0, 0, 0, 0), (job.seed,),
                             f"{row.row_id}/{spec.name}", 0.0)


def _plain(outcomes: list[Any]) -> list[tuple[str, tuple[str | None, ...]]]:
    return [(o.row.row_id, tuple(r.history_digest for r in o.results)) for o in outcomes]


@pytest.mark.parametrize("lanes", [1, 3, 8])
def test_outcomes_are_in_catalog_order_whatever_the_parallelism(tmp_path: Path, lanes: int) -> None:
    services = Services()
    progress: list[str] = []
    outcomes = run_lanes(LanePlan.matrix(_rows(), SINKS, tmp_path, 7, lanes=lanes), services.factory,
                         progress.append, services.runner)
    assert _plain(outcomes) == [(row.row_id, (f"{row.row_id}/reference", f"{row.row_id}/naive-retry"))
                                for row in _rows()]
    assert all(r.exit_codes == (7,) for o in outcomes for r in o.results)
    assert len(progress) == len(_rows()) * len(SINKS)
    assert services.open == {}  # every lane stopped its services
    assert len(services.opened) <= 2 * lanes  # a lane opens a catalog's services once, not per row


def test_one_lane_error_stops_the_run_and_is_raised(tmp_path: Path) -> None:
    services = Services()
    calls: list[str] = []

    def failing(family: Family, job: RowJob) -> SinkRowResult:
        calls.append(job.row.row_id)
        if job.row.row_id == "a.r1":
            raise ServiceUnavailable("receiver admin API unreachable")
        return services.runner(family, job)

    with pytest.raises(ServiceUnavailable):
        run_lanes(LanePlan.matrix(_rows(), SINKS, tmp_path, 0, lanes=2), services.factory, lambda _: None, failing)
    assert services.open == {}
    assert len(calls) < len(_rows()) * len(SINKS)


def test_the_first_sink_of_a_matrix_is_certified_whatever_its_file_says(tmp_path: Path) -> None:
    sinks = [bundled_sinks()["naive-retry"], bundled_sinks()["reference"]]  # a baseline file listed first
    plan = LanePlan.matrix(_rows()[:1], sinks, tmp_path, 0, lanes=1)
    assert [(spec.name, role) for spec, role in plan.items[0].sinks] == [("naive-retry", "certified"),
                                                                         ("reference", "baseline")]
    services = Services()
    outcomes = run_lanes(plan, services.factory, lambda _: None, services.runner)
    assert [(r.sink, r.role) for r in outcomes[0].results] == [("naive-retry", "certified"), ("reference", "baseline")]


def test_items_may_carry_their_own_sinks_and_roles(tmp_path: Path) -> None:
    reference, retry = bundled_sinks()["reference"], bundled_sinks()["naive-retry"]
    items = [PlanItem(_rows()[0], ((retry, "baseline"),)), PlanItem(_rows()[1], ((reference, "certified"),))]
    services = Services()
    outcomes = run_lanes(LanePlan(items, tmp_path, 3, 2), services.factory, lambda _: None, services.runner)
    assert [[(r.sink, r.role) for r in o.results] for o in outcomes] == [[("naive-retry", "baseline")],
                                                                        [("reference", "certified")]]


def _row(catalog: str, i: int, fault: Fault | None = None, end: tuple[Ending, ...] = (Ending.FIRST_RUN,)) -> Row:
    return Row(row_id=f"{catalog}.r{i}", catalog=Path(f"{catalog}.yaml"), family="sync_batch",
               workload=Path("w.yaml"), receiver=Path("r.yaml"), binding="b", scope_from="2026-03-01",
               scope_to="2026-03-05", fault=fault or Fault(type="none"),
               expect=Expect(end=end, why=None if end == (Ending.FIRST_RUN,) else "a test row"))


def _items(counts: dict[str, int]) -> list[PlanItem]:
    reference = bundled_sinks()["reference"]
    return [PlanItem(_row(catalog, i), ((reference, "certified"),)) for catalog, count in counts.items()
            for i in range(count)]


def test_a_lane_keeps_its_catalog_and_a_free_lane_joins_the_longest_backlog_per_lane() -> None:
    scheduler = _Scheduler(_items({"a": 4, "b": 3, "c": 1}))  # every run costs the same here
    a, b, c = Path("a.yaml"), Path("b.yaml"), Path("c.yaml")

    def take(current: Path | None) -> str:
        job = scheduler.next(current)
        assert job is not None
        return job.row.row_id

    assert take(None) == "a.r0"  # a: 4 runs, nobody on it
    assert take(None) == "b.r0"  # a: 3 left / 2 lanes < b: 3 / 1
    assert take(None) == "a.r1"  # a: 3/2 = 1.5 > b: 2/2 = 1 > c: 1/1; ties would go to catalog order
    assert take(a) == "a.r2"  # a lane keeps to its catalog while it has runs
    assert take(b) == "b.r1"
    assert take(a) == "a.r3"
    assert take(a) == "c.r0"  # a is drained: c (1 run, no lane) before b (1 run, 1 lane already on it)
    assert take(b) == "b.r2"
    assert scheduler.next(c) is None and scheduler.next(None) is None


def test_the_longest_expected_runs_start_first_and_each_sink_is_a_run_of_its_own() -> None:
    reference, retry = bundled_sinks()["reference"], bundled_sinks()["naive-retry"]
    hold = Fault(type="receiver_rule", rule={"match": {"endpoints": ["sync_submit"]}, "when": {"nth": [1]},
                                             "action": {"kind": "delay", "seconds": 34, "after_effect": False}})
    rows = [_row("a", 0), _row("a", 1, Fault(type="connect_timeout")), _row("a", 2, hold, (Ending.BLOCKED,))]
    sinks = ((reference, "certified"), (retry, "baseline"))
    scheduler = _Scheduler([PlanItem(row, sinks) for row in rows])
    order: list[tuple[str, str]] = []
    while (job := scheduler.next(Path("a.yaml"))) is not None:
        order.append((job.row.row_id, job.sink.name))
    # the held, blocked row's certified run (five runs and a 34 s hold) first; the plain row last
    assert order[0] == ("a.r2", "reference")
    assert set(order[1:3]) == {("a.r1", "reference"), ("a.r1", "naive-retry")}  # a 20 s connect timeout each
    assert order[-2:] in ([("a.r0", "reference"), ("a.r0", "naive-retry")],
                          [("a.r0", "naive-retry"), ("a.r0", "reference")])
    assert sorted(order) == sorted((row.row_id, spec.name) for row in rows for spec, _ in sinks)


def test_a_slow_rows_sinks_run_side_by_side_on_two_lanes(tmp_path: Path) -> None:
    services = Services()
    running: set[str] = set()
    overlapped = threading.Event()

    def runner(family: Family, job: RowJob) -> SinkRowResult:
        with services.lock:
            running.add(job.sink.name)
            if len(running) == 2:
                overlapped.set()
        overlapped.wait(2)
        with services.lock:
            running.discard(job.sink.name)
        return services.runner(family, job)

    outcomes = run_lanes(LanePlan.matrix(_rows()[:1], SINKS, tmp_path, 0, lanes=2), services.factory,
                         lambda _: None, runner)
    assert overlapped.is_set()  # one row, two sinks, two lanes: both ran at once
    assert [(r.sink, r.role) for r in outcomes[0].results] == [("reference", "certified"), ("naive-retry", "baseline")]


def test_every_run_is_handed_out_once_whatever_the_lanes_ask() -> None:
    items = _items({"a": 7, "b": 5, "c": 3, "d": 1})
    scheduler = _Scheduler(items)
    lanes: list[Path | None] = [None] * 3
    seen: list[int] = []
    rng = random.Random(7)
    while True:
        lane = rng.randrange(len(lanes))
        job = scheduler.next(lanes[lane])
        if job is None:
            break
        seen.append(job.index)
        lanes[lane] = job.row.catalog
    assert sorted(seen) == list(range(len(items)))


@pytest.mark.parametrize("second_interrupt", [False, True])
def test_ctrl_c_returns_only_once_every_lane_has_stopped_its_services(tmp_path: Path,
                                                                      second_interrupt: bool) -> None:
    # Ctrl-C arrives while lanes are inside a sink run (and, once, again while they wind down): the
    # run must not return before each lane stopped its services, or a receiver outlives certify.
    services = Services()
    started = threading.Event()

    def slow_runner(family: Family, job: RowJob) -> SinkRowResult:
        started.set()
        time.sleep(0.6)
        return services.runner(family, job)

    def interrupt() -> None:
        started.wait(10)
        _thread.interrupt_main()
        if second_interrupt:
            time.sleep(0.2)
            _thread.interrupt_main()

    timer = threading.Thread(target=interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_lanes(LanePlan.matrix(_rows(), SINKS, tmp_path, 1, lanes=3), services.factory, lambda _: None, slow_runner)
    timer.join()
    assert services.open == {}  # every lane's services were stopped before run_lanes raised
    assert 0 < len(services.opened) <= 3  # no lane took another row after the interrupt
