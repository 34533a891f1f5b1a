"""``delivery run / resume / inspect / bundle``: the commands that deliver (and look at deliveries).

Exit codes are the seed's table: 0 completed, pending or skipped (also a successful inspection of a
failed operation), 2 invalid input or intent conflict, 3 journal/artifact/credential/receiver
unavailable or another live worker holds the child (run again later), 4 effect unknown or partial
(manual authority required), 5 nothing can be done automatically. ``--format json`` writes one
stable, redacted object to stdout; progress and diagnostics go to stderr. The result of ``run``,
``resume`` and ``inspect`` is read from the journal, so the three agree for the same journal state.
"""

from __future__ import annotations

import os
import socket
import sys
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sink.cli.common import (
    BindingsOpt,
    EnvironmentOpt,
    FormatOpt,
    OutputFormat,
    ProfilesOpt,
    WorkloadArg,
    app,
    emit_json,
    parse_scope,
)
from sink.cli.common import compile_workload as _compile
from sink.cli.guarded import guarded
from sink.cli.result_views import (
    CommandContext,
    inspection_document,
    render_text,
    result_document,
    skipped_document,
)

if TYPE_CHECKING:  # the sink is imported by each command (start-up cost: see sink.cli.common)
    from sink.runtime.composition import Locations, RunSettings

StateDirOpt = Annotated[
    Path, typer.Option("--state-dir", help="Directory of the embedded journal, artifacts and markers.")
]
JournalOpt = Annotated[
    str | None, typer.Option("--journal", help="sqlite:PATH or a postgresql:// DSN [default: STATE/journal.sqlite3].")
]
ArtifactsOpt = Annotated[
    Path | None, typer.Option("--artifacts", help="Artifact store directory [default: STATE/artifacts].")
]
WorkerOpt = Annotated[str | None, typer.Option("--worker-id", help="This worker's lease owner id [default: host-pid].")]
LeaseOpt = Annotated[float, typer.Option("--lease-seconds", min=0.5, max=3600, help="Lease time-to-live.")]
OperationOpt = Annotated[str, typer.Option("--operation-id", help="Parent or child operation id.", show_default=False)]


class WaitMode(StrEnum):
    WAIT = "wait"
    DETACH = "detach"


ModeOpt = Annotated[WaitMode, typer.Option(
    "--mode", help="wait: observe async jobs here until they end; detach: return pending (run) or make one "
                   "bounded observation pass (resume)."),
]


