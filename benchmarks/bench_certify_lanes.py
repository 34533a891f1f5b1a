"""``certify run`` on one lane versus N lanes, side by side: wall time, CPU time (the run and every
process it waited for), the machine's load average, and whether both gave the same matrix.

    python benchmarks/bench_certify_lanes.py                 # the default matrix, --parallel 1 vs 4
    python benchmarks/bench_certify_lanes.py --quick         # CI-sized: certify's --quick rows
    python benchmarks/bench_certify_lanes.py --lanes 2

Fails (exit 1) only on a wrong result: a run that did not certify, or two runs whose rows,
verdicts, counters or exit codes differ (the matrix must not depend on the parallelism). The
figures are printed, never judged: on a shared machine the wall time is the CPU time divided by
the share of the cores the run got, so the CPU time and the load are printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CERTIFY = str(Path(sys.executable).with_name("certify"))
ARTIFACT = Path("test_artifacts") / "connectors" / "rest" / "remote_effect_fault_matrix.json"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(out: Path, lanes: int, quick: bool) -> dict[str, Any]:
    command = [CERTIFY, "run", "--parallel", str(lanes), "--out", str(out), "--json", "--identity-examples", "0"]
    if quick:
        command.append("--quick")
    load = os.getloadavg()[0]
    cpu, started = _children_cpu(), time.monotonic()
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=3600)
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu
    matrix = json.loads((out / ARTIFACT).read_bytes()) if (out / ARTIFACT).exists() else {"rows": []}
    rows = [(row["row_id"], sorted((name, sink["verdict"], json.dumps(sink["counters"], sort_keys=True),
                                    tuple(sink["exit_codes"])) for name, sink in row["sinks"].items()))
            for row in matrix["rows"]]
    return {"lanes": lanes, "exit": done.returncode, "wall_s": wall, "cpu_s": cpu, "load_before": load,
            "load_after": os.getloadavg()[0], "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="certify's --quick rows (CI)")
    parser.add_argument("--lanes", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-certify-") as work:
        serial = _run(Path(work) / "serial", 1, args.quick)
        parallel = _run(Path(work) / "parallel", args.lanes, args.quick)
    for run in (serial, parallel):
        print(f"lanes={run['lanes']}: exit {run['exit']}, {len(run['rows'])} rows, wall {run['wall_s']:.1f} s, "
              f"cpu {run['cpu_s']:.1f} s ({run['cpu_s'] / max(run['wall_s'], 1e-9):.2f} cores), "
              f"load {run['load_before']:.1f} -> {run['load_after']:.1f}")
    print(f"wall ratio serial/parallel: {serial['wall_s'] / max(parallel['wall_s'], 1e-9):.2f}; "
          f"cpu ratio parallel/serial: {parallel['cpu_s'] / max(serial['cpu_s'], 1e-9):.2f}")
    wrong = []
    if serial["exit"] != 0 or parallel["exit"] != 0:
        wrong.append(f"a run did not certify (exit {serial['exit']} / {parallel['exit']})")
    if serial["rows"] != parallel["rows"] or not serial["rows"]:
        wrong.append("the matrix depends on the parallelism (rows, verdicts, counters or exit codes differ)")
    for problem in wrong:
        print(f"WRONG: {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
