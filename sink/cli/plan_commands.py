"""``delivery check``, ``plan``, ``schema`` and ``check-design-contract`` (offline, no payload)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sink.cli.common import (
    PLAN_VIEW_SCHEMA,
    BindingsOpt,
    EnvironmentOpt,
    FormatOpt,
    OutputFormat,
    ProfilesOpt,
    WorkloadArg,
    app,
    compile_workload,
    emit_json,
    fail,
    parse_date,
)

if TYPE_CHECKING:  # the sink is imported by each command (start-up cost: see sink.cli.common)
    from sink.contracts.plan import CompiledPlan, DeliveryIdentity


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
    plan = compile_workload(workload, profiles_dir, bindings_dir, environment, output)
    if output is OutputFormat.JSON:
        emit_json({
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
    from sink.compiler import CompileError, Diagnostic, delivery_identity  # noqa: PLC0415 - start-up cost

    compiled = compile_workload(workload, profiles_dir, bindings_dir, environment, output)
    identity: DeliveryIdentity | None = None
    if (scope_from is None) != (scope_to is None):
        fail([Diagnostic("cli.invalid_argument", "--scope-from/--scope-to", "give both or neither")], output)
    if scope_from is not None and scope_to is not None:
        start = parse_date(scope_from, "--scope-from", output)
        end = parse_date(scope_to, "--scope-to", output)
        try:
            identity = delivery_identity(compiled, start, end, correction_revision)
        except CompileError as exc:
            fail(exc.diagnostics, output)
    view = plan_view(compiled, identity)
    if output is OutputFormat.JSON:
        emit_json(view)
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
    from sink.contracts.schemas import document_schema  # noqa: PLC0415 - start-up cost

    emit_json(document_schema(kind.value))


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
        from sink.contracts.errors import ExitClass  # noqa: PLC0415 - start-up cost

        sys.stderr.write("error[cli.unavailable] the design contract checker is not installed\n")
        raise typer.Exit(int(ExitClass.UNAVAILABLE)) from None
    raise typer.Exit(run(path, output.value))


