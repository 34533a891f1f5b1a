"""Effect application and the async job state machine (all inside a ledger transaction)."""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime

from mock_receiver.behaviour import AsyncSpec, MutationKind, RecordResults, RejectRowsAction, ResourceSpec
from mock_receiver.canonical import MultisetSum, multiset_digest, value_text
from mock_receiver.faults import rejected_by_action
from mock_receiver.ledger import Txn
from mock_receiver.payloads import Submission
from mock_receiver.problems import ProblemError

TERMINAL_STATES = frozenset({"complete", "incomplete", "error", "cancelled"})
_CALENDAR_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class Scope:
    start: str | None = None
    end: str | None = None


def calendar_date(text: str) -> date | None:
    """``YYYY-MM-DD`` only: ``date.fromisoformat`` also takes ``2026-W27-3``, ``20260701`` and
    ``2026-182``, which the documented form is not."""
    if not _CALENDAR_DATE.match(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def parse_scope(start: str | None, end: str | None) -> Scope:
    """Half-open [start, end) of ISO dates; both or neither."""
    if start is None and end is None:
        return Scope()
    if start is None or end is None:
        raise ProblemError(422, "bad_scope", "Unprocessable content", "give both range_start and range_end")
    first, last = calendar_date(start), calendar_date(end)
    if first is None or last is None:
        raise ProblemError(422, "bad_scope", "Unprocessable content",
                           "range_start and range_end must be ISO dates (YYYY-MM-DD)")
    if first >= last:
        raise ProblemError(422, "bad_scope", "Unprocessable content",
                           "range_start must be before range_end (the range is half-open)")
    return Scope(first.isoformat(), last.isoformat())


@dataclass
class Partition:
    accepted: list[tuple[str, bytes]] = field(default_factory=list)
    rejected: list[dict[str, object]] = field(default_factory=list)


def _row_date(text: str | None) -> str | None:
    """The date of an ISO date (``YYYY-MM-DD``) or an ISO date-time that starts with one (``T`` or a
    space before the time); anything else is no date."""
    if text is None:
        return None
    day = calendar_date(text[:10])
    if day is None or (len(text) > 10 and not _valid_datetime(text)):
        return None
    return day.isoformat()


def _valid_datetime(text: str) -> bool:
    if text[10] not in "Tt ":
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def partition_rows(submission: Submission, spec: ResourceSpec, scope: Scope,
                   reject_action: RejectRowsAction | None) -> Partition:
    """Decide per record: accepted (with its date) or rejected with a stable reason."""
    result = Partition()
    for index, (row, encoded) in enumerate(zip(submission.rows, submission.encoded, strict=True)):
        row_date = _row_date(value_text(row.get(spec.date_field)))
        reason = None
        if row_date is None:
            reason = "invalid_date"
        elif scope.start is not None and not (scope.start <= row_date < (scope.end or "")):
            reason = "out_of_scope"
        elif rejected_by_action(reject_action, index):
            reason = "synthetic_rejection"
        if reason is None and row_date is not None:
            result.accepted.append((row_date, encoded))
        else:
            result.rejected.append({"index": index, "status": "rejected", "reason": reason})
    return result


def records_view(partition_rejected: list[dict[str, object]], total: int, mode: RecordResults
                 ) -> list[dict[str, object]] | None:
    if mode is RecordResults.NONE:
        return None
    if mode is RecordResults.REJECTED_ONLY:
        return partition_rejected
    rejected = {int(str(item["index"])): item for item in partition_rejected}
    return [rejected.get(index, {"index": index, "status": "accepted"}) for index in range(total)]


@dataclass
class EffectInput:
    resource: str
    spec: ResourceSpec
    scope: Scope
    accepted: list[tuple[str, bytes]]
    rejected_rows: int
    request_id: int
    receipt_id: str
    payload_digest: str
    reported_accepted: int
    reported_rejected: int
    mutation_key: str | None = None
    idempotency_key: str | None = None
    job_id: str | None = None
    keep_rows: bool = True
    """False under ``storage: ledger_only``: the effect records count and digest only."""


def apply_effect(txn: Txn, effect: EffectInput, now: float) -> int:
    replaced = 0
    if effect.spec.mutation is MutationKind.PARTITION_REPLACE:
        cursor = txn.conn.execute(
            # Replaced rows are gone from the receiver's data; the effect keeps their count.
            "DELETE FROM rows WHERE resource = ? AND row_date >= ? AND row_date < ?",
            (effect.resource, effect.scope.start, effect.scope.end))
        replaced = cursor.rowcount
    encoded_rows = [encoded for _, encoded in effect.accepted]
    cursor = txn.conn.execute(
        "INSERT INTO effects (request_id, receipt_id, job_id, resource, mutation, scope_start, scope_end, "
        "mutation_key, idempotency_key, payload_digest, accepted_rows, rejected_rows, replaced_rows, "
        "reported_accepted_rows, reported_rejected_rows, content_digest, applied_at, content_sum) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (effect.request_id, effect.receipt_id, effect.job_id, effect.resource, effect.spec.mutation.value,
         effect.scope.start, effect.scope.end, effect.mutation_key, effect.idempotency_key,
         effect.payload_digest, len(effect.accepted), effect.rejected_rows, replaced,
         effect.reported_accepted, effect.reported_rejected,
         multiset_digest(encoded_rows), now, MultisetSum.of(encoded_rows).state()))
    effect_id = cursor.lastrowid
    assert effect_id is not None
    if effect.keep_rows:
        txn.conn.executemany(
            "INSERT INTO rows (resource, row_date, encoded, effect_id) VALUES (?, ?, ?, ?)",
            [(effect.resource, row_date, encoded, effect_id) for row_date, encoded in effect.accepted])
    return effect_id


