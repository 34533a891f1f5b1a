"""The provider's worker CPU per execution, with and without the runtime preloaded.

    python benchmarks/bench_airflow_resume.py [--deliveries 3]

A real mock receiver (the 30-minute-job behaviour) behind the fault proxy, a SQLite journal, no
Airflow: each delivery is submitted in a fresh process (as ``execute`` is), observed read-only
(as the trigger does), and resumed in another fresh process (as ``execute_complete`` is). Each
fresh process reports the CPU seconds of the provider's call alone, the way the operator's
timing records count them, once as a task process that inherited a preloaded runtime
(``sink.airflow.preload``, what a fork of a preloaded worker gets) and once paying the imports
itself. Prints the medians side by side; targets (printed, never enforced): resume <= 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from certification.airflow.deployment import SENTINEL_TOKEN, make_deployment
from certification.services import proxy_process, receiver_process
from sink.airflow.observation import observe_receipt
from sink.journal.durability import Durability

REPO = Path(__file__).resolve().parents[1]
BEHAVIOUR = REPO / "scenarios" / "airflow" / "receiver-30-minute-jobs.yaml"
TARGET_S = 0.5

_CHILD = r"""
import json, sys, time
from datetime import date
from pathlib import Path
if sys.argv[2] == "preloaded":
    from sink.airflow.preload import preload_runtime
    preload_runtime(force=True)
from sink.airflow import runtime_bridge
from sink.airflow.locator import JournalLocator
locator = JournalLocator(**json.loads(sys.argv[3]))
started, started_wall = time.process_time(), time.perf_counter()
if sys.argv[1] == "submit":
    result = runtime_bridge.submit_or_resume(Path(sys.argv[4]), date.fromisoformat(sys.argv[5]),
                                             date.fromisoformat(sys.argv[6]), locator=locator, worker_id="bench-a")
else:
    result = runtime_bridge.resume(sys.argv[4], locator=locator, worker_id="bench-b")
print(json.dumps({"cpu": time.process_time() - started, "wall": time.perf_counter() - started_wall,
                  "kind": type(result).__name__,
                  "parent_id": getattr(result, "parent_id", None),
                  "operation_id": getattr(result, "operation_id", None)}))
"""


def _call(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True,
                          timeout=120)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=3, choices=range(1, 21))
    args = parser.parse_args()
    os.environ["MOCK_RECEIVER_TOKEN"] = SENTINEL_TOKEN
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            receiver_process(BEHAVIOUR, Path(tmp) / "receiver") as receiver, \
            proxy_process(receiver.data_url, Path(tmp) / "proxy", 0) as proxy:
        d = make_deployment(Path(tmp) / "work", proxy_url=proxy.url)
        locator = json.dumps(d.locator.as_kwargs())
        index = 0
        for _ in range(args.deliveries):
            for mode in ("preloaded", "cold"):  # alternated: drift hits both
                start, end = d.scope(index)
                index += 1
                submitted = _call("submit", mode, locator, str(d.workload), start.isoformat(), end.isoformat())
                if submitted["kind"] != "DeliveryPending":
                    print(f"unexpected submission result {submitted['kind']}")
                    return 1
                receiver.advance_clock(1800)
                asyncio.run(observe_receipt(str(submitted["operation_id"]), d.locator, owner="bench-observer",
                                            sleep=lambda _s: asyncio.sleep(0.01), lease_ttl=timedelta(seconds=30),
                                            durability=Durability.DURABLE))
                resumed = _call("resume", mode, locator, str(submitted["parent_id"]))
                if resumed["kind"] != "DeliveryCompleted":
                    print(f"unexpected resume result {resumed['kind']}")
                    return 1
                cpu.setdefault(("submit", mode), []).append(float(submitted["cpu"]))  # type: ignore[arg-type]
                cpu.setdefault(("resume", mode), []).append(float(resumed["cpu"]))  # type: ignore[arg-type]
                wall.setdefault(("submit", mode), []).append(float(submitted["wall"]))  # type: ignore[arg-type]
                wall.setdefault(("resume", mode), []).append(float(resumed["wall"]))  # type: ignore[arg-type]
    print(f"bench_airflow_resume: the provider's call per execution, median of {args.deliveries} (seconds)")
    for figure, measured in (("CPU", cpu), ("wall", wall)):
        for step in ("submit", "resume"):
            hot, cold = statistics.median(measured[(step, "preloaded")]), statistics.median(measured[(step, "cold")])
            note = f" (target <= {TARGET_S} s)" if step == "resume" else ""
            print(f"  {figure:4s} {step:7s} preloaded {hot:6.3f}  cold {cold:6.3f}  "
                  f"cold/preloaded {cold / hot:5.1f}x{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
