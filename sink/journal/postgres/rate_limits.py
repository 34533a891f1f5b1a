"""The distributed rate limiter's rows in the PostgreSQL journal (migration 0003).

Each operation is one transaction on the server clock (``now()``): the bucket row, or the scope's
lock row in ``request_slot_scopes``, is locked ``FOR UPDATE`` first, so concurrent processes take
tokens and slots one after another. The decisions are the shared pure rules in
``sink.journal.rate_policy``.
"""

from __future__ import annotations

from datetime import datetime

from sink.journal.ids import require_ident
from sink.journal.postgres.base import PostgresJournalBase
from sink.journal.postgres.connection import Cursor
from sink.journal.rate_policy import BucketLevel, BucketSpec, SlotRequest, decide_slot, take_token


def _now(cur: Cursor) -> datetime:
    cur.execute("SELECT now() AS now")
    row = cur.fetchone()
    assert row is not None and isinstance(row["now"], datetime)
    return row["now"]


class PostgresRateLimits(PostgresJournalBase):
    def take_rate_token(self, spec: BucketSpec) -> int:
        with self._db.write("rate_take", critical=False) as cur:
            # A new bucket starts full (the same as take_token with no stored level).
            cur.execute("INSERT INTO rate_buckets (bucket, units, refilled_at) VALUES (%s, %s, now()) "
                        "ON CONFLICT (bucket) DO NOTHING", (spec.bucket, spec.capacity_units))
            cur.execute("SELECT units, refilled_at FROM rate_buckets WHERE bucket = %s FOR UPDATE", (spec.bucket,))
            row = cur.fetchone()
            assert row is not None
            decision = take_token(spec, BucketLevel(int(row["units"]), row["refilled_at"]), _now(cur))
            cur.execute("UPDATE rate_buckets SET units = %s, refilled_at = %s WHERE bucket = %s",
                        (decision.level.units, decision.level.refilled_at, spec.bucket))
            return decision.wait_ms

    def acquire_request_slot(self, request: SlotRequest) -> int:
        with self._db.write("rate_slot", critical=False) as cur:
            cur.execute("INSERT INTO request_slot_scopes (scope) VALUES (%s) ON CONFLICT (scope) DO NOTHING",
                        (request.scope,))
            cur.execute("SELECT scope FROM request_slot_scopes WHERE scope = %s FOR UPDATE", (request.scope,))
            now = _now(cur)
            # Expired claims (a killed holder) stop counting here, and are cleared.
            cur.execute("DELETE FROM request_slots WHERE scope = %s AND expires_at <= now()", (request.scope,))
            cur.execute("SELECT holder, expires_at FROM request_slots WHERE scope = %s", (request.scope,))
            rows = cur.fetchall()
            others = [r["expires_at"] for r in rows if r["holder"] != request.holder]
            decision = decide_slot(request, others, holds_already=len(others) != len(rows), now=now)
            if decision.granted:
                cur.execute(
                    "INSERT INTO request_slots (scope, holder, expires_at) VALUES (%s, %s, now() + %s) "
                    "ON CONFLICT (scope, holder) DO UPDATE SET expires_at = excluded.expires_at",
                    (request.scope, request.holder, request.ttl),
                )
            return decision.wait_ms

    def release_request_slot(self, scope: str, holder: str) -> None:
        require_ident(scope, "request-slot scope")
        require_ident(holder, "request-slot holder")
        with self._db.write("rate_release", critical=False) as cur:
            cur.execute("DELETE FROM request_slots WHERE scope = %s AND holder = %s", (scope, holder))
