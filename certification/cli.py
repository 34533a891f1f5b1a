"""``certify``: run the remote-effect fault matrix over sinks, sign the evidence, verify it offline,
and gate a run against a committed baseline.

Exit codes: 0 certified / verified / gate passed; 2 invalid input; 3 a harness service (receiver,
proxy) unavailable; 4 not certified: a safety counter above zero, a row that missed its
expectation, or an invalid run (a baseline sink was not caught where it must be) — or a gate or
verification failure.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from certification.airflow.command import register as register_airflow
from certification.artifacts import write_artifacts
from certification.bench.cli import bench_app
from certification.coverage import coverage
from certification.execute import RunRequest, execute
from certification.gallery_command import gallery as gallery_command
from certification.gate import gate as run_gate
from certification.identity_matrix import IdentityMatrixFailed
from certification.journal_backend import (
    JournalChoice,
    JournalChoiceError,
    JournalUnavailable,
    journal_provider,
    parse_journal_choice,
)
from certification.lanes import DEFAULT_LANES
from certification.matrix import live_receiver_url
from certification.netns import isolation_mode
from certification.report.command import report as report_command
from certification.scenarios import SERVER_FAULTS, CatalogError, Row, bundled_rows, load_catalogs
from certification.services import RuleRefused, ServiceUnavailable
from certification.signing import SigningError, build_test_result_predicate, generate_key, load_signer, sign_artifact
from certification.sinks import SinkFileError, SinkSpec, bundled_sinks, load_sink
from certification.time_spent import describe, summary_facts, time_spent
from certification.verdicts import RowOutcome
from certification.verify import VerificationFailed, verify_artifact
from certification.verify_run import verify_run

app = typer.Typer(name="certify", help="Certify REST bulk delivery sinks under injected faults.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
app.add_typer(bench_app, name="bench")
register_airflow(app)
err = Console(stderr=True)
IDENTITY_EXAMPLES, IDENTITY_EXAMPLES_QUICK = 200, 25
QUICK_ROWS = ("none", "cut.after_commit", "cut.request", "kill.after_commit", "status.503.retry_after",
              "failpoint.http.submit.after_body_sent", "failpoint.journal.record_submit_result.before",
              # --journal postgres only (left out of other runs): the journal server killed under the sink.
              "journal_kill.sigkill.journal.reserve_submitting.after",
              "journal_kill.immediate.journal.record_submit_result.before")


def cpu_seconds() -> float:
    """CPU of this process and of every child it reaped (the sinks, receivers, proxies)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _fail(code: str, message: str, exit_code: int) -> typer.Exit:
    err.print(f"error[{code}] {message}", markup=False, highlight=False)
    return typer.Exit(exit_code)


def _quick(row_id: str, *, personality_prefix: bool) -> bool:
    """A quick row by its id after the family (``sync.cut.request``). In a catalog named on the command
    line, also after a personality's prefix (``sync.stripe.cut.request``), so ``--catalog X --quick``
    keeps X's quick rows; the bundled quick matrix stays the rows without a prefix."""
    tail = row_id.split(".", 1)[1]
    return tail in QUICK_ROWS or (personality_prefix and tail.split(".", 1)[-1] in QUICK_ROWS)


def _rows(catalogs: Sequence[Path], only: Sequence[str], quick: bool) -> list[Row]:
    rows = load_catalogs(catalogs) if catalogs else bundled_rows()
    if quick:
        rows = [row for row in rows if _quick(row.row_id, personality_prefix=bool(catalogs))]
    if only:
        unknown = sorted(set(only) - {row.row_id for row in rows})
        if unknown:
            raise _fail("certify.unknown_row", f"no row {unknown[0]!r} in the catalog", 2)
        rows = [row for row in rows if row.row_id in set(only)]
    return rows


