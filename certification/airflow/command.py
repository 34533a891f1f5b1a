"""``certify airflow`` (one Airflow version, in its own fresh virtual environment) and
``certify airflow-matrix`` (the latest patch of every declared minor, signed results committed
under test_artifacts/airflow-compat/).

Exit codes: 0 the acceptance passed; 2 invalid input; 3 Airflow or a harness service could not be
had (an environment that cannot be built, a process that does not start); 4 a scenario failed, a
sentinel leaked, or the run is invalid (a baseline did not show its duplicate).
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from certification.airflow.acceptance import run_acceptance
from certification.airflow.evidence import ARTIFACT, ARTIFACTS
from certification.airflow.stack import AirflowUnavailable
from certification.airflow.venvs import LATEST_PATCHES, VenvFailed, build_venv
from certification.canonical_json import canonical_bytes, with_content_digest
from certification.publish import publish_bytes
from certification.services import ServiceUnavailable
from certification.signing import SigningError, build_test_result_predicate, generate_key, load_signer, sign_artifact

COMPAT_DIR = Path("test_artifacts") / "airflow-compat"
_VERSION = re.compile(r"^(2|3)\.\d{1,2}\.\d{1,3}\Z")
err = Console(stderr=True)


def _fail(code: str, message: str, exit_code: int) -> typer.Exit:
    err.print(f"error[{code}] {message}", markup=False, highlight=False)
    return typer.Exit(exit_code)


def _document(body: dict[str, Any]) -> dict[str, Any]:
    return with_content_digest({"producer": {"name": "restproof certify airflow", "version": "0.1.0"}, **body})


def write_signed(path: Path, document: dict[str, Any], key: Path | None, keys_dir: Path) -> Path:
    """Publish the canonical document create-if-absent and sign it (both envelopes)."""
    if path.exists():
        raise _fail("certify.output_exists", f"{path} exists; evidence is never overwritten", 2)
    try:
        signer = load_signer(key or generate_key(keys_dir).private)
    except SigningError as exc:
        raise _fail("certify.key", str(exc), 2) from None
    publish_bytes(path, canonical_bytes(document))
    passed = [r["id"] for r in document["scenarios"] if r.get("passed")]
    failed = [r["id"] for r in document["scenarios"] if not r.get("passed")]
    sign_artifact(path, signer, predicate={"verdict": document["verdict"], "airflow_version":
                                           document["environment"]["airflow_version"], "quick": document["quick"]},
                  test_result=build_test_result_predicate(
                      passed=document["verdict"] == "PASS",
                      configuration=[{"name": "airflow_version", "value": document["environment"]["airflow_version"]}],
                      passed_tests=passed, failed_tests=failed))
    return path


def _print(document: dict[str, Any]) -> None:
    console = Console()
    figures = document["figures"]
    console.print(f"airflow {document['environment']['airflow_version']}: {document['verdict']} "
                  f"({document['seconds']} s)", markup=False, highlight=False)
    for row in document["scenarios"] + document["baselines"]:
        wt = row.get("worker_time", {})
        detail = ", ".join(f"{k}={v}" for k, v in (row.get("checks") or {}).items() if not v) or row.get("error", "")
        console.print(f"  {row['id']}: {'ok' if row.get('passed', True) else 'FAILED'} submissions="
                      f"{row.get('submissions', row.get('posts_at_proxy', '-'))} effects={row.get('effects', '-')} "
                      f"worker_s={wt.get('task_process_seconds_after_submit', '-')} {detail}",
                      markup=False, highlight=False)
    seed = "met" if figures.get("meets_seed_target") else "NOT met"
    ours = "met" if figures.get("meets_ours_target") else "NOT met"
    console.print(f"  worker time after submission (max per delivery): task process "
                  f"{figures.get('max_task_process_seconds_after_submit')} s (seed target <= "
                  f"{figures.get('seed_target_seconds')} s: {seed}), operator "
                  f"{figures.get('max_operator_seconds_after_submit')} s (ours <= "
                  f"{figures.get('ours_target_seconds')} s: {ours}); worker-resident baseline "
                  f"{figures.get('worker_resident_baseline_seconds_after_submit')} s", markup=False, highlight=False)
    console.print(f"  sentinels: {'no leak' if document['sentinel_scan']['passed'] else document['sentinel_scan']}",
                  markup=False, highlight=False)


def _stop_cleanly_on_sigterm() -> None:
    """SIGTERM (or SIGINT, which a background job ignores) unwinds the harness's context managers,
    so every Airflow process, the receiver, the proxy and the PostgreSQL cluster are stopped."""
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def _run_one(version: str, venv_root: Path, work: Path, quick: bool, preload: bool = True) -> dict[str, Any]:
    _stop_cleanly_on_sigterm()
    if not _VERSION.fullmatch(version):
        raise _fail("certify.invalid_input", "--airflow-version takes a release such as 3.2.2", 2)
    try:
        venv = build_venv(venv_root / f"airflow-{version}", version)
        return _document(run_acceptance(venv, work / f"airflow-{version}", quick=quick, preload=preload))
    except VenvFailed as exc:
        raise _fail("certify.airflow_unavailable", str(exc), 3) from None
    except (AirflowUnavailable, ServiceUnavailable) as exc:
        raise _fail("certify.airflow_unavailable", str(exc)[:800], 3) from None


VenvRootOpt = Annotated[Path, typer.Option("--venv-root", help="Where the per-version virtual environments live "
                                             "(reused when they already hold that release).")]
WorkOpt = Annotated[Path, typer.Option("--work", help="Scratch directory of the Airflow homes and services.")]
KeyOpt = Annotated[Path | None, typer.Option("--key", help="PEM private key [default: a new key in OUT/keys].")]


def airflow(  # noqa: PLR0917 - typer options
    airflow_version: Annotated[str, typer.Option("--airflow-version", help="Airflow release to accept on.")] = "3.2.2",
    out: Annotated[Path | None, typer.Option("--out", help="Evidence directory [default: certification-out/TIME].")
                   ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Smaller: two DAG runs over the semaphore instead of three.")
                     ] = False,
    key: KeyOpt = None,
    venv_root: VenvRootOpt = Path("/tmp/restproof-airflow-venvs"),  # noqa: S108 - outside the work tree
    work: WorkOpt = Path("/tmp/restproof-airflow-work"),  # noqa: S108 - a scratch directory, removed per run
    preload: Annotated[bool, typer.Option("--preload/--no-preload", help="Load the runtime in the worker "
                                          "before it forks tasks (airflow_local_settings), as docs/airflow.md "
                                          "recommends; --no-preload measures the task paying the imports.")] = True,
) -> None:
    """Accept the Airflow provider on a real Airflow: scheduler, executor, API server, triggerer."""
    out = out or Path("certification-out") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    document = _run_one(airflow_version, venv_root, work, quick, preload)
    path = write_signed(out / ARTIFACTS / ARTIFACT, document, key, out / "keys")
    _print(document)
    Console().print(f"evidence: {path}", markup=False, highlight=False)
    raise typer.Exit(0 if document["verdict"] == "PASS" else 4)


def airflow_matrix(
    key: Annotated[Path, typer.Option("--key", help="PEM private key of the committed compat results.")],
    versions: Annotated[list[str] | None, typer.Option("--version", help="Releases [default: the latest patch "
                                                       "of every declared minor].")] = None,
    out: Annotated[Path, typer.Option("--out")] = COMPAT_DIR,
    venv_root: VenvRootOpt = Path("/tmp/restproof-airflow-venvs"),  # noqa: S108 - outside the work tree
    work: WorkOpt = Path("/tmp/restproof-airflow-work"),  # noqa: S108
) -> None:
    """Run the acceptance (quick) on every declared Airflow minor, each in a fresh environment."""
    results = {}
    for version in versions or list(LATEST_PATCHES):
        try:
            document = _run_one(version, venv_root, work, quick=True)
        except typer.Exit as stopped:
            results[version] = f"unavailable (exit {stopped.exit_code})"
            continue
        write_signed(out / f"airflow-{version}.json", document, key, out / "keys")
        results[version] = document["verdict"]
        _print(document)
    Console().print(json.dumps(results, sort_keys=True), markup=False, highlight=False)
    raise typer.Exit(0 if all(v == "PASS" for v in results.values()) else 4)


def register(app: typer.Typer) -> None:
    app.command(name="airflow")(airflow)
    app.command(name="airflow-matrix")(airflow_matrix)