# --- async jobs ---------------------------------------------------------------------------------


@dataclass
class NewJob:
    job_id: str
    request_id: int
    resource: str
    mutation_key: str | None
    payload_digest: str
    scope: Scope
    partition: Partition
    fail: bool
    accepted_delta: int
    rejected_delta: int


def create_job(txn: Txn, job: NewJob, now: float) -> None:
    txn.conn.execute(
        "INSERT INTO jobs (job_id, request_id, resource, mutation_key, payload_digest, scope_start, scope_end, "
        "created_at, state, fail, accepted_rows, rejected_rows, accepted_delta, rejected_delta, records) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
        (job.job_id, job.request_id, job.resource, job.mutation_key, job.payload_digest, job.scope.start,
         job.scope.end, now, int(job.fail), len(job.partition.accepted), len(job.partition.rejected),
         job.accepted_delta, job.rejected_delta, json.dumps(job.partition.rejected)))
    txn.conn.executemany(
        "INSERT INTO staged_rows (job_id, ordinal, row_date, encoded) VALUES (?, ?, ?, ?)",
        [(job.job_id, ordinal, row_date, encoded)
         for ordinal, (row_date, encoded) in enumerate(job.partition.accepted)])


def load_job(txn: Txn, job_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = txn.conn.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
    return row


def finish_job(txn: Txn, job: sqlite3.Row, state: str, spec: ResourceSpec, now: float) -> None:
    """Move a job to a terminal state; complete/incomplete apply its staged rows as one effect."""
    effect_id = None
    if state in ("complete", "incomplete"):
        staged = txn.conn.execute(
            "SELECT row_date, encoded FROM staged_rows WHERE job_id = ? ORDER BY ordinal", (job["job_id"],)
        ).fetchall()
        effect_id = apply_effect(txn, EffectInput(
            resource=job["resource"], spec=spec, scope=Scope(job["scope_start"], job["scope_end"]),
            accepted=[(row[0], bytes(row[1])) for row in staged], rejected_rows=job["rejected_rows"],
            request_id=job["request_id"], receipt_id=job["job_id"], payload_digest=job["payload_digest"],
            reported_accepted=job["accepted_rows"] + job["accepted_delta"],
            reported_rejected=job["rejected_rows"] + job["rejected_delta"],
            mutation_key=job["mutation_key"], job_id=job["job_id"]), now)
    txn.conn.execute("DELETE FROM staged_rows WHERE job_id = ?", (job["job_id"],))
    txn.conn.execute("UPDATE jobs SET state = ?, terminal_at = ?, effect_id = ? WHERE job_id = ?",
                     (state, now, effect_id, job["job_id"]))


def _outcome(job: sqlite3.Row) -> str:
    if job["fail"]:
        return "error"
    return "incomplete" if job["rejected_rows"] else "complete"


def observe_job(txn: Txn, job: sqlite3.Row, config: AsyncSpec, spec: ResourceSpec, now: float,
                *, count_poll: bool) -> sqlite3.Row:
    """Advance a job by one observation: count the poll, finish it when its time or poll budget is spent."""
    if job["state"] in TERMINAL_STATES:
        return job
    polls = job["polls"] + (1 if count_poll else 0)
    due_by_polls = config.complete_after_polls is not None and polls >= config.complete_after_polls
    due_by_time = (config.complete_after_seconds is not None
                   and now >= job["created_at"] + config.complete_after_seconds)
    txn.conn.execute("UPDATE jobs SET polls = ?, state = 'running' WHERE job_id = ?", (polls, job["job_id"]))
    if due_by_polls or due_by_time:
        finish_job(txn, job, _outcome(job), spec, now)
    refreshed = load_job(txn, job["job_id"])
    assert refreshed is not None
    return refreshed


def settle_due_jobs(txn: Txn, config: AsyncSpec | None, spec: ResourceSpec | None, now: float) -> int:
    """Finish every job whose receiver-clock deadline has passed (no poll counted)."""
    if config is None or spec is None or config.complete_after_seconds is None:
        return 0
    # Only jobs of the resource ``spec`` describes: after a behaviour switch, a job of another resource
    # must not be applied with this resource's mutation.
    due = txn.conn.execute(
        "SELECT * FROM jobs WHERE state IN ('pending', 'running') AND resource = ? AND created_at + ? <= ?",
        (config.resource, config.complete_after_seconds, now)).fetchall()
    for job in due:
        finish_job(txn, job, _outcome(job), spec, now)
    return len(due)


def receipt_expired(job: sqlite3.Row, config: AsyncSpec, now: float) -> bool:
    return (config.receipt_ttl_seconds is not None and job["terminal_at"] is not None
            and now > job["terminal_at"] + config.receipt_ttl_seconds)


def job_view(job: sqlite3.Row, config: AsyncSpec, mode: RecordResults) -> dict[str, object]:
    state = job["state"]
    terminal = state in TERMINAL_STATES and state != "cancelled"
    total = job["accepted_rows"] + job["rejected_rows"]
    accepted = job["accepted_rows"] + job["accepted_delta"]
    rejected = job["rejected_rows"] + job["rejected_delta"]
    if state == "error":
        accepted, rejected = 0, total
    view: dict[str, object] = {
        "job_id": job["job_id"],
        "phase": getattr(config.phases, job["state"]),
        "resource": job["resource"],
        "range_start": job["scope_start"],
        "range_end": job["scope_end"],
        "accepted_rows": accepted if terminal else None,
        "rejected_rows": rejected if terminal else None,
    }
    if terminal and state != "error":
        records = records_view(json.loads(job["records"]), total, mode)
        if records is not None:
            view["records"] = records
    return view