def _rows_for_journal(rows: list[Row], choice: JournalChoice, *, named: bool) -> list[Row]:
    """Rows that kill a journal server run where the harness owns one (``--journal postgres``): SQLite
    has no server, and a server the caller gave is never killed. Left out with a note; named with
    ``--only`` they are refused (exit 2)."""
    if choice.kind == "postgres":
        return rows
    server_rows = [row for row in rows if row.fault.type in SERVER_FAULTS]
    if server_rows and named:
        raise CatalogError(f"row {server_rows[0].row_id} kills the journal server: run it with --journal postgres")
    if server_rows:
        err.print(f"note: {len(server_rows)} journal-server row(s) left out: they kill a throwaway PostgreSQL "
                  "cluster (--journal postgres)", markup=False, highlight=False)
    return [row for row in rows if row.fault.type not in SERVER_FAULTS]


def _sinks(names: Sequence[str]) -> list[SinkSpec]:
    """The first sink is the certified one; every other must be a baseline by its own file. The
    bundled baselines join a run that names none, so every run proves its faults real."""
    bundled = bundled_sinks()
    chosen = [bundled[name] if name in bundled else load_sink(Path(name)) for name in names] or [bundled["reference"]]
    for spec in chosen[1:]:
        if spec.role != "baseline":
            raise SinkFileError(f"sink {spec.name} has role {spec.role}: only the first --sink is certified, "
                                "every other must be a baseline")
    names_chosen = [spec.name for spec in chosen]
    if len(set(names_chosen)) != len(names_chosen):
        raise SinkFileError("the same sink name twice in one run")
    if len(chosen) == 1:
        chosen.extend(spec for name, spec in sorted(bundled.items())
                      if spec.role == "baseline" and name != chosen[0].name)
    return chosen


def _table(outcomes: Sequence[RowOutcome], sinks: Sequence[SinkSpec]) -> Table:
    table = Table(title="remote-effect fault matrix", show_lines=False)
    table.add_column("row")
    for spec in sinks:
        table.add_column(spec.name)
    for outcome in outcomes:
        cells = []
        for result in outcome.results:
            c = result.counters
            counts = "" if c is None else \
                f" d{c.duplicates} f{c.false_successes} u{c.unproved_resends} l{c.silent_losses}" + \
                (f" o{c.out_of_scope}" if c.out_of_scope else "") + (f" w{c.wrong_content}" if c.wrong_content else "")
            ending = "" if result.ending is None or result.role != "certified" else f" [{result.ending.value}]"
            cells.append(result.verdict + counts + ending)
        table.add_row(outcome.row.row_id, *cells)
    return table


def _execute(request: RunRequest, journal: JournalChoice) -> tuple[list[RowOutcome], dict[str, Any] | None]:
    """The matrix on the chosen journal (started and stopped around it); a service error is a clear exit."""
    try:
        with journal_provider(journal) as journals:
            per_run = None if journal.kind == "sqlite" else journals.arguments
            return execute(replace(request, journal=per_run), err)
    except JournalUnavailable as exc:
        raise _fail("certify.journal_unavailable", str(exc), 2 if exc.missing_binaries else 3) from None
    except ServiceUnavailable as exc:
        raise _fail("certify.unavailable", str(exc), 3) from None
    except RuleRefused as exc:
        raise _fail("certify.invalid_rule", str(exc), 2) from None
    except IdentityMatrixFailed as exc:
        raise _fail("certify.identity_matrix", str(exc), 3) from None


