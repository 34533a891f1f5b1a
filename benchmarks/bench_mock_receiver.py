"""Throughput and latency of the mock receiver for small synchronous batches (script, not a test).

Starts `mock-receiver serve` (one uvicorn process, durable ledger) on a free loopback port, drives it with
locust headless (bounded users and run time, FastHttpUser, closed loop), and prints requests/s, p50 and p99
for each server configuration side by side, with ratios against the first one:

  full-auto     --durability full   (fsync per commit batch), HTTP/loop: httptools+uvloop when installed
  normal-auto   --durability normal (survives process kills, not power loss)
  full-h11      --durability full   --http h11 --loop asyncio (the pure-Python stack)

After each run it reads the receiver's ground truth through the admin API and checks that every answered
request was recorded and applied exactly once (requests == effects == locust's request count).

  python benchmarks/bench_mock_receiver.py            # 15 s per configuration, 16 users
  python benchmarks/bench_mock_receiver.py --quick    # CI: 3 s per configuration, 8 users, two configurations
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
LOCUSTFILE = REPO / "benchmarks" / "locustfile_mock_receiver.py"
BEHAVIOUR = REPO / "scenarios" / "receivers" / "stripe-like.yaml"
BIN = Path(sys.executable).parent
TARGET_RPS = 1000.0

CONFIGURATIONS: dict[str, list[str]] = {
    "full-auto": ["--durability", "full"],
    "normal-auto": ["--durability", "normal"],
    "full-h11": ["--durability", "full", "--http", "h11", "--loop", "asyncio"],
}


@dataclass
class Result:
    name: str
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p99_ms: float
    ledger_requests: int
    ledger_effects: int
    ledger_rps: float
    delivered: int


def start_receiver(state_dir: Path, options: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [str(BIN / "mock-receiver"), "serve", "--host", "127.0.0.1", "--port", "0", "--behaviour", str(BEHAVIOUR),
         "--state-dir", str(state_dir), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 0.2)[0]:
            line = process.stdout.readline()
            if line:
                return process, json.loads(line)["data_url"]
        if process.poll() is not None:
            break
    process.kill()
    raise SystemExit(f"receiver did not start: {process.communicate()[1][-2000:]}")


def stop_receiver(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def run_locust(url: str, users: int, seconds: int, rows: int, csv_prefix: Path) -> dict[str, str]:
    command = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--headless", "-u", str(users), "-r", str(users),
               "-t", f"{seconds}s", "--host", url, "--csv", str(csv_prefix), "--only-summary",
               "--loglevel", "ERROR"]
    subprocess.run(command, check=False, capture_output=True, timeout=seconds + 60,
                   env={**os.environ, "MR_BENCH_ROWS": str(rows)}, cwd=csv_prefix.parent)
    with open(f"{csv_prefix}_stats.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["Name"] == "Aggregated":
                return row
    raise SystemExit("locust wrote no aggregated statistics")


def measure(name: str, options: list[str], users: int, seconds: int, rows: int, workdir: Path) -> Result:
    state_dir = workdir / name
    process, url = start_receiver(state_dir, options)
    try:
        stats = run_locust(url, users, seconds, rows, workdir / f"{name}-locust")
        truth = httpx.get(f"{url}/_admin/stats", timeout=30).json()
    finally:
        stop_receiver(process)
    span = float(truth["last_received_at"]) - float(truth["first_received_at"])
    return Result(name=name, requests=int(stats["Request Count"]), failures=int(stats["Failure Count"]),
                  rps=float(stats["Requests/s"]), p50_ms=float(stats["50%"]), p99_ms=float(stats["99%"]),
                  ledger_requests=int(truth["requests"]), ledger_effects=int(truth["effects"]),
                  delivered=int(truth["requests_by_delivery"].get("true", 0)),
                  ledger_rps=int(truth["requests"]) / span if span > 0 else 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--users", type=int, default=None)
    parser.add_argument("--seconds", type=int, default=None)
    parser.add_argument("--rows", type=int, default=3, help="rows per batch")
    args = parser.parse_args()
    users = args.users or (8 if args.quick else 16)
    seconds = args.seconds or (3 if args.quick else 15)
    if not 1 <= users <= 256 or not 1 <= seconds <= 600 or not 1 <= args.rows <= 10_000:
        parser.error("users must be 1..256, seconds 1..600, rows 1..10000")
    names = ["full-auto", "full-h11"] if args.quick else list(CONFIGURATIONS)
    stack = "+".join(name for name in ("httptools", "uvloop") if importlib.util.find_spec(name)) or "h11+asyncio"
    print(f"mock receiver, small sync batches: {args.rows} rows, {users} users, {seconds} s each, "
          f"auto stack = {stack}, cpus = {os.cpu_count()}, load average = {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-mock-receiver-") as scratch:
        results = [measure(name, CONFIGURATIONS[name], users, seconds, args.rows, Path(scratch)) for name in names]
    base = results[0]
    print(f"{'configuration':<14}{'locust req':>11}{'fail':>6}{'locust req/s':>13}{'p50 ms':>8}{'p99 ms':>8}"
          f"{'ledger req':>11}{'effects':>9}{'delivered':>10}{'ledger req/s':>13}{'vs first':>9}")
    ok = True
    for result in results:
        # Every request carried its own Idempotency-Key: each must be logged and applied exactly once, and the
        # receiver saw at least what locust counted (locust's CSV totals can miss the last second of a run,
        # which is why the receiver-side rate over the ledger's own time span is printed beside it).
        # Every answer locust received was written to an open connection, so its row says delivered=true.
        ledger_ok = result.ledger_requests == result.ledger_effects >= result.requests and \
            result.delivered >= result.requests
        ok = ok and ledger_ok and result.failures == 0
        print(f"{result.name:<14}{result.requests:>11}{result.failures:>6}{result.rps:>13.1f}{result.p50_ms:>8.0f}"
              f"{result.p99_ms:>8.0f}{result.ledger_requests:>11}{result.ledger_effects:>9}{result.delivered:>10}"
              f"{result.ledger_rps:>13.1f}"
              f"{result.ledger_rps / base.ledger_rps:>8.2f}x" + ("" if ledger_ok else "  LEDGER MISMATCH"))
    if stack == "h11+asyncio":
        print("(httptools/uvloop are not installed: full-auto and full-h11 are the same configuration, so their "
              "difference shows the run-to-run noise of this machine)")
    verdict = "meets" if base.rps >= TARGET_RPS else "is below"
    print(f"{base.name} {verdict} the {TARGET_RPS:.0f} req/s target by locust's count ({base.rps:.0f} req/s; "
          f"receiver-side {base.ledger_rps:.0f} req/s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
