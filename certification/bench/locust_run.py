"""One headless locust run through locust's library API, in its own process.

Locust monkey-patches the standard library with gevent when it is imported, so it never runs
inside ``certify`` itself: ``python -m certification.bench.locust_run --host URL --users N
--seconds S --out STATS.json`` runs the users of ``certification.bench.locustfile`` for a bounded
time and writes the aggregated figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

MAX_USERS = 256
MAX_SECONDS = 600


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="locust-run")
    parser.add_argument("--host", required=True)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not (1 <= args.users <= MAX_USERS and 0 < args.seconds <= MAX_SECONDS):
        parser.error(f"users 1..{MAX_USERS}, seconds up to {MAX_SECONDS}")
    if not args.host.startswith(("http://127.0.0.1:", "https://127.0.0.1:")):
        parser.error("the load bench drives 127.0.0.1 only")
    import gevent  # type: ignore[import-untyped]  # noqa: PLC0415 - locust patches the process that imports it
    from locust.env import Environment  # noqa: PLC0415

    from certification.bench.locustfile import ROWS_PER_BATCH, SmallBatchUser  # noqa: PLC0415

    environment = Environment(user_classes=[SmallBatchUser], host=args.host)
    runner = environment.create_local_runner()
    started = time.monotonic()
    runner.start(args.users, spawn_rate=args.users)
    gevent.sleep(args.seconds)  # the bounded duration; then stop every user and wait for them
    runner.quit()
    runner.greenlet.join(timeout=30)
    elapsed = time.monotonic() - started
    total = environment.stats.total
    figures = {
        "requests": total.num_requests, "failures": total.num_failures, "seconds": round(elapsed, 3),
        "requests_per_s": round(total.num_requests / elapsed, 1) if elapsed else 0.0,
        "rows_per_s": round((total.num_requests - total.num_failures) * ROWS_PER_BATCH / elapsed, 1)
        if elapsed else 0.0,
        "p50_ms": total.get_response_time_percentile(0.5), "p95_ms": total.get_response_time_percentile(0.95),
        "p99_ms": total.get_response_time_percentile(0.99), "users": args.users, "rows_per_batch": ROWS_PER_BATCH,
    }
    args.out.write_text(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
