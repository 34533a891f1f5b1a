"""A separate process that shares one journal's rate limits (run as a script by the tests).

``take BUCKET RATE BURST``: say ``ready``, read a wall-clock window ``START END`` from stdin, take
tokens of one bucket as fast as allowed inside it and print how many were granted.
``hold-and-die SCOPE HOLDER TTL_MS``: claim one active-request slot, say so, then SIGKILL itself
while holding it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.rate_policy import BucketSpec, RateLimitJournal, SlotRequest


def open_journal(where: str, markers: Path) -> RateLimitJournal:
    store = FileMarkerStore(markers)
    if where.startswith("sqlite:"):
        from sink.journal.sqlite.adapter import open_sqlite_journal

        return open_sqlite_journal(where.removeprefix("sqlite:"), markers=store,
                                   durability=Durability.NON_DURABLE_TESTS_ONLY)
    from sink.journal.postgres import open_postgres_journal

    dsn, schema = where.rsplit("#", 1)
    journal = open_postgres_journal(dsn, schema=schema, markers=store, durability=Durability.NON_DURABLE_TESTS_ONLY)
    assert isinstance(journal, RateLimitJournal)
    return journal


def take(journal: RateLimitJournal, spec: BucketSpec, start: float, end: float) -> None:
    granted = asked = 0
    while time.time() < start:
        time.sleep(0.005)
    while time.time() < end:
        asked += 1
        if journal.take_rate_token(spec) == 0:
            granted += 1
        else:
            time.sleep(0.002)  # keep asking: a non-atomic take would show up as extra grants
    print(json.dumps({"granted": granted, "asked": asked}), flush=True)


def hold_and_die(journal: RateLimitJournal, scope: str, holder: str, ttl_ms: int) -> None:
    wait = journal.acquire_request_slot(SlotRequest(scope, holder, 1, timedelta(milliseconds=ttl_ms)))
    print(json.dumps({"wait_ms": wait}), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    command, where, markers = argv[0], argv[1], Path(argv[2])
    journal = open_journal(where, markers)
    if command == "take":
        spec = BucketSpec(argv[3], int(argv[4]), int(argv[5]))
        print("ready", flush=True)
        start, end = (float(v) for v in sys.stdin.readline().split())
        take(journal, spec, start, end)
    elif command == "hold-and-die":
        hold_and_die(journal, argv[3], argv[4], int(argv[5]))


if __name__ == "__main__":
    main(sys.argv[1:])
