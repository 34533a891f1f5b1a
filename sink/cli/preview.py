"""``delivery preview WORKLOAD``: freeze, plan and seal offline, and show what would be sent.

The seed's request preview/inspector: no journal, no credential resolution, no network. Each
child is listed with its scope, rows, decoded and wire bytes, digests and the rendered request
metadata (method, path and query, semantic headers — never a credential, none is resolved —
content type, multipart parts and file name). Artifacts go to ``--artifacts-dir`` (kept) or to
a temporary directory removed afterwards. A progress line on stderr for large sources.
"""

from __future__ import annotations

import sys
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
    compile_workload,
    emit_json,
    fail,
    fail_with,
    parse_scope,
)

if TYPE_CHECKING:  # the sink is imported by the command (start-up cost: see sink.cli.common)
    from sink.contracts.plan import CompiledPlan
    from sink.preparation.sealing import SealedTopology

PREVIEW_SCHEMA = "restproof.delivery_preview.v1"
PROGRESS_MIN_BYTES = 8 * 1024 * 1024


class _Progress:
    def __init__(self, enabled: bool | None) -> None:
        self._forced = enabled
        self._shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        show = self._forced if self._forced is not None else (sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES)
        if not show or total <= 0:
            return
        width = 30
        filled = min(width, done * width // total)
        sys.stderr.write(f"\r{stage:<8} [{'#' * filled}{'.' * (width - filled)}] {done * 100 // total:3d}% "
                         f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB")
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\n")


def preview_view(plan: CompiledPlan, topology: SealedTopology, parent_plan_digest: str,
                 intents: list[dict[str, Any]]) -> dict[str, Any]:
    from sink.identity import semantic_headers  # noqa: PLC0415 - start-up cost (see sink.cli.common)

    frozen = topology.frozen
    children = []
    for sealed, intent in zip(topology.children, intents, strict=True):
        rendered = sealed.spec.rendered
        parts: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in rendered.scalar_parts]
        if rendered.multipart:
            parts.append({"name": rendered.payload_part_name, "filename": rendered.filename,
                          "content_type": rendered.part_content_type, "bytes": sealed.payload_bytes})
        children.append({
            "ordinal": sealed.spec.ordinal,
            "scope": {"bounds": "[)", "from": sealed.spec.scope_from.isoformat(),
                      "to": sealed.spec.scope_to.isoformat()},
            "row_interval": [sealed.spec.row_start, sealed.spec.row_end],
            "rows": sealed.rows,
            "decoded_bytes": sealed.decoded_bytes,
            "wire_bytes": sealed.wire_bytes,
            "decoded_digest": sealed.decoded_digest,
            "payload_digest": sealed.payload_digest,
            "wire_digest": sealed.wire_digest,
            "payload_ref": sealed.manifest_ref,
            "delivery_key": sealed.spec.delivery_key,
            "receiver_mutation_key": sealed.spec.receiver_mutation_key,
            "rendered_request_semantics_digest": intent["rendered_request_semantics_digest"],
            "mutation_intent_digest": intent["mutation_intent_digest"],
            "request": {
                "method": rendered.method,
                "path_and_query": rendered.path_and_query,
                "semantic_headers": semantic_headers(dict(rendered.headers)),
                "content_type": sealed.content_type,
                "content_encoding": rendered.content_encoding,
                "multipart": {"boundary": sealed.boundary, "parts": parts} if rendered.multipart else None,
            },
        })
    return {
        "schema_id": PREVIEW_SCHEMA,
        "ok": True,
        "compiled_plan_digest": plan.compiled_plan_digest,
        "profile": plan.profile.ref,
        "parent": {
            "delivery_key": topology.parent_identity.delivery_key,
            "scope": {"bounds": "[)", "from": frozen.scope_from.isoformat(), "to": frozen.scope_to.isoformat()},
            "frozen_parent_digest": frozen.digest,
            "content_digest": frozen.rows_ref,
            "row_count": frozen.row_count,
            "decoded_row_bytes": frozen.rows_bytes,
            "source_version": frozen.source_version,
        },
        "planner_algorithm_version": topology.planner_algorithm_version,
        "coverage_proof_digest": topology.coverage.digest,
        "parent_plan_digest": parent_plan_digest,
        "codec": topology.sealer_identity,
        "children": children,
    }


def _render_text(view: dict[str, Any]) -> str:
    parent = view["parent"]
    lines = [
        f"parent {parent['scope']['from']}..{parent['scope']['to']} rows={parent['row_count']} "
        f"frozen={parent['frozen_parent_digest']}",
        f"parent_plan_digest: {view['parent_plan_digest']}  planner: {view['planner_algorithm_version']}",
    ]
    for child in view["children"]:
        request = child["request"]
        lines.append(
            f"child {child['ordinal']}: {child['scope']['from']}..{child['scope']['to']} rows={child['rows']} "
            f"decoded={child['decoded_bytes']} wire={child['wire_bytes']}")
        lines.append(f"  {request['method']} {request['path_and_query']}  {request['content_type']}")
        lines.append(f"  wire_digest={child['wire_digest']} intent={child['mutation_intent_digest']}")
    return "\n".join(lines) + "\n"


def _location(workload: Path) -> str:
    return f"{workload}#source"


@app.command()
def preview(
    workload: WorkloadArg,
    *,
    scope_from: Annotated[str, typer.Option("--scope-from", help="First day of the interval (YYYY-MM-DD).")],
    scope_to: Annotated[str, typer.Option("--scope-to", help="Exclusive end day of the interval (YYYY-MM-DD).")],
    profiles_dir: ProfilesOpt = None,
    bindings_dir: BindingsOpt = None,
    environment: EnvironmentOpt = None,
    output: FormatOpt = OutputFormat.TEXT,
    correction_revision: Annotated[
        int, typer.Option("--correction-revision", min=0, help="Governed correction revision.")
    ] = 0,
    artifacts_dir: Annotated[
        Path | None, typer.Option("--artifacts-dir", help="Keep the sealed artifacts here [default: temporary].")
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress", help="Progress on stderr [default: large sources on a terminal]."),
    ] = None,
) -> None:
    """Freeze, plan and seal offline; print every child's scope, sizes, digests and request metadata."""
    # Imported here, not at the top: start-up cost (see sink.cli.common).
    from sink.artifacts import ArtifactError  # noqa: PLC0415
    from sink.compiler import CompileError, Diagnostic  # noqa: PLC0415
    from sink.contracts.errors import DeliveryError, ExitClass  # noqa: PLC0415
    from sink.payload.compression import CompressionUnavailable  # noqa: PLC0415
    from sink.preparation import build_topology, seal_all  # noqa: PLC0415
    from sink.runtime.composition import open_offline  # noqa: PLC0415
    from sink.source import SourceError, source_port  # noqa: PLC0415

    plan = compile_workload(workload, profiles_dir, bindings_dir, environment, output)
    start, end = parse_scope(scope_from, scope_to, output)
    if plan.workload.source is None:
        fail([Diagnostic("contract.missing_field", _location(workload), "preview needs the workload's source")],
             output)
    meter = _Progress(progress)
    with open_offline(artifacts_dir) as store:
        try:
            port = source_port(plan.workload.source, workload.absolute().parent)
            topology = seal_all(plan, start, end, source=port, store=store, correction_revision=correction_revision,
                                progress=meter)
            intent = build_topology(topology, store)
        except CompileError as exc:
            fail(exc.diagnostics, output)
        except SourceError as exc:
            meter.close()
            fail_with(exc.code, _location(workload), exc.message, exc.exit_class, output,
                      evidence=dict(exc.evidence))
        except DeliveryError as exc:
            meter.close()
            fail_with(exc.code.value, str(workload), exc.detail, exc.exit_class, output)
        except (ArtifactError, CompressionUnavailable) as exc:
            meter.close()
            fail_with(getattr(exc, "code", "artifact.error"), str(artifacts_dir or "artifacts"),
                      type(exc).__name__, ExitClass.UNAVAILABLE, output)
        meter.close()
    view = preview_view(plan, topology, intent.parent_plan_digest, [c.descriptor for c in intent.children])
    if output is OutputFormat.JSON:
        emit_json(view)
    else:
        sys.stdout.write(_render_text(view))
