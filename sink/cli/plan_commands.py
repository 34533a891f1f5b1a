"""``delivery``: the reference sink's operator CLI (offline commands).

Exit codes follow ``ExitClass``: 0 ok, 2 invalid input (with stable codes), 3 unavailable.
``--format json`` writes exactly one stable, redacted JSON object to stdout; human diagnostics go
to stderr. Tracebacks are never shown: an unexpected internal failure prints its exception type
only (exit 1), because a traceback's locals could include document content.
"""

from __future__ import annotations

import itertools
import json
import sys
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from sink.compiler import CompileError, Diagnostic, compile_files, default_paths, delivery_identity
from sink.contracts.errors import ExitClass
from sink.contracts.plan import CompiledPlan, DeliveryIdentity
from sink.contracts.schemas import document_schema

app = typer.Typer(
    name="delivery",
    help="Governed REST bulk delivery: offline checks and plans of the reference sink.",
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


def _emit_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, sort_keys=True, ensure_ascii=False) + "\n")


def _fail(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic], output: OutputFormat) -> NoReturn:
    for diagnostic in diagnostics:
        sys.stderr.write(f"error[{diagnostic.code}] {diagnostic.location}: {diagnostic.message}\n")
    if output is OutputFormat.JSON:
        _emit_json({
            "ok": False,
            "exit_code": int(ExitClass.INVALID_INPUT),
            "errors": [diagnostic.to_dict() for diagnostic in diagnostics],
        })
    raise typer.Exit(int(ExitClass.INVALID_INPUT))


def _compile(
    workload: Path, profiles_dir: Path | None, bindings_dir: Path | None, environment: Path | None,
    output: OutputFormat,
) -> CompiledPlan:
    paths = default_paths(workload, profiles_dir=profiles_dir, bindings_dir=bindings_dir, environment=environment)
    try:
        return compile_files(paths)
    except CompileError as exc:
        _fail(exc.diagnostics, output)


