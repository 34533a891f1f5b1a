"""Locust users for ``certify bench load``: small synchronous JSON batches, one fresh
Idempotency-Key each, every key answered 2xx appended to a per-process file.

The key files are what the receiver's ledger is checked against (every acknowledged key applied
once, none twice), in every locust mode: in-process (``locust_run``), and ``--master`` with
``--worker`` processes, where each worker writes its own file. Environment:
``BENCH_KEYS_DIR`` (where the key files go), ``BENCH_KEY_PREFIX`` (of every key, default
``load``), ``BENCH_ROWS`` (rows per batch, default 3).

    locust -f certification/bench/locustfile.py --headless -u 8 -r 8 -t 5s --host http://127.0.0.1:PORT
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import TextIO

from locust import FastHttpUser, constant, task

ROWS_PER_BATCH = int(os.environ.get("BENCH_ROWS", "3"))
SCOPE = ("2026-09-01", "2026-09-04")
"""Far from the sink deliveries' scopes (January), so partition replaces never touch each other."""
PATH = f"/mock/v1/resources/measurements/batches?range_start={SCOPE[0]}&range_end={SCOPE[1]}"
BODY = json.dumps([
    {"business_date": f"2026-09-0{1 + index % 3}", "station_id": f"{index:05d}", "reading": f"{index}.000",
     "label": None, "valid": True, "observed_at": "2026-09-01T00:00:00Z", "sample_count": index}
    for index in range(ROWS_PER_BATCH)
])
KEY_PREFIX = os.environ.get("BENCH_KEY_PREFIX", "load")
_sequence = itertools.count()
_keys: TextIO | None = None


def _record(key: str) -> None:
    global _keys  # noqa: PLW0603 - one line-buffered file per locust process, opened on first use
    if _keys is None:
        directory = Path(os.environ.get("BENCH_KEYS_DIR", "."))
        directory.mkdir(parents=True, exist_ok=True)
        _keys = (directory / f"keys-{os.getpid()}.txt").open("a", buffering=1, encoding="ascii")
    _keys.write(key + "\n")


class SmallBatchUser(FastHttpUser):
    wait_time = constant(0)  # closed loop: the next request leaves when the previous answer arrived

    @task
    def submit_batch(self) -> None:
        key = f"{KEY_PREFIX}-{os.getpid()}-{next(_sequence)}"
        with self.client.post(PATH, data=BODY, name="POST batches", catch_response=True,
                              headers={"Content-Type": "application/json", "Idempotency-Key": key}) as response:
            if 200 <= response.status_code < 300:
                _record(key)
                response.success()
            else:
                response.failure(f"status {response.status_code}")
