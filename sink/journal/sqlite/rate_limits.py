"""The distributed rate limiter's rows in the SQLite journal (``rate_buckets``, ``request_slots``,
migration 4).

Each operation is one ``BEGIN IMMEDIATE`` transaction: SQLite's single write lock serialises every
process sharing the file, so read-decide-write is atomic. The decisions are the shared pure rules
in ``sink.journal.rate_policy``.
"""

from __future__ import annotations

from sink.journal.ids import require_ident
from sink.journal.rate_policy import BucketLevel, BucketSpec, SlotRequest, decide_slot, take_token
from sink.journal.sqlite.base import SqliteJournalBase
from sink.journal.sqlite.codec import decode_time, encode_time


class SqliteRateLimits(SqliteJournalBase):
    def take_rate_token(self, spec: BucketSpec) -> int:
        with self._write("rate_take") as (conn, now):
            row = conn.execute("SELECT units, refilled_at FROM rate_buckets WHERE bucket = ?",
                               (spec.bucket,)).fetchone()
            stored = None if row is None else BucketLevel(int(row["units"]), decode_time(row["refilled_at"]))
            decision = take_token(spec, stored, now)
            conn.execute(
                "INSERT INTO rate_buckets (bucket, units, refilled_at) VALUES (?, ?, ?) "
                "ON CONFLICT (bucket) DO UPDATE SET units = excluded.units, refilled_at = excluded.refilled_at",
                (spec.bucket, decision.level.units, encode_time(decision.level.refilled_at)),
            )
            return decision.wait_ms

    def acquire_request_slot(self, request: SlotRequest) -> int:
        with self._write("rate_slot") as (conn, now):
            stamp = encode_time(now)
            # Expired claims (a killed holder) stop counting here, and are cleared.
            conn.execute("DELETE FROM request_slots WHERE scope = ? AND expires_at <= ?", (request.scope, stamp))
            rows = conn.execute("SELECT holder, expires_at FROM request_slots WHERE scope = ?",
                                (request.scope,)).fetchall()
            others = [decode_time(r["expires_at"]) for r in rows if r["holder"] != request.holder]
            holds = len(others) != len(rows)
            decision = decide_slot(request, others, holds_already=holds, now=now)
            if decision.granted:
                conn.execute(
                    "INSERT INTO request_slots (scope, holder, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (scope, holder) DO UPDATE SET expires_at = excluded.expires_at",
                    (request.scope, request.holder, encode_time(now + request.ttl)),
                )
            return decision.wait_ms

    def release_request_slot(self, scope: str, holder: str) -> None:
        require_ident(scope, "request-slot scope")
        require_ident(holder, "request-slot holder")
        with self._write("rate_release") as (conn, _now):
            conn.execute("DELETE FROM request_slots WHERE scope = ? AND holder = ?", (scope, holder))