@app.command()
def run(  # noqa: PLR0917 - typer options
    catalog: Annotated[list[Path] | None, typer.Option("--catalog", help="Scenario catalog(s) [default: bundled].")
                       ] = None,
    sink: Annotated[list[str] | None, typer.Option("--sink", help="Bundled sink name or sink file; the first is "
                                                                  "the certified one.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output directory [default: certification-out/UTC-TIME].")
                   ] = None,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
    only: Annotated[list[str] | None, typer.Option("--only", help="Run only this row (repeatable).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small matrix (CI).")] = False,
    key: Annotated[Path | None, typer.Option("--key", help="PEM private key [default: a new key in OUT/keys].")] = None,
    output_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    keep_work: Annotated[bool, typer.Option("--keep-work", help="Keep the per-row state directories.")] = False,
    receiver_url: Annotated[str | None, typer.Option("--receiver-url", help="A live receiver (through the proxy); "
                                                     "rows whose ground truth cannot be read are UNVERIFIED.")] = None,
    identity_examples: Annotated[int | None, typer.Option(
        "--identity-examples", min=0, max=5000, help="Hypothesis mutations in the identity conflict matrix "
        f"(default: {IDENTITY_EXAMPLES}; {IDENTITY_EXAMPLES_QUICK} with --quick; 0 with --only).")] = None,
    worker_isolation: Annotated[str, typer.Option(
        "--worker-isolation", help="auto: restarted workers in their own network namespace where root and "
        "`ip netns` allow it; process: fresh processes only.")] = "auto",
    parallel: Annotated[int, typer.Option("--parallel", min=1, max=16, help="Lanes, each with its own receiver "
                                          "and proxy (default: 6 per core, at most 12).")] = DEFAULT_LANES,
    journal: Annotated[str, typer.Option(
        "--journal", help="The journal of journal-using sinks: sqlite (embedded), postgres (one throwaway cluster "
        "for the run) or a postgresql:// DSN; each row-and-sink run gets its own database.")] = "sqlite",
    cold_start: Annotated[bool, typer.Option(
        "--cold-start", help="Start every sink process as a fresh interpreter, also a sink that declares "
        "warm_start (the reference sink: about 0.5 s of imports more per process).")] = False,
) -> None:
    """Run the fault matrix (embedded defaults: SQLite journal, mock receiver, fault proxy, 127.0.0.1)."""
    try:
        rows = _rows(catalog or [], only or [], quick)
        sinks = _sinks(sink or [])
        if cold_start:
            sinks = [spec.model_copy(update={"warm_start": None}) for spec in sinks]
        live = None if receiver_url is None else live_receiver_url(receiver_url)
        if worker_isolation not in ("auto", "process"):
            raise ValueError("--worker-isolation must be auto or process")
        journal_choice = parse_journal_choice(journal)
        rows = _rows_for_journal(rows, journal_choice, named=bool(only))
    except (CatalogError, SinkFileError, JournalChoiceError) as exc:
        raise _fail("certify.invalid_input", str(exc).splitlines()[0][:400], 2) from None
    except (ValidationError, ValueError, OSError) as exc:
        raise _fail("certify.invalid_input", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}", 2) from None
    if out is None:
        out = Path("certification-out") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    if (out / "test_artifacts").exists():
        raise _fail("certify.output_exists", f"{out} already holds evidence; evidence is never overwritten", 2)
    started, cpu_started = time.monotonic(), cpu_seconds()
    examples = identity_examples if identity_examples is not None else (
        0 if only else IDENTITY_EXAMPLES_QUICK if quick else IDENTITY_EXAMPLES)
    # A restarted host's network namespace has no route to the journal server (its 127.0.0.1 is its
    # own): on a PostgreSQL journal restarted hosts are fresh processes, and the artifacts say so.
    isolation = isolation_mode("process" if journal_choice.kind != "sqlite" else worker_isolation)
    outcomes, identity = _execute(RunRequest(rows, sinks, seed, parallel, live, examples, keep_work, isolation),
                                  journal_choice)
    certified = sinks[0].name
    spent = time_spent(outcomes, wall=time.monotonic() - started, cpu=cpu_seconds() - cpu_started)
    run_facts = {"fault_space": coverage([o.row for o in outcomes], journal_choice.backend).as_dict(),
                 **summary_facts(spent)}
    paths = write_artifacts(out, outcomes, seed=seed, certified=certified, identity=identity, isolation=isolation,
                            run_facts=run_facts, journal=journal_choice.facts())
    summary = json.loads(paths["summary"].read_bytes())
    try:
        key_path = key or generate_key(out / "keys").private
        signer = load_signer(key_path)
    except SigningError as exc:
        raise _fail("certify.key", str(exc), 2) from None
    failed = summary["failed_rows"]
    passed_rows = [o.row.row_id for o in outcomes if o.row.row_id not in failed]
    predicate = {"verdict": summary["verdict"], "certified_sink": certified, "seed": seed,
                 "rows": len(outcomes), "seconds": round(time.monotonic() - started, 1)}
    for name in ("matrix", "summary", "identity"):
        if name not in paths:
            continue
        sign_artifact(paths[name], signer, predicate=predicate, test_result=build_test_result_predicate(
            passed=summary["verdict"] == "PASS", configuration=[{"name": "seed", "value": str(seed)}],
            passed_tests=passed_rows, failed_tests=failed))
    if output_json:
        sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    else:
        Console().print(_table(outcomes, sinks))
        space = summary["fault_space"]
        Console().print(f"verdict: {summary['verdict']} ({len(outcomes)} rows, {predicate['seconds']} s wall, "
                        f"{summary['seconds']['cpu']} s CPU); fault-space coverage {space['coverage']:.1%} "
                        f"({space['covered']} of {space['meaningful']} meaningful cells; "
                        f"{space['journal_coverage']:.1%} of this journal's {space['journal_meaningful']}); "
                        f"journal {journal_choice.facts()['backend']}; evidence in {paths['matrix'].parent}",
                        markup=False, highlight=False)
        Console().print(describe(spent), markup=False, highlight=False)
    raise typer.Exit(0 if summary["verdict"] == "PASS" else 4)


