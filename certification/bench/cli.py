"""``certify bench``: throughput, RSS, adaptive planning and load as signed, gated evidence.

Every subcommand writes ``OUT/test_artifacts/connectors/rest/<name>_benchmark.json`` (canonical,
create-if-absent, DSSE-signed like the fault matrix; ``certify gate`` compares its ``ratios``).
Exit codes: 0 every correctness check passed; 2 invalid input (or evidence already in OUT);
3 the receiver or proxy did not start; 4 a wrong result (lost or doubled rows, a failed request,
a limit violation, gap, overlap or invalid checkpoint jump). Figures never fail a run.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from certification.bench import adaptive, load, rss, throughput
from certification.bench.artifact import BenchResult, artifact_path, write
from certification.services import ServiceUnavailable
from certification.signing import SigningError
from certification.sinks import SinkSpec, bundled_sinks, load_sink

bench_app = typer.Typer(name="bench", help="Benchmarks as signed, gated evidence (ratios measured side by side).",
                        no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
err = Console(stderr=True)
OutOpt = Annotated[Path | None, typer.Option("--out", help="Output directory [default: certification-out/bench-UTC]."
                                             )]
KeyOpt = Annotated[Path | None, typer.Option("--key", help="PEM private key [default: OUT/keys, made once].")]
SinkOpt = Annotated[str, typer.Option("--sink", help="Bundled sink name or sink file (the sink under test).")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="CI sizes: seconds, not minutes; figures indicative only.")]


def _fail(code: str, message: str, exit_code: int) -> typer.Exit:
    err.print(f"error[{code}] {message}", markup=False, highlight=False)
    return typer.Exit(exit_code)


def _out(out: Path | None) -> Path:
    return out if out is not None else Path("certification-out") / time.strftime("bench-%Y%m%dT%H%M%SZ", time.gmtime())


def _sink(name: str) -> SinkSpec:
    bundled = bundled_sinks()
    try:
        return bundled[name] if name in bundled else load_sink(Path(name))
    except (ValidationError, ValueError, OSError) as exc:
        raise _fail("bench.invalid_sink", f"{name}: {type(exc).__name__}", 2) from None


def _execute(out: Path, key: Path | None, benches: list[tuple[str, Callable[[Path], BenchResult]]]) -> None:
    """Run each bench in a scratch directory, publish and sign its artifact, report, exit."""
    for name, _ in benches:
        if artifact_path(out, name).exists():
            raise _fail("bench.output_exists", f"{artifact_path(out, name)} exists; evidence is never overwritten", 2)
    failed: list[str] = []
    for name, bench in benches:
        err.print(f"bench {name} ...", markup=False, highlight=False)
        try:
            with tempfile.TemporaryDirectory(prefix=f"restproof-bench-{name}-") as scratch:
                result = bench(Path(scratch))
        except ServiceUnavailable as exc:
            raise _fail("bench.unavailable", str(exc), 3) from None
        except (subprocess.SubprocessError, RuntimeError) as exc:
            raise _fail("bench.unavailable", f"{name}: {type(exc).__name__}: {str(exc)[:300]}", 3) from None
        try:
            path = write(out, result, key)
        except SigningError as exc:
            raise _fail("bench.key", str(exc), 2) from None
        ratios = ", ".join(f"{n}={r['value']}" for n, r in sorted(result.ratios.items()))
        typer.echo(f"{name}: {'PASS' if result.passed else 'FAIL'}; {ratios}; {path}")
        for check in result.failed_checks:
            typer.echo(f"  wrong result: {check}: {result.checks[check]['detail']}")
        failed.extend(f"{name}.{check}" for check in result.failed_checks)
    raise typer.Exit(4 if failed else 0)


def _throughput(spec: SinkSpec, rows: list[int] | None, rounds: int | None, quick: bool, child_bytes: int
                ) -> Callable[[Path], BenchResult]:
    sizes = ([2_000] if quick else [100_000, 1_000_000]) if rows is None else rows
    if any(not 1 <= size <= 100_000_000 for size in sizes):
        raise _fail("bench.invalid_input", "--rows must be 1..100000000", 2)
    if not throughput.MIN_CHILD_BYTES <= child_bytes <= throughput.CHILD_BYTES:
        raise _fail("bench.invalid_input",
                    f"--child-bytes must be {throughput.MIN_CHILD_BYTES}..{throughput.CHILD_BYTES}", 2)
    return lambda work: throughput.run(spec, sizes=sizes, rounds=rounds or (1 if quick else 3), work=work,
                                       profile=not quick, child_bytes=child_bytes,
                                       wall_tolerance=throughput.QUICK_TOLERANCE if quick else throughput.TOLERANCE)


def _rss(spec: SinkSpec, sizes_mb: list[float] | None, quick: bool) -> Callable[[Path], BenchResult]:
    chosen = ([2.0, 8.0] if quick else [250.0, 1000.0]) if sizes_mb is None else sizes_mb
    sizes = [int(mb * 1e6) for mb in chosen]
    if len(sizes) < 2 or any(not 1_000_000 <= size <= 20_000_000_000 for size in sizes):
        raise _fail("bench.invalid_input", "--decoded-mb needs two or more sizes of 1..20000 MB", 2)
    return lambda work: rss.run(spec, decoded_bytes=sorted(sizes), work=work)


def _adaptive(quick: bool, days: int) -> Callable[[Path], BenchResult]:
    if not 30 <= days <= 3660:
        raise _fail("bench.invalid_input", "--days must be 30..3660", 2)
    return lambda _: adaptive.run(days=days, seeds=[1] if quick else [1, 2, 3, 4, 5], samples=20 if quick else 300)


def _load(spec: SinkSpec, users: int | None, seconds: float | None, distributed: bool, quick: bool
          ) -> Callable[[Path], BenchResult]:
    users = (4 if quick else 16) if users is None else users
    seconds = (3.0 if quick else 15.0) if seconds is None else seconds
    if not (1 <= users <= 256 and 1 <= seconds <= 600):
        raise _fail("bench.invalid_input", "--users must be 1..256 and --seconds 1..600", 2)
    return lambda work: load.run(spec, users=users, seconds=seconds, rows=1_000 if quick else 20_000, work=work,
                                 distributed=distributed)


@bench_app.command("throughput")
def throughput_command(  # noqa: PLR0917 - typer options
        out: OutOpt = None, key: KeyOpt = None, sink: SinkOpt = "reference", quick: QuickOpt = False,
                       rows: Annotated[list[int] | None, typer.Option("--rows", help="Source rows (repeatable).")
                                       ] = None,
                       rounds: Annotated[int | None, typer.Option("--rounds", min=1, max=20)] = None,
                       child_bytes: Annotated[int, typer.Option(
                           "--child-bytes", help="The profile's child size; 60000 makes the pair compare CPU per "
                           "request (one request per ~300 rows) [default: 64 MB, throughput per byte].")
                                              ] = throughput.CHILD_BYTES) -> None:
    """Rows/s and MB/s of the sink vs a naive httpx loop on the same sealed payloads (alternating)."""
    _execute(_out(out), key, [(throughput.NAME, _throughput(_sink(sink), rows, rounds, quick, child_bytes))])


@bench_app.command("rss")
def rss_command(out: OutOpt = None, key: KeyOpt = None, sink: SinkOpt = "reference", quick: QuickOpt = False,
                decoded_mb: Annotated[list[float] | None, typer.Option("--decoded-mb", help="Source sizes, decoded MB "
                                                                       "(repeatable) [default: 250 and 1000].")
                                      ] = None) -> None:
    """Peak RSS of the sink over two source sizes beside a naive read-everything sink."""
    _execute(_out(out), key, [(rss.NAME, _rss(_sink(sink), decoded_mb, quick))])


@bench_app.command("adaptive")
def adaptive_command(out: OutOpt = None, key: KeyOpt = None, quick: QuickOpt = False,
                     days: Annotated[int, typer.Option("--days")] = 365) -> None:
    """Adaptive planner vs fixed-width windows; violations, gaps, overlaps, invalid checkpoint jumps."""
    _execute(_out(out), key, [(adaptive.NAME, _adaptive(quick, days))])


@bench_app.command("load")
def load_command(  # noqa: PLR0917 - typer options
        out: OutOpt = None, key: KeyOpt = None, sink: SinkOpt = "reference", quick: QuickOpt = False,
                 users: Annotated[int | None, typer.Option("--users")] = None,
                 seconds: Annotated[float | None, typer.Option("--seconds")] = None,
                 distributed: Annotated[bool, typer.Option("--distributed", help="Also run one locust master "
                                                           "and two workers.")] = False) -> None:
    """Locust against the receiver directly and through the proxy, a sink delivery under load, ledger checked."""
    _execute(_out(out), key, [(load.NAME, _load(_sink(sink), users, seconds, distributed, quick))])


@bench_app.command("all")
def all_command(out: OutOpt = None, key: KeyOpt = None, sink: SinkOpt = "reference", quick: QuickOpt = False) -> None:
    """Every bench into one OUT, signed with one key (``--quick``: the CI step)."""
    spec = _sink(sink)
    _execute(_out(out), key, [(adaptive.NAME, _adaptive(quick, 365)),
                              (throughput.NAME, _throughput(spec, None, None, quick, throughput.CHILD_BYTES)),
                              (rss.NAME, _rss(spec, None, quick)),
                              (load.NAME, _load(spec, None, None, False, quick))])
