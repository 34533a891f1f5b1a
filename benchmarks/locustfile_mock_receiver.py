"""Locust load for the mock receiver: small synchronous batches, each with its own Idempotency-Key.

Run by benchmarks/bench_mock_receiver.py (headless, bounded -t and user count); also usable alone:
  locust -f benchmarks/locustfile_mock_receiver.py --headless -u 16 -r 16 -t 10s --host http://127.0.0.1:PORT
"""

from __future__ import annotations

import itertools
import json
import os

from locust import FastHttpUser, constant, task

ROWS_PER_BATCH = int(os.environ.get("MR_BENCH_ROWS", "3"))
BODY = json.dumps([
    {"business_date": f"2026-09-0{1 + index % 3}", "site": f"s{index}", "value": str(index)}
    for index in range(ROWS_PER_BATCH)
]).encode("utf-8")
PATH = "/mock/v1/resources/measurements/batches?range_start=2026-09-01&range_end=2026-09-04"
_sequence = itertools.count()


class SmallSyncBatchUser(FastHttpUser):
    wait_time = constant(0)  # closed loop: the next request leaves when the previous answer arrives

    @task
    def submit_batch(self) -> None:
        key = f"bench-{os.getpid()}-{next(_sequence)}"
        with self.client.post(PATH, data=BODY, name="POST batches",
                              headers={"Content-Type": "application/json", "Idempotency-Key": key},
                              catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"status {response.status_code}")
