"""Catalog rows as tests: one sink on one row, run and judged exactly as ``certify run`` does.

``RowSession`` holds, per pytest process, one set of services per catalog (receiver, fault proxy
and wire tap: ``certification.matrix.family_services``), started by the first row that needs it and
kept for the session, as a lane of ``certify run`` keeps them. Every row resets them before it runs
(``RowRunner``), so rows are as isolated as in ``certify run``; rows run one at a time per process,
and each pytest-xdist worker holds its own services (own ports, own work directory).

Nothing here judges: the history, the checkers and the verdict are ``RowRunner``'s, the same code
``certify run`` uses. ``RowReport`` only reads the result.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from certification.checkers import CheckResult
from certification.history import History
from certification.matrix import Family, RowRunner, family_services
from certification.scenarios import BUNDLED, Row, load_catalogs
from certification.services import START_TIMEOUT_S, ServiceUnavailable
from certification.sinks import RUN_TIMEOUT_S, SinkSpec, load_sink
from certification.verdicts import PASS, SinkRowResult

Marked = Callable[[], AbstractContextManager[None]]


def bundled_catalogs() -> tuple[Path, ...]:
    return tuple(sorted(BUNDLED.glob("*.yaml")))


@dataclass(frozen=True, slots=True)
class RowReport:
    """One sink's result on one row, as ``certify run`` computed it."""

    row: Row
    result: SinkRowResult

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def passed(self) -> bool:
        return self.result.verdict == PASS

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.result.reasons

    @property
    def history(self) -> History:
        """What the checkers read; absent only when the row did not apply to the sink (N/A)."""
        if self.result.history is None:
            raise LookupError(f"{self.row.row_id}: no history ({self.verdict}: {'; '.join(self.reasons)})")
        return self.result.history

    def check(self, name: str) -> CheckResult:
        """One checker's result by name (``duplicates``, ``unproved_resends``, ``exercise``, ...)."""
        for result in self.result.checks:
            if result.name == name:
                return result
        known = ", ".join(result.name for result in self.result.checks) or "none: the row did not run"
        raise LookupError(f"no checker {name!r} in this result (checkers: {known})")

    def effects_per_day(self) -> dict[str, int]:
        """Every day of the scope and how many of the receiver's effects applied it."""
        counts = dict.fromkeys(self.history.universe, 0)
        for effect in self.history.effects:
            for day in effect.days:
                counts[day] = counts.get(day, 0) + 1
        return counts

    def describe(self) -> str:
        """The verdict with every reason, the fault's evidence, the ending and the runs: a failure's text."""
        lines = [f"{self.row.row_id} [{self.result.sink}]: {self.verdict}"]
        lines.extend(f"  {reason}" for reason in self.reasons)
        history = self.result.history
        if history is not None:
            fault = history.fault
            fired = {True: "fired", False: "did not fire", None: "nothing to fire"}[fault.fired]
            day = f", day {fault.target_day}" if fault.target_day else ""
            lines.append(f"  fault: {fault.kind} {fired} ({fault.detail}{day})")
            accepted = ", ".join(end.value for end in self.row.expect.end)
            lines.append(f"  ending: {history.ending().value} (the row accepts {accepted})")
            runs = ", ".join(f"{run.kind.value} exited {run.exit_code}" + (" (hung)" if run.timed_out else "")
                             for run in history.runs)
            lines.append(f"  runs: {runs or 'none'}")
            lines.append(f"  history: {self.result.history_digest}")
        return "\n".join(lines)


@dataclass
class RowSession:
    """Runs sinks on catalog rows; ``close`` stops every service it started."""

    catalogs: Sequence[Path] = field(default_factory=bundled_catalogs)
    seed: int = 0
    run_timeout: float = RUN_TIMEOUT_S
    start_timeout: float = START_TIMEOUT_S
    marked: Marked = nullcontext
    """Wraps every start of a process (``certification.testing.reaper.Reaper.marked``)."""
    work_root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="restproof-rows-")))
    _families: dict[Path, tuple[Family, ExitStack]] = field(default_factory=dict, init=False)
    _broken: dict[Path, str] = field(default_factory=dict, init=False)
    _started: int = field(default=0, init=False)

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """Every row of the session's catalogs (the bundled ones unless told otherwise)."""
        return tuple(load_catalogs(list(self.catalogs)))

    def row(self, row_id: str) -> Row:
        for row in self.rows:
            if row.row_id == row_id:
                return row
        raise LookupError(f"no row {row_id!r} in the catalogs ({', '.join(str(path) for path in self.catalogs)})")

    def _family(self, row: Row) -> Family:
        if row.catalog in self._broken:
            raise ServiceUnavailable(f"{self._broken[row.catalog]} (an earlier row of this catalog met it)")
        if row.catalog in self._families:
            return self._families[row.catalog][0]
        self._started += 1
        stack = ExitStack()
        try:
            with self.marked():
                family = stack.enter_context(family_services(row, self.work_root / f"services{self._started}",
                                                             self.seed, start_timeout=self.start_timeout))
        except ServiceUnavailable as exc:
            message = str(exc)
        except OSError as exc:  # a console script missing or not executable
            message = f"a harness part could not be started: {exc.strerror or exc}"
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            message = f"the workload's requests could not be exported for the catalog's sinks ({type(exc).__name__})"
        else:
            self._families[row.catalog] = (family, stack)
            return family
        # Kept: a part that cannot start now will not start for the next row either, and each try costs
        # up to the start-up bound.
        self._broken[row.catalog] = message
        raise ServiceUnavailable(message)

    def _drop(self, row: Row) -> None:
        """A service stopped answering mid-row: the next row of the catalog starts fresh ones."""
        dropped = self._families.pop(row.catalog, None)
        if dropped is not None:
            dropped[1].close()

    def run(self, sink: SinkSpec | Path | str, row: Row | str) -> RowReport:
        """``sink`` as the certified sink on ``row``: its ``RowRunner`` result, judged."""
        spec = sink if isinstance(sink, SinkSpec) else load_sink(Path(sink))
        chosen = row if isinstance(row, Row) else self.row(row)
        family = self._family(chosen)
        self._started += 1
        work = self.work_root / "rows" / f"{self._started:04d}-{chosen.row_id}" / spec.name
        runner = RowRunner(family, chosen, spec, work, self.seed, role="certified", run_timeout=self.run_timeout)
        try:
            with self.marked():
                result = runner.run(must_be_caught=False)
        except ServiceUnavailable:
            self._drop(chosen)
            raise
        return RowReport(chosen, result)

    def close(self) -> None:
        try:
            for _, stack in self._families.values():
                stack.close()
        finally:
            self._families.clear()
            shutil.rmtree(self.work_root, ignore_errors=True)