@app.command()
def keygen(directory: Annotated[Path, typer.Argument(help="Where to write NAME.key and NAME.pub.")],
           name: Annotated[str, typer.Option("--name")] = "restproof-evidence") -> None:
    """Create an ECDSA P-256 signing key pair for evidence (the private key is written 0600)."""
    try:
        paths = generate_key(directory, name)
    except SigningError as exc:
        raise _fail("certify.key", str(exc), 2) from None
    typer.echo(f"private: {paths.private}\npublic:  {paths.public}")


@app.command()
def verify(artifact: Annotated[Path, typer.Argument(help="An artifact (JSON), or a run directory: every artifact, "
                                                    "signature and history of the run.")],
           key: Annotated[Path, typer.Option("--key", help="Pinned PEM public key.")],
           envelope: Annotated[Path | None, typer.Option("--envelope")] = None) -> None:
    """Verify evidence offline (own PAE verifier and securesystemslib): one artifact, or a whole run."""
    if artifact.is_dir():
        result = verify_run(artifact, key)
        for problem in result.problems:
            err.print(f"verify: {problem}", markup=False, highlight=False)
        typer.echo(f"verify: {'verified' if result.passed else 'FAILED'} ({len(result.verified)} signatures, "
                   f"{result.histories} histories bound to the signed matrix)")
        raise typer.Exit(0 if result.passed else 4)
    try:
        evidence = verify_artifact(artifact, key, envelope)
    except VerificationFailed as exc:
        raise _fail(f"verify.{exc.reason}", exc.detail, 4) from None
    typer.echo(f"verified: {artifact.name} sha256:{evidence.sha256} ({evidence.predicate_type})")


@app.command()
def gate(baseline: Annotated[Path, typer.Option("--baseline")], current: Annotated[Path, typer.Option("--current")],
         baseline_key: Annotated[Path, typer.Option("--baseline-key", help="Pinned public key of the baseline.")],
         current_key: Annotated[Path, typer.Option("--current-key", help="Pinned public key the current run must be "
                                                   "signed with (never read from inside the run).")]) -> None:
    """Fail on a non-PASS run, any safety counter, regression, missing row or worse or missing benchmark ratio."""
    result = run_gate(baseline, current, baseline_key=baseline_key, current_key=current_key)
    for problem in result.problems:
        err.print(f"gate: {problem}", markup=False, highlight=False)
    typer.echo(f"gate: {'PASS' if result.passed else 'FAIL'} ({result.rows_compared} rows compared)")
    raise typer.Exit(0 if result.passed else 4)


app.command(name="report")(report_command)
app.command(name="gallery")(gallery_command)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # a CI cancel or `kill`: stop as on Ctrl-C, every started service with it


def main() -> None:
    # Python's default for SIGTERM ends the process on the spot: the receivers, proxies and sinks the
    # lanes started would live on as orphans. As a KeyboardInterrupt, the lanes stop them first.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        app(prog_name="certify")
    except SystemExit:
        raise
    except Exception as exc:  # never a traceback: it could carry paths or payload fragments
        sys.stderr.write(f"certify: internal error ({type(exc).__name__})\n")
        raise SystemExit(1) from None
