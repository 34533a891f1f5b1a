"""Start-up benchmark: the CPU one ``delivery`` process costs, and how much of it is imports.

The certification matrix starts the reference sink hundreds of times (every first run, recovery
and operator command is a new process), so a process's fixed cost bounds the matrix's CPU time.

    python benchmarks/bench_startup.py            # 10 processes per command
    python benchmarks/bench_startup.py --quick    # CI smoke run (3 per command)
    python benchmarks/bench_startup.py --json out.json

Per command: CPU seconds per process (user + sys of the finished children, from
``resource.getrusage(RUSAGE_CHILDREN)``) and wall seconds per process. The commands:

* ``delivery --help``: the CLI alone;
* ``delivery check-design-contract --format json``: loads and validates the bundled design contract;
* ``delivery run`` on an interval without source rows: compiles the workload and plans, then exits 0
  ("skipped") without a journal or a receiver.

The import share is the CPU of ``import sink.cli`` in a fresh interpreter (measured with
``time.process_time`` inside it, less a bare interpreter's) divided by the CPU of a ``run`` process.
A bare ``python -c pass`` is measured as the floor no change to the sink can go below.

Exit status 1 only when a command does not exit as it must (0); the figures are never failures:
absolute CPU depends on the machine and its load, so compare figures from one run.
"""

from __future__ import annotations

import argparse
import json
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
"""No source row falls in it: ``run`` exits 0 before it needs a journal or the receiver."""
IMPORT_PROBE = (
    "import time\n"
    "start = time.process_time()\n"
    "import sink.cli\n"
    "print(time.process_time() - start)\n"
)


def _delivery() -> str:
    return str(Path(sys.executable).with_name("delivery"))


def _commands(state_dir: Path) -> dict[str, list[str]]:
    delivery = _delivery()
    return {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "delivery --help": [delivery, "--help"],
        "delivery check-design-contract": [delivery, "check-design-contract", "--format", "json"],
        "delivery run (empty interval)": [
            delivery, "run", str(WORKLOAD), "--scope-from", EMPTY_SCOPE[0], "--scope-to", EMPTY_SCOPE[1],
            "--bindings-dir", str(BINDINGS), "--state-dir", str(state_dir), "--format", "json",
        ],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: list[str], count: int) -> dict[str, float]:
    """CPU and wall seconds per process over ``count`` sequential runs; raises on a non-zero exit."""
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(count):
        before_cpu, before_wall = _children_cpu(), time.perf_counter()
        finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
                                  check=False)
        wall.append(time.perf_counter() - before_wall)
        cpu.append(_children_cpu() - before_cpu)
        if finished.returncode != 0:
            raise RuntimeError(f"{command[0]} {command[1] if len(command) > 1 else ''} exited "
                               f"{finished.returncode}")
    return {"cpu_s_median": statistics.median(cpu), "cpu_s_mean": statistics.fmean(cpu),
            "wall_s_median": statistics.median(wall), "runs": count}


def import_cpu(count: int) -> float:
    """Median CPU seconds of ``import sink.cli`` inside a fresh interpreter."""
    samples = []
    for _ in range(count):
        finished = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True,
                                  timeout=120, check=True)
        samples.append(float(finished.stdout.strip()))
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 processes per command (CI smoke run)")
    parser.add_argument("--runs", type=int, default=None, help="processes per command [default: 10, quick 3]")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    count = args.runs if args.runs is not None else (3 if args.quick else 10)
    if not 1 <= count <= 100:
        parser.error("--runs must be between 1 and 100")
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as state:
        try:
            for name, command in _commands(Path(state)).items():
                figures[name] = measure(command, count)
        except RuntimeError as exc:
            print(f"bench_startup: FAIL {exc}", file=sys.stderr)
            return 1
    imports = import_cpu(count)
    run_cpu = figures["delivery run (empty interval)"]["cpu_s_median"]
    floor = figures["python -c pass (floor)"]["cpu_s_median"]
    share = imports / run_cpu if run_cpu > 0 else 0.0
    print(f"{'command':34} {'cpu s/process':>14} {'wall s/process':>15}")
    for name, figure in figures.items():
        print(f"{name:34} {figure['cpu_s_median']:14.3f} {figure['wall_s_median']:15.3f}")
    print(f"import sink.cli: {imports:.3f} s CPU = {share:.0%} of a run process "
          f"(interpreter floor {floor:.3f} s; medians of {count})")
    if args.json is not None:
        args.json.write_text(json.dumps({"schema_id": "restproof.bench_startup.v1", "commands": figures,
                                         "import_cpu_s": imports, "import_share_of_run": share},
                                        indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
