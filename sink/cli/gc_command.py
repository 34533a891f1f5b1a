"""``delivery gc --dry-run``: list the artifacts no admitted parent references.

Only the dry run exists: it lists, it never deletes. With ``--journal`` (``sqlite:PATH`` or a
``postgresql://`` DSN, parsed like every other command's, opened read-only) a root counts only
when the journal admitted its parent with the root's parent_plan_digest; without it every root
counts. Artifacts younger than ``--grace-seconds`` are reported apart: a preparation may still be
publishing them.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sink.cli.common import FormatOpt, OutputFormat, app, emit_json, fail_with

if TYPE_CHECKING:  # the sink is imported by the command (start-up cost: see sink.cli.common)
    from sink.artifacts import GcReport

GC_VIEW_SCHEMA = "restproof.artifact_gc_view.v1"


@app.command()
def gc(
    *,
    artifacts_dir: Annotated[Path, typer.Option("--artifacts-dir", help="The artifact store directory.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List unreferenced artifacts (required).")] = False,
    journal: Annotated[
        str | None, typer.Option("--journal", help="sqlite:PATH or a postgresql:// DSN deciding which roots count.")
    ] = None,
    grace_seconds: Annotated[float, typer.Option("--grace-seconds", min=0, help="Skip younger artifacts.")] = 3600.0,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """List artifacts that no admitted parent references (never deletes anything)."""
    # Imported here, not at the top: start-up cost (see sink.cli.common).
    from sink.artifacts import ArtifactError, collect  # noqa: PLC0415
    from sink.contracts.errors import ExitClass  # noqa: PLC0415
    from sink.journal.port import JournalConfigurationError, JournalError  # noqa: PLC0415
    from sink.runtime.composition import open_offline  # noqa: PLC0415

    if not dry_run:
        fail_with("cli.invalid_argument", "--dry-run", "only the dry run is supported: gc never deletes",
                  ExitClass.INVALID_INPUT, output)
    if not (artifacts_dir / "objects").is_dir():
        fail_with("cli.invalid_argument", "--artifacts-dir", "not an artifact store", ExitClass.INVALID_INPUT, output)
    try:
        if journal is None:
            with open_offline(artifacts_dir) as store:
                report = collect(store, grace_seconds=grace_seconds)
        else:
            report = _with_journal(journal, artifacts_dir, grace_seconds)
    except JournalConfigurationError as exc:
        fail_with(exc.code, "--journal", str(exc), ExitClass.INVALID_INPUT, output)
    except ArtifactError as exc:
        fail_with(exc.code, str(artifacts_dir), type(exc).__name__, ExitClass.UNAVAILABLE, output)
    except JournalError as exc:
        fail_with(getattr(exc, "code", "journal.unavailable"), "--journal", type(exc).__name__,
                  ExitClass.UNAVAILABLE, output)
    view = {
        "schema_id": GC_VIEW_SCHEMA,
        "ok": True,
        "dry_run": True,
        "live": len(report.live),
        "unreferenced": list(report.unreferenced),
        "young": list(report.young),
        "dead_roots": list(report.dead_roots),
    }
    if output is OutputFormat.JSON:
        emit_json(view)
        return
    for digest in report.unreferenced:
        sys.stdout.write(f"unreferenced {digest}\n")
    sys.stdout.write(f"{len(report.live)} live, {len(report.unreferenced)} unreferenced, "
                     f"{len(report.young)} too young, {len(report.dead_roots)} unadmitted roots\n")


def _with_journal(journal: str, artifacts_dir: Path, grace_seconds: float) -> GcReport:
    from sink.artifacts import collect  # noqa: PLC0415 - start-up cost (see sink.cli.common)
    from sink.runtime.composition import Locations, open_inspection, parse_journal  # noqa: PLC0415

    # gc reads no marker: a never-created marker location satisfies the read-only view.
    with tempfile.TemporaryDirectory(prefix="restproof-gc-") as scratch:
        locations = Locations(parse_journal(journal), artifacts_dir, Path(scratch) / "markers")
        with open_inspection(locations) as view:
            def admitted(parent_id: str) -> str | None:
                parent = view.journal.get_parent(parent_id)
                return None if parent is None else parent.parent_plan_digest

            return collect(view.store, admitted_plan_digest=admitted, grace_seconds=grace_seconds)