def emit(document: dict[str, Any], output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        emit_json(document)
    else:
        sys.stdout.write(render_text(document))


def locations(state_dir: Path, journal: str | None, artifacts: Path | None) -> Locations:
    from sink.runtime.composition import Locations  # noqa: PLC0415 - start-up cost

    return Locations.under(state_dir, journal, artifacts)


def context(state_dir: Path, journal: str | None, artifacts: Path | None,
            workload: Path | None = None) -> CommandContext:
    where = ["--state-dir", str(state_dir)]
    if journal is not None:
        where += ["--journal", locations(state_dir, journal, artifacts).journal.describe()]
    if artifacts is not None:
        where += ["--artifacts", str(artifacts)]
    return CommandContext(tuple(where), None if workload is None else str(workload))


def settings(worker: str | None, lease_seconds: float, wait: bool) -> RunSettings:
    from sink.runtime.composition import RunSettings  # noqa: PLC0415 - start-up cost

    return RunSettings(worker_id=worker or f"{socket.gethostname()}-{os.getpid()}"[:120], wait_for_async=wait,
                       lease_ttl=timedelta(seconds=lease_seconds))


@app.command()
def run(
    workload: WorkloadArg,
    *,
    scope_from: Annotated[str, typer.Option("--scope-from", help="First day (YYYY-MM-DD).", show_default=False)],
    scope_to: Annotated[str, typer.Option("--scope-to", help="Exclusive end day (YYYY-MM-DD).", show_default=False)],
    correction_revision: Annotated[int, typer.Option(
        "--correction-revision", min=0, max=2**31 - 1,
        help="Deliver the interval again as an explicit new generation (replaces an earlier one).")] = 0,
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    worker_id: WorkerOpt = None,
    lease_seconds: LeaseOpt = 30.0,
    mode: ModeOpt = WaitMode.WAIT,
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Deliver one scheduled interval end to end: freeze, plan, seal, admit, submit, observe, verify."""
    from sink.runtime.service import DeliverySkipped, run_delivery  # noqa: PLC0415 - start-up cost

    plan = _compile(workload, profiles_dir, bindings_dir, environment, output)
    start, end = parse_scope(scope_from, scope_to, output)
    where = locations(state_dir, journal, artifacts)
    outcome = guarded(output, lambda: run_delivery(
        plan, start, end, workload_dir=workload.resolve().parent, locations=where,
        settings=settings(worker_id, lease_seconds, mode is WaitMode.WAIT), correction_revision=correction_revision))
    if isinstance(outcome, DeliverySkipped):
        emit(skipped_document(outcome), output)
        raise typer.Exit(0)
    shown = context(state_dir, journal, artifacts, workload)
    emit(result_document(outcome, CommandContext(shown.where, shown.workload, plan.binding.credential_ref),
                         correction_revision=correction_revision), output)
    raise typer.Exit(int(outcome.exit_class))


@app.command()
def resume(
    operation_id: OperationOpt,
    *,
    apply: Annotated[bool, typer.Option("--apply", help="Act (without it nothing is changed).")] = False,
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    worker_id: WorkerOpt = None,
    lease_seconds: LeaseOpt = 30.0,
    mode: ModeOpt = WaitMode.WAIT,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Continue an admitted parent from the journal and its pinned artifacts only (never a manifest)."""
    from sink.runtime.service import inspect_operation, pinned_plan, resume_delivery  # noqa: PLC0415

    where, shown = locations(state_dir, journal, artifacts), context(state_dir, journal, artifacts)
    if not apply:
        view = guarded(output, lambda: inspect_operation(operation_id, locations=where))
        emit({**inspection_document(view, shown), "applied": False}, output)
        raise typer.Exit(0)
    result = guarded(output, lambda: resume_delivery(
        operation_id, locations=where, settings=settings(worker_id, lease_seconds, mode is WaitMode.WAIT)))
    if any(child.reason == "credential_unavailable" for child in result.children):
        plan, _ = guarded(output, lambda: pinned_plan(where, operation_id))
        shown = CommandContext(shown.where, None, plan.binding.credential_ref)
    emit(result_document(result, shown, resumed=True), output)
    raise typer.Exit(int(result.exit_class))


@app.command()
def inspect(
    operation_id: OperationOpt,
    *,
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Every axis, child and frontier position, attempts, receipt and allowed next actions (read-only)."""
    from sink.runtime.service import inspect_operation  # noqa: PLC0415 - start-up cost

    where = locations(state_dir, journal, artifacts)
    view = guarded(output, lambda: inspect_operation(operation_id, locations=where))
    emit(inspection_document(view, context(state_dir, journal, artifacts)), output)
    raise typer.Exit(0)


@app.command()
def bundle(
    workload: WorkloadArg,
    *,
    scope_from: Annotated[str, typer.Option("--scope-from", show_default=False)],
    scope_to: Annotated[str, typer.Option("--scope-to", show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="Directory for bundle.json and bodies/.", show_default=False)],
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Seal an interval offline and export each child's exact request (for baseline comparisons)."""
    from sink.contracts.errors import ExitClass  # noqa: PLC0415 - start-up cost
    from sink.runtime.bundle import export_bundle  # noqa: PLC0415

    plan = _compile(workload, profiles_dir, bindings_dir, environment, output)
    start, end = parse_scope(scope_from, scope_to, output)
    document = guarded(output, lambda: export_bundle(plan, start, end, workload_dir=workload.resolve().parent,
                                                     out=out))
    if output is OutputFormat.JSON:
        emit_json(document)
    else:
        sys.stdout.write(f"{len(document['children'])} requests in {out}\n")
    raise typer.Exit(int(ExitClass.OK))
