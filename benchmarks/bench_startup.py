"""Start-up benchmark: the CPU one ``delivery`` process costs, and how much of it is imports.

The certification matrix starts the reference sink many times per row (first run, recoveries,
operator commands, the bundle export), each a new process, so a process's fixed cost bounds the
matrix's CPU time.

    python benchmarks/bench_startup.py                        # 10 processes per command
    python benchmarks/bench_startup.py --quick                # CI smoke run (3 per command)
    python benchmarks/bench_startup.py --baseline /tmp/main   # side by side with another checkout
    python benchmarks/bench_startup.py --json out.json

Per command: CPU seconds per process (user + sys of the finished children, from
``resource.getrusage(RUSAGE_CHILDREN)``, median) and wall seconds per process. Each command runs as
``python -m sink.cli`` from a source tree (this checkout, and ``--baseline`` if given, e.g. ``git
archive main | tar -x -C /tmp/main``); the two trees alternate round by round, so the machine's load
weighs on both alike and their ratio is the figure to read. The commands:

* ``--help``: the CLI alone;
* ``check-design-contract --format json``: loads and validates the bundled design contract;
* ``run`` on an interval without source rows: compiles the workload, opens the journal (which
  loads the design contract) and exits 0 ("skipped"), with no receiver;
* ``python -c pass``: the interpreter's own floor, which no change to the sink can go below.

Imports are timed in a fresh interpreter (``time.process_time`` inside it): ``import sink.cli`` (what
any command pays before Typer parses it) and every module a ``run`` imports; the latter divided by
the CPU of a ``run`` process is the import share. Python reads compiled bytecode only where a
``__pycache__`` exists; with ``PYTHONDONTWRITEBYTECODE=1`` and no precompiled sink, every process
compiles the sink's sources again: the figure printed says which case was measured.

Exit status 1 only when a command does not exit 0; the figures are never failures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "scenarios" / "workloads" / "measurements-sync.yaml"
BINDINGS = ROOT / "scenarios" / "bindings"
EMPTY_SCOPE = ("2030-01-01", "2030-01-03")
"""No source row falls in it: ``run`` exits 0 (skipped) without sending anything."""
IMPORT_PROBES = {
    "import sink.cli": "sink.cli",
    "imports of a run": "sink.cli, sink.compiler, sink.runtime.service, sink.journal.sqlite.adapter",
}
"""What the CLI costs before it parses a command, and every module a ``run`` imports: the latter
divided by a run process's CPU is the import share."""
FLOOR = "python -c pass (floor)"
RUN = "run (empty interval)"


def commands(state_dir: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "sink.cli"]
    return {
        FLOOR: [sys.executable, "-c", "pass"],
        "--help": [*cli, "--help"],
        "check-design-contract": [*cli, "check-design-contract", "--format", "json"],
        RUN: [*cli, "run", str(WORKLOAD), "--scope-from", EMPTY_SCOPE[0], "--scope-to", EMPTY_SCOPE[1],
              "--bindings-dir", str(BINDINGS), "--state-dir", str(state_dir), "--format", "json"],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str], tree: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of one process started in ``tree``; RuntimeError on a non-zero exit."""
    before_cpu, before_wall = _children_cpu(), time.perf_counter()
    finished = subprocess.run(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
                              check=False)
    wall = time.perf_counter() - before_wall
    if finished.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:4])} in {tree} exited {finished.returncode}")
    return _children_cpu() - before_cpu, wall


def import_cpu(tree: Path, modules: str) -> float:
    probe = f"import time\nstart = time.process_time()\nimport {modules}\nprint(time.process_time() - start)\n"
    finished = subprocess.run([sys.executable, "-c", probe], cwd=tree, capture_output=True, text=True,
                              timeout=120, check=True)
    return float(finished.stdout.strip())


def measure(trees: dict[str, Path], count: int, state: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Per tree and command, median CPU and wall seconds over ``count`` rounds; trees alternate."""
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {label: {} for label in trees}
    imports: dict[str, dict[str, list[float]]] = {label: {} for label in trees}
    for _ in range(count):
        for label, tree in trees.items():
            for name, command in commands(state / label).items():
                samples[label].setdefault(name, []).append(run_once(command, tree))
            for name, modules in IMPORT_PROBES.items():
                imports[label].setdefault(name, []).append(import_cpu(tree, modules))
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for label, by_command in samples.items():
        figures[label] = {name: {"cpu_s": statistics.median(cpu for cpu, _ in runs),
                                 "wall_s": statistics.median(wall for _, wall in runs)}
                          for name, runs in by_command.items()}
        for name, cpu in imports[label].items():
            figures[label][name] = {"cpu_s": statistics.median(cpu), "wall_s": 0.0}
    return figures


def _bytecode_state(tree: Path) -> str:
    cached = (tree / "sink" / "cli" / "__pycache__").is_dir()
    writes = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    return "bytecode cached" if cached or writes else "no bytecode: PYTHONDONTWRITEBYTECODE set, sink not precompiled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds (CI smoke run)")
    parser.add_argument("--runs", type=int, default=None, help="rounds [default: 10, quick 3]")
    parser.add_argument("--baseline", type=Path, default=None, help="another source tree measured side by side")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    count = args.runs if args.runs is not None else (3 if args.quick else 10)
    if not 1 <= count <= 100:
        parser.error("--runs must be between 1 and 100")
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        if not (args.baseline / "sink" / "cli" / "__init__.py").is_file():
            parser.error(f"--baseline {args.baseline}: not a restproof source tree")
        trees["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as state:
        try:
            figures = measure(trees, count, Path(state))
        except (RuntimeError, subprocess.SubprocessError, ValueError) as exc:
            print(f"bench_startup: FAIL {exc}", file=sys.stderr)
            return 1
    ours = figures["this tree"]
    print(f"CPU seconds per process, medians of {count} ({_bytecode_state(ROOT)})")
    header = f"{'command':26} {'this tree':>10}" + (f" {'baseline':>10} {'ratio':>7}" if len(trees) > 1 else "")
    print(header)
    for name, figure in ours.items():
        line = f"{name:26} {figure['cpu_s']:10.3f}"
        if "baseline" in figures:
            base = figures["baseline"][name]["cpu_s"]
            line += f" {base:10.3f} {figure['cpu_s'] / base if base > 0 else 0.0:7.2f}"
        print(line)
    for label, by_command in figures.items():
        share = by_command["imports of a run"]["cpu_s"] / by_command[RUN]["cpu_s"]
        print(f"{label}: a run's imports are {share:.0%} of a run process's CPU")
    if args.json is not None:
        args.json.write_text(json.dumps({"schema_id": "restproof.bench_startup.v1", "runs": count,
                                         "bytecode": _bytecode_state(ROOT), "figures": figures},
                                        indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
