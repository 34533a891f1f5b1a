"""Shared pieces of the ``delivery`` commands: the Typer app, options, JSON output, failures.

Every process the certification matrix starts pays this package's imports, and ``delivery --help``
or a usage error needs none of the sink: the ``sink.*`` modules (pydantic models, the compiler, the
runtime, httpx) are imported inside the functions that use them.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from sink.compiler import Diagnostic
    from sink.contracts.errors import ExitClass
    from sink.contracts.plan import CompiledPlan

app = typer.Typer(
    name="delivery",
    help="Governed REST bulk delivery: offline checks, plans and payload previews of the reference sink.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PLAN_VIEW_SCHEMA = "restproof.delivery_plan_view.v1"
INTERNAL_ERROR_EXIT = 1


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


WorkloadArg = Annotated[Path, typer.Argument(help="Workload manifest (YAML).", show_default=False)]
ProfilesOpt = Annotated[
    Path | None, typer.Option("--profiles-dir", help="Operation profiles directory [default: ../profiles].")
]
BindingsOpt = Annotated[
    Path | None, typer.Option("--bindings-dir", help="Connection bindings directory [default: ../bindings].")
]
EnvironmentOpt = Annotated[
    Path | None,
    typer.Option("--environment", help="Environment file [default: ../environments/local.yaml]."),
]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Output format.")]


def emit_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, sort_keys=True, ensure_ascii=False) + "\n")


def fail(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic], output: OutputFormat) -> NoReturn:
    from sink.contracts.errors import ExitClass  # noqa: PLC0415 - start-up cost

    for diagnostic in diagnostics:
        sys.stderr.write(f"error[{diagnostic.code}] {diagnostic.location}: {diagnostic.message}\n")
    if output is OutputFormat.JSON:
        emit_json({
            "ok": False,
            "exit_code": int(ExitClass.INVALID_INPUT),
            "errors": [diagnostic.to_dict() for diagnostic in diagnostics],
        })
    raise typer.Exit(int(ExitClass.INVALID_INPUT))


def compile_workload(
    workload: Path, profiles_dir: Path | None, bindings_dir: Path | None, environment: Path | None,
    output: OutputFormat,
) -> CompiledPlan:
    from sink.compiler import CompileError, compile_files, default_paths  # noqa: PLC0415 - start-up cost

    paths = default_paths(workload, profiles_dir=profiles_dir, bindings_dir=bindings_dir, environment=environment)
    try:
        return compile_files(paths)
    except CompileError as exc:
        fail(exc.diagnostics, output)


def parse_date(value: str, option: str, output: OutputFormat) -> date:
    from sink.compiler import Diagnostic  # noqa: PLC0415 - start-up cost

    try:
        if len(value) != 10:
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        fail([Diagnostic("cli.invalid_argument", option, "expected a date as YYYY-MM-DD")], output)


def parse_scope(scope_from: str, scope_to: str, output: OutputFormat) -> tuple[date, date]:
    """The half-open scope ``[from, to)``; an empty or reversed one is ``cli.invalid_scope`` (exit 2)."""
    from sink.compiler import Diagnostic  # noqa: PLC0415 - start-up cost

    start, end = parse_date(scope_from, "--scope-from", output), parse_date(scope_to, "--scope-to", output)
    if start >= end:
        fail([Diagnostic("cli.invalid_scope", "--scope-from/--scope-to",
                         "the scope is [from, to) and must not be empty or reversed: --scope-to must be after "
                         "--scope-from")], output)
    return start, end


def fail_with(code: str, location: str, message: str, exit_class: ExitClass, output: OutputFormat, *,
              evidence: dict[str, Any] | None = None) -> NoReturn:
    """A failure outside compilation (source, planning, artifact store) with its own exit class."""
    sys.stderr.write(f"error[{code}] {location}: {message}\n")
    if output is OutputFormat.JSON:
        error: dict[str, Any] = {"code": code, "location": location, "message": message}
        if evidence:
            error["evidence"] = evidence
        emit_json({"ok": False, "exit_code": int(exit_class), "errors": [error]})
    raise typer.Exit(int(exit_class))
