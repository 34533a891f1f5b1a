"""``delivery gc --dry-run``: list the artifacts no admitted parent references.

Only the dry run exists: it lists, it never deletes. With ``--journal`` (a SQLite journal file) a
root counts only when the journal admitted its parent with the root's parent_plan_digest; without
it every root counts. Artifacts younger than ``--grace-seconds`` are reported apart: a
preparation may still be publishing them.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from sink.artifacts import ArtifactError, GcReport, LocalArtifactStore, collect
from sink.cli.common import FormatOpt, OutputFormat, app, emit_json, fail_with
from sink.contracts.errors import ExitClass

GC_VIEW_SCHEMA = "restproof.artifact_gc_view.v1"


@app.command()
def gc(
    *,
    artifacts_dir: Annotated[Path, typer.Option("--artifacts-dir", help="The artifact store directory.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List unreferenced artifacts (required).")] = False,
    journal: Annotated[
        Path | None, typer.Option("--journal", help="SQLite journal deciding which roots are admitted.")
    ] = None,
    grace_seconds: Annotated[float, typer.Option("--grace-seconds", min=0, help="Skip younger artifacts.")] = 3600.0,
    output: FormatOpt = OutputFormat.TEXT,
) -> None:
    """List artifacts that no admitted parent references (never deletes anything)."""
    if not dry_run:
        fail_with("cli.invalid_argument", "--dry-run", "only the dry run is supported: gc never deletes",
                  ExitClass.INVALID_INPUT, output)
    if not (artifacts_dir / "objects").is_dir():
        fail_with("cli.invalid_argument", "--artifacts-dir", "not an artifact store", ExitClass.INVALID_INPUT, output)
    store = LocalArtifactStore(artifacts_dir)
    try:
        if journal is None:
            report = collect(store, grace_seconds=grace_seconds)
        else:
            report = _with_journal(store, journal, grace_seconds, output)
    except ArtifactError as exc:
        fail_with(exc.code, str(artifacts_dir), type(exc).__name__, ExitClass.UNAVAILABLE, output)
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


def _with_journal(store: LocalArtifactStore, journal_path: Path, grace_seconds: float,
                  output: OutputFormat) -> GcReport:
    if not journal_path.is_file():
        fail_with("cli.invalid_argument", "--journal", "no journal file there", ExitClass.INVALID_INPUT, output)
    from sink.journal.markers import FileMarkerStore  # noqa: PLC0415 - only gc with a journal needs it
    from sink.journal.sqlite.adapter import open_sqlite_journal  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="restproof-gc-") as scratch:
        opened = open_sqlite_journal(journal_path, markers=FileMarkerStore(Path(scratch)))
        try:
            def admitted(parent_id: str) -> str | None:
                parent = opened.get_parent(parent_id)
                return None if parent is None else parent.parent_plan_digest

            return collect(store, admitted_plan_digest=admitted, grace_seconds=grace_seconds)
        finally:
            opened.close()