@app.command()
def check(
    workload: WorkloadArg,
    *,
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Validate a workload with its profile, binding and environment, offline."""
    plan = _compile(workload, profiles_dir, bindings_dir, environment, output)
    if output is OutputFormat.JSON:
        _emit_json({
            "ok": True,
            "workload": str(workload),
            "profile": plan.profile.ref,
            "connection_ref": plan.binding.connection_ref,
            "compiled_plan_digest": plan.compiled_plan_digest,
        })
        return
    sys.stdout.write(
        f"ok: {workload} compiles with profile {plan.profile.ref} and binding {plan.binding.connection_ref}\n"
        f"compiled_plan_digest: {plan.compiled_plan_digest}\n"
    )


def _parse_date(value: str, option: str, output: OutputFormat) -> date:
    try:
        if len(value) != 10:
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        _fail([Diagnostic("cli.invalid_argument", option, "expected a date as YYYY-MM-DD")], output)


@app.command()
def plan(
    workload: WorkloadArg,
    *,
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
    scope_from: Annotated[
        str | None, typer.Option("--scope-from", help="First day of the interval (YYYY-MM-DD).")
    ] = None,
    scope_to: Annotated[
        str | None, typer.Option("--scope-to", help="Exclusive end day of the interval (YYYY-MM-DD).")
    ] = None,
    correction_revision: Annotated[
        int, typer.Option("--correction-revision", min=0, help="Governed correction revision.")
    ] = 0,
) -> None:
    """Compile and print the plan's identities, limits and digests (no secrets, no payload)."""
    compiled = _compile(workload, profiles_dir, bindings_dir, environment, output)
    identity: DeliveryIdentity | None = None
    if (scope_from is None) != (scope_to is None):
        _fail([Diagnostic("cli.invalid_argument", "--scope-from/--scope-to", "give both or neither")], output)
    if scope_from is not None and scope_to is not None:
        start = _parse_date(scope_from, "--scope-from", output)
        end = _parse_date(scope_to, "--scope-to", output)
        try:
            identity = delivery_identity(compiled, start, end, correction_revision)
        except CompileError as exc:
            _fail(exc.diagnostics, output)
    view = plan_view(compiled, identity)
    if output is OutputFormat.JSON:
        _emit_json(view)
    else:
        sys.stdout.write(_render_text(view))


def plan_view(plan: CompiledPlan, identity: DeliveryIdentity | None) -> dict[str, Any]:
    """The stable, redacted projection printed by ``delivery plan``.

    The credential locator is reduced to its scheme: it is not a secret, but it names where one
    lives, which an operator report does not need."""
    operation = plan.operation
    binding = plan.binding
    credential_scheme = None if binding.credential_ref is None else binding.credential_ref.split("://", 1)[0]
    delivery = None
    if identity is not None:
        delivery = {
            "delivery_key": identity.delivery_key,
            "receiver_mutation_key": identity.receiver_mutation_key,
            "target_effect_scope": {
                "bounds": identity.target_effect_scope.bounds,
                "from": identity.target_effect_scope.from_date.isoformat(),
                "to": identity.target_effect_scope.to_date.isoformat(),
            },
            "generation": {
                "scheduled_interval_end_utc": identity.scheduled_interval_end_utc,
                "correction_revision": identity.correction_revision,
            },
        }
    return {
        "schema_id": PLAN_VIEW_SCHEMA,
        "ok": True,
        "plan_schema_id": plan.schema_id,
        "compiled_plan_digest": plan.compiled_plan_digest,
        "route": {
            "logical_route_id": plan.workload.logical_route_id,
            "resource": plan.workload.resource,
            "mutation_kind": plan.workload.mutation.kind,
            "mapping_ref": plan.workload.mapping_ref,
            "preferred_window_days": plan.workload.preferred_window_days,
        },
        "environment": {
            "platform_instance_id": plan.environment.platform_instance_id,
            "tenant_id": plan.environment.tenant_id,
            "environment_id": plan.environment.environment_id,
            "namespace_revision": plan.environment.namespace_revision,
            "kind": plan.environment.kind,
        },
        "profile": {
            "ref": plan.profile.ref,
            "protocol_family": operation.protocol_family,
            "profile_schema_id": plan.profile.profile_schema_id,
            "method": operation.request.method,
            "path": operation.request.path,
            "mutation_fence": operation.mutation_fence.type,
            "effect_conflict_group": operation.effect_conflict_group,
        },
        "binding": {
            "connection_ref": binding.connection_ref,
            "authority_origin": binding.authority_origin,
            "local": binding.local,
            "auth_provider": binding.auth_provider,
            "credential_ref_scheme": credential_scheme,
            "remote_principal_id": binding.remote_principal_id,
            "remote_account_id": binding.remote_account_id,
            "remote_resource_namespace": binding.remote_resource_namespace,
        },
        "identities": plan.digests.model_dump(mode="json"),
        "limits": operation.limits.model_dump(mode="json"),
        "timeouts_ms": operation.timeouts.model_dump(mode="json"),
        "required_capabilities": list(plan.required_capabilities),
        "delivery": delivery,
    }


def _render_text(view: dict[str, Any]) -> str:
    lines: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key in value:
                walk(f"{prefix}.{key}" if prefix else key, value[key])
        elif isinstance(value, list):
            lines.append(f"{prefix}: {', '.join(str(item) for item in value)}")
        else:
            lines.append(f"{prefix}: {'-' if value is None else value}")

    walk("", view)
    return "\n".join(lines) + "\n"


class DocumentKind(StrEnum):
    WORKLOAD = "workload"
    PROFILE = "profile"
    BINDING = "binding"
    ENVIRONMENT = "environment"
    PLAN = "plan"


@app.command()
def schema(kind: Annotated[DocumentKind, typer.Argument(help="Which document.", show_default=False)]) -> None:
    """Print the closed JSON Schema (Draft 2020-12) of a document kind, for editors and validators."""
    _emit_json(document_schema(kind.value))


@app.command("check-design-contract")
def check_design_contract(
    path: Annotated[
        Path | None, typer.Argument(help="Design contract YAML [default: the bundled one].", show_default=False)
    ] = None,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """Validate the machine-readable design contract (states, transitions, error catalog)."""
    try:
        # Lazy: the design checker is an optional component with its own dependencies.
        from sink.design.command import check_design_contract as run  # noqa: PLC0415
    except ImportError:
        sys.stderr.write("error[cli.unavailable] the design contract checker is not installed\n")
        raise typer.Exit(int(ExitClass.UNAVAILABLE)) from None
    raise typer.Exit(run(path, output.value))


# Typer vendors click; its UsageError (bad option value, unknown option, missing argument) is
# reachable only as a base class of the public BadParameter.
_UsageError: type[Exception] = next(
    base for base in typer.BadParameter.__mro__ if base.__name__ == "UsageError"
)


def _wants_json(args: list[str]) -> bool:
    return "--format=json" in args or any(
        flag == "--format" and value == "json" for flag, value in itertools.pairwise(args)
    )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = app(args=args, prog_name="delivery", standalone_mode=False)
    except _UsageError as exc:
        exit_code = int(getattr(exc, "exit_code", ExitClass.INVALID_INPUT))
        if _wants_json(args):
            message = str(getattr(exc, "format_message", lambda: "invalid command line")())
            _emit_json({"ok": False, "exit_code": exit_code,
                        "errors": [{"code": "cli.usage", "location": "command line", "message": message}]})
        show = getattr(exc, "show", None)
        if callable(show):
            show()  # click's own usage text on stderr
        sys.stderr.write("error[cli.usage] invalid command line\n")
        raise SystemExit(exit_code) from None
    except Exception as exc:  # the last line of defence against a leaking traceback
        sys.stderr.write(f"delivery: internal error ({type(exc).__name__})\n")
        raise SystemExit(INTERNAL_ERROR_EXIT) from None
    raise SystemExit(code if isinstance(code, int) else 0)


# The commands that reach a receiver live in their own module; importing it registers them.
from sink import cli_runtime  # noqa: E402, F401

if __name__ == "__main__":
    main()
