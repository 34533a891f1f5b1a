"""``delivery run / resume / inspect / reconcile``: the commands that reach a receiver.

Exit codes are the seed's table: 0 completed (also a successful inspection of a failed operation),
2 invalid input or intent conflict, 3 journal/artifact/credential/receiver unavailable, 4 effect
unknown or partial (manual authority required), 5 proven terminal receiver failure. ``--format json``
writes one stable, redacted object to stdout; progress and diagnostics go to stderr.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from sink.artifacts.port import ArtifactError
from sink.cli.common import (
    BindingsOpt,
    EnvironmentOpt,
    FormatOpt,
    OutputFormat,
    ProfilesOpt,
    WorkloadArg,
    app,
)
from sink.cli.common import compile_workload as _compile
from sink.cli.common import parse_date as _parse_date
from sink.contracts.errors import DeliveryError, ExitClass
from sink.journal.port import JournalConfigurationError, JournalError, JournalRejection, JournalUnavailable
from sink.runtime.bundle import export_bundle
from sink.runtime.composition import Locations
from sink.runtime.failpoints import FailpointConfigError
from sink.runtime.reconcile import Guards, ReconcileRefused, reconcile_child
from sink.runtime.service import RunSettings, UnknownOperation, inspect_operation, resume_delivery, run_delivery
from sink.security.errors import SecurityRefusal
from sink.source.errors import SourceError

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


def _emit(document: dict[str, Any], output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        sys.stdout.write(json.dumps(document, sort_keys=True, ensure_ascii=False) + "\n")
        return
    for child in document.get("children", []):
        error = child.get("error_code") or ""
        sys.stdout.write(f"child {child['ordinal']}: {child['status']} {child['axes']['remote_effect']} {error}\n")
    if "exit_code" in document:
        sys.stdout.write(f"exit {document['exit_code']}\n")


def _refuse(code: str, message: str, exit_class: ExitClass, output: OutputFormat) -> NoReturn:
    sys.stderr.write(f"error[{code}] {message}\n")
    if output is OutputFormat.JSON:
        sys.stdout.write(json.dumps({"ok": False, "exit_code": int(exit_class),
                                     "errors": [{"code": code, "message": message}]}, sort_keys=True) + "\n")
    raise typer.Exit(int(exit_class))


def _locations(state_dir: Path, journal: str | None, artifacts: Path | None) -> Locations:
    base = Locations.under(state_dir, journal)
    return Locations(base.journal, artifacts or base.artifacts, base.markers)


def _settings(worker: str | None, lease_seconds: float, wait: bool) -> RunSettings:
    return RunSettings(worker_id=worker or f"{socket.gethostname()}-{os.getpid()}"[:120], wait_for_async=wait,
                       lease_ttl=timedelta(seconds=lease_seconds))


def _guarded(output: OutputFormat, action: Any) -> tuple[dict[str, Any], ExitClass]:
    """Map every catalogued failure to its exit class with one line; never a traceback."""
    try:
        result: tuple[dict[str, Any], ExitClass] = action()
        return result
    except DeliveryError as exc:
        _refuse(exc.code.value, exc.detail, exc.spec.exit_class, output)
    except (SourceError, ReconcileRefused, FailpointConfigError, JournalConfigurationError) as exc:
        _refuse(getattr(exc, "code", "delivery.invalid_input"), str(exc), ExitClass.INVALID_INPUT, output)
    except SecurityRefusal as exc:
        _refuse(exc.code, exc.detail, exc.exit_class, output)
    except UnknownOperation as exc:
        _refuse("delivery.unknown_operation", str(exc), ExitClass.INVALID_INPUT, output)
    except JournalUnavailable as exc:
        _refuse(exc.code.value, "journal unavailable; nothing was sent after an unconfirmed commit",
                ExitClass.UNAVAILABLE, output)
    except JournalRejection as exc:
        _refuse(f"journal.{exc.reason.value}", exc.detail, ExitClass.EFFECT_UNKNOWN_OR_MANUAL, output)
    except (JournalError, ArtifactError, OSError) as exc:
        _refuse("delivery.unavailable", type(exc).__name__, ExitClass.UNAVAILABLE, output)


@app.command()
def run(
    workload: WorkloadArg,
    *,
    scope_from: Annotated[str, typer.Option("--scope-from", help="First day (YYYY-MM-DD).", show_default=False)],
    scope_to: Annotated[str, typer.Option("--scope-to", help="Exclusive end day (YYYY-MM-DD).", show_default=False)],
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    worker_id: WorkerOpt = None,
    lease_seconds: LeaseOpt = 30.0,
    mode: Annotated[
        WaitMode, typer.Option("--mode", help="wait: poll async children here; detach: return pending.")
    ] = WaitMode.WAIT,
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Deliver one scheduled interval end to end: freeze, plan, seal, admit, submit, observe, verify."""
    plan = _compile(workload, profiles_dir, bindings_dir, environment, output)
    start, end = _parse_date(scope_from, "--scope-from", output), _parse_date(scope_to, "--scope-to", output)
    locations = _locations(state_dir, journal, artifacts)
    settings = _settings(worker_id, lease_seconds, mode is WaitMode.WAIT)
    view, exit_class = _guarded(output, lambda: run_delivery(
        plan, start, end, workload_dir=workload.resolve().parent, locations=locations, settings=settings))
    _emit(view, output)
    raise typer.Exit(int(exit_class))


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
    mode: Annotated[WaitMode, typer.Option("--mode")] = WaitMode.WAIT,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Continue an admitted parent from the journal and its pinned artifacts only (never a manifest)."""
    locations = _locations(state_dir, journal, artifacts)
    if not apply:
        view = _guarded(output, lambda: (inspect_operation(operation_id, locations=locations), ExitClass.OK))[0]
        _emit({**view, "applied": False}, output)
        raise typer.Exit(0)
    settings = _settings(worker_id, lease_seconds, mode is WaitMode.WAIT)
    view, exit_class = _guarded(output, lambda: resume_delivery(operation_id, locations=locations, settings=settings))
    _emit(view, output)
    raise typer.Exit(int(exit_class))


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
    locations = _locations(state_dir, journal, artifacts)
    view, _ = _guarded(output, lambda: (inspect_operation(operation_id, locations=locations), ExitClass.OK))
    _emit(view, output)
    raise typer.Exit(0)


@app.command()
def reconcile(
    operation_id: OperationOpt,
    *,
    apply: Annotated[bool, typer.Option("--apply", help="Record the reconciliation (append-only).")] = False,
    operator: Annotated[str, typer.Option("--operator", help="Who decides (audited).")] = "operator",
    expected_profile_contract_digest: Annotated[str | None, typer.Option("--expected-profile-contract-digest")] = None,
    expected_mutation_intent_digest: Annotated[str | None, typer.Option("--expected-mutation-intent-digest")] = None,
    state_dir: StateDirOpt = Path(".restproof"),
    journal: JournalOpt = None,
    artifacts: ArtifactsOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Refine an unknown or partial effect from read-only receiver proof, as an operator."""
    locations = _locations(state_dir, journal, artifacts)
    guards = Guards(expected_profile_contract_digest, expected_mutation_intent_digest)
    settings = _settings(None, 30.0, True)
    view, exit_class = _guarded(output, lambda: reconcile_child(
        operation_id, locations=locations, settings=settings, operator_id=operator, guards=guards, apply=apply))
    _emit(view, output)
    raise typer.Exit(int(exit_class))


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
    plan = _compile(workload, profiles_dir, bindings_dir, environment, output)
    start, end = _parse_date(scope_from, "--scope-from", output), _parse_date(scope_to, "--scope-to", output)
    document, _ = _guarded(output, lambda: (export_bundle(plan, start, end, workload_dir=workload.resolve().parent,
                                                          out=out), ExitClass.OK))
    if output is OutputFormat.JSON:
        sys.stdout.write(json.dumps(document, sort_keys=True) + "\n")
    else:
        sys.stdout.write(f"{len(document['children'])} requests in {out}\n")
    raise typer.Exit(0)
