"""``certify report DIR``: one self-contained HTML page for a run (no fetch of any kind).

Exit codes: 0 the page is written and every signature verifies (and the gate passed, when a
baseline is given); 2 invalid input (no readable matrix and summary, a baseline without its key,
an unwritable output); 4 the page is written but something is not trusted: a signature that does
not verify, an artifact that does not parse, a history that is not the one signed, or a gate
failure. The page itself says which.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from certification.gate import GateResult
from certification.gate import gate as run_gate
from certification.report.evidence import EvidenceUnreadable, load_run
from certification.report.page import render, trusted

err = Console(stderr=True)
DEFAULT_KEY = Path("keys") / "restproof-evidence.pub"
PROTECTED = ("test_artifacts", "keys")
"""The page is a view: it never replaces a signed artifact or a key (--out is checked against these)."""


def _fail(code: str, message: str, exit_code: int) -> typer.Exit:
    err.print(f"error[{code}] {message}", markup=False, highlight=False, soft_wrap=True)  # one line, never wrapped
    return typer.Exit(exit_code)


def _write(out: Path, page: str) -> None:
    """Whole or not at all: a reader never opens half a page."""
    out.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=out.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(page)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def report(
    directory: Annotated[Path, typer.Argument(help="A `certify run --out` directory.")],
    out: Annotated[Path | None, typer.Option("--out", help="The HTML file [default: DIR/report.html].")] = None,
    key: Annotated[Path | None, typer.Option("--key", help="The run's public key [default: DIR/keys/"
                                                            "restproof-evidence.pub].")] = None,
    baseline: Annotated[Path | None, typer.Option("--baseline", help="Run the gate against this baseline run.")
                        ] = None,
    baseline_key: Annotated[Path | None, typer.Option("--baseline-key", help="The baseline's public key.")] = None,
) -> None:
    """Write one self-contained HTML page: the matrix grid, per-row timelines, bench plots, gate, signatures."""
    if (baseline is None) != (baseline_key is None):
        raise _fail("report.invalid_input", "--baseline and --baseline-key go together", 2)
    if baseline is not None and key is None:
        raise _fail("report.invalid_input", "--key is required with --baseline: the gate pins the current run's "
                    "public key, it never takes one from inside the run", 2)
    key = key or directory / DEFAULT_KEY
    try:
        evidence = load_run(directory, key)
    except EvidenceUnreadable as exc:
        raise _fail("report.unreadable", str(exc), 2) from None
    gate_result: GateResult | None = None
    if baseline is not None and baseline_key is not None:
        gate_result = run_gate(baseline, directory, baseline_key=baseline_key, current_key=key)
    page = render(evidence, source=str(directory), key=str(key), gate=gate_result)
    out = out or directory / "report.html"
    if any(out.resolve().is_relative_to((directory / part).resolve()) for part in PROTECTED):
        raise _fail("report.invalid_input", f"{out}: the page is never written among the evidence or the keys", 2)
    try:
        _write(out, page)
    except OSError as exc:
        raise _fail("report.unwritable", f"{out}: {exc.strerror}", 2) from None
    good = trusted(evidence) and (gate_result is None or gate_result.passed)
    typer.echo(f"report: {out} ({len(evidence.matrix.rows)} rows, {'trusted' if good else 'NOT trusted'})")
    raise typer.Exit(0 if good else 4)
