"""One ``certify run``: the fault matrix on its lanes and, beside it, the identity conflict matrix
in its own process; the per-row state lives in a temporary directory removed afterwards."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from certification.bytecode import precompile
from certification.identity_matrix import IdentityRun
from certification.lanes import LanePlan, run_lanes
from certification.matrix import JournalArguments, family_services
from certification.netns import PROCESS_MODE
from certification.scenarios import Row
from certification.sinks import SinkSpec
from certification.verdicts import RowOutcome
from certification.warm_start import SERVERS


@dataclass(frozen=True, slots=True)
class RunRequest:
    rows: Sequence[Row]
    sinks: Sequence[SinkSpec]
    seed: int
    parallel: int
    receiver_url: str | None
    identity_examples: int
    keep_work: bool
    isolation: str = PROCESS_MODE
    """How restarted workers run: NAMESPACE_MODE or PROCESS_MODE (certification.netns)."""
    journal: JournalArguments | None = None
    """A fresh journal per row-and-sink run (certification.journal_backend); None: embedded SQLite."""


def execute(request: RunRequest, console: Console) -> tuple[list[RowOutcome], dict[str, Any] | None]:
    """Outcomes in catalog order and the identity matrix body (None when no examples were asked).
    Raises ServiceUnavailable / IdentityMatrixFailed; every process it started is stopped."""
    precompile()  # every row starts fresh processes: compile their sources once, not in each
    work_root = Path(tempfile.mkdtemp(prefix="restproof-certify-"))
    identity_run = IdentityRun(work_root / "identity", examples=request.identity_examples, seed=request.seed) \
        if request.identity_examples else None
    live = request.receiver_url
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            total = len(request.rows) * len(request.sinks)
            task = progress.add_task("certify", total=total)
            lock = threading.Lock()

            def advance(done: str) -> None:  # called from every lane's thread
                with lock:
                    progress.update(task, advance=1, description=done)
                    if not console.is_terminal:  # a log (CI) gets no live bar: one line per finished run
                        finished = next(int(t.completed) for t in progress.tasks if t.id == task)
                        console.print(f"certify: {finished}/{total} {done}", markup=False, highlight=False)

            outcomes = run_lanes(LanePlan.matrix(request.rows, request.sinks, work_root, request.seed,
                                                 lanes=request.parallel),
                                 lambda row, work, lane_seed: family_services(row, work, lane_seed, live,
                                                                              request.isolation,
                                                                              journal=request.journal),
                                 advance)
            progress.update(task, description="identity conflict matrix")
            identity = None if identity_run is None else identity_run.result()
    finally:
        # The warm servers go with the run: their forked runs' CPU reaches this process's accounting
        # (RUSAGE_CHILDREN) only once the servers themselves are reaped.
        SERVERS.close()
        if identity_run is not None:
            identity_run.stop()
        if not request.keep_work:
            shutil.rmtree(work_root, ignore_errors=True)
    return outcomes, identity
