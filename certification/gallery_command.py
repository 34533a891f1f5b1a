"""``certify gallery``: run the gallery of wrong sinks and fail unless every checker was caught failing
where it must, and every correct outside sink passed (docs/certification.md, "The gallery")."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from certification.gallery import GALLERY, GalleryError, load_gallery, run_gallery
from certification.lanes import DEFAULT_LANES
from certification.matrix import family_services
from certification.netns import isolation_mode
from certification.scenarios import CatalogError, bundled_rows
from certification.services import RuleRefused, ServiceUnavailable
from certification.sinks import SinkFileError

err = Console(stderr=True)


def _fail(code: str, message: str, exit_code: int) -> typer.Exit:
    err.print(f"error[{code}] {message}", markup=False, highlight=False)
    return typer.Exit(exit_code)


def gallery(  # noqa: PLR0917 - typer options
    manifest: Annotated[Path, typer.Option("--gallery", help="Gallery manifest [default: the bundled one].")
                        ] = GALLERY,
    sink: Annotated[list[str] | None, typer.Option("--sink", help="Only these gallery sinks (by name).")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
    parallel: Annotated[int, typer.Option("--parallel", min=1, max=16)] = DEFAULT_LANES,
    output_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON on stdout.")] = False,
    keep_work: Annotated[bool, typer.Option("--keep-work")] = False,
) -> None:
    """Run the wrong sinks (each must FAIL where its checker must catch it) and the correct ones (PASS)."""
    try:
        expectations = load_gallery(manifest, bundled_rows())
    except (GalleryError, CatalogError, SinkFileError) as exc:
        raise _fail("certify.invalid_input", str(exc).splitlines()[0][:400], 2) from None
    if sink:
        unknown = sorted(set(sink) - {e.sink.name for e in expectations})
        if unknown:
            raise _fail("certify.unknown_sink", f"no gallery sink {unknown[0]!r}", 2)
        expectations = [e for e in expectations if e.sink.name in set(sink)]
    isolation = isolation_mode("auto")
    work_root = Path(tempfile.mkdtemp(prefix="restproof-gallery-"))
    try:
        findings = run_gallery(
            expectations, lambda row, work, lane_seed: family_services(row, work, lane_seed, None, isolation),
            work_root, seed=seed, lanes=parallel, progress=lambda done: err.print(f"gallery: {done}", highlight=False))
    except ServiceUnavailable as exc:
        raise _fail("certify.unavailable", str(exc), 3) from None
    except RuleRefused as exc:
        raise _fail("certify.invalid_rule", str(exc), 2) from None
    finally:
        if not keep_work:
            shutil.rmtree(work_root, ignore_errors=True)
    if output_json:
        sys.stdout.write(json.dumps([{"sink": f.expectation.sink.name, "row": f.expectation.row.row_id,
                                      "must": f.expectation.must, "checker": f.expectation.checker,
                                      "verdict": f.verdict, "held": f.held, "reasons": list(f.reasons)}
                                     for f in findings], sort_keys=True) + "\n")
    else:
        table = Table(title="gallery of wrong sinks")
        for column in ("sink", "row", "must", "checker", "verdict", "held"):
            table.add_column(column)
        for finding in findings:
            e = finding.expectation
            table.add_row(e.sink.name, e.row.row_id, e.must, e.checker or "", finding.verdict,
                          "yes" if finding.held else "NO")
        Console().print(table)
    broken = [f for f in findings if not f.held]
    for finding in broken:
        e = finding.expectation
        err.print(f"gallery: {e.sink.name} on {e.row.row_id} must {e.must}"
                  + (f" by {e.checker}" if e.checker else "") + f"; it got {finding.verdict}: "
                  + "; ".join(finding.reasons)[:600], markup=False, highlight=False)
    typer.echo(f"gallery: {len(findings) - len(broken)} of {len(findings)} expectations held")
    raise typer.Exit(0 if not broken else 4)
