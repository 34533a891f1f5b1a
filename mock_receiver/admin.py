"""Admin API under the reserved prefix /_admin/: ground truth, behaviour, clock, jobs.

Certification reads the receiver's truth only through these endpoints. Listing
endpoints return keys, digests and counts; the receiver's row data is never
exposed here.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import JSONResponse, Response

from mock_receiver import strict_json
from mock_receiver.admin_guard import AdminRoute, admin_body
from mock_receiver.behaviour import Behaviour, BehaviourError, describe_validation_error, load_behaviour_bytes
from mock_receiver.engine import TERMINAL_STATES, finish_job, load_job, settle_due_jobs
from mock_receiver.host_guard import ADMIN_PREFIX
from mock_receiver.intake import receiver_of
from mock_receiver.ledger import MAX_CLOCK_OFFSET_SECONDS, Txn
from mock_receiver.problems import ProblemError
from mock_receiver.secret_sources import AuthConfigError

_INT64_MAX = 2**63 - 1

router = APIRouter(prefix=ADMIN_PREFIX, tags=["admin"], route_class=AdminRoute)
_DOCUMENT_PARSER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="behaviour-parser")

Text = Annotated[str | None, Query(max_length=256)]
After = Annotated[int | None, Query(ge=0, le=_INT64_MAX)]
JobCursor = Annotated[str | None, Query(max_length=64)]
Limit = Annotated[int, Query(ge=1, le=10_000)]


class ClockAdvance(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(ge=0, le=10 * 365 * 86_400)


def _settle(behaviour: Behaviour, txn: Txn) -> None:
    """Settle due jobs under ``behaviour``: a snapshot taken on the event loop, because the work runs on
    the ledger's thread while a behaviour switch may replace ``receiver.behaviour`` at any moment."""
    jobs = behaviour.async_jobs
    if jobs is not None:
        settle_due_jobs(txn, jobs, behaviour.resources[jobs.resource], txn.now())


def _page(items: list[dict[str, object]], id_column: str, limit: int) -> dict[str, object]:
    last = items[-1][id_column] if len(items) == limit else None
    return {"items": items, "next_after": last}


def _filters(**values: object) -> dict[str, object]:
    return {column: value for column, value in values.items() if value is not None}


@router.get("/health")
async def health(request: Request) -> dict[str, object]:
    receiver = receiver_of(request)
    now = await receiver.ledger.run(lambda txn: txn.now())
    return {"status": "ok", "behaviour": receiver.behaviour.name, "receiver_clock": now}


@router.get("/requests")
async def list_requests(request: Request, *, mutation_key: Text = None, idempotency_key: Text = None,
                        resource: Text = None, scope_start: Text = None, scope_end: Text = None,
                        endpoint: Text = None, outcome: Text = None, receipt_id: Text = None,
                        job_id: Text = None, after_id: After = None, limit: Limit = 1000) -> dict[str, object]:
    receiver = receiver_of(request)
    filters = _filters(mutation_key=mutation_key, idempotency_key=idempotency_key, resource=resource,
                       scope_start=scope_start, scope_end=scope_end, endpoint=endpoint, outcome=outcome,
                       receipt_id=receipt_id, job_id=job_id)
    items = await receiver.ledger.run(
        lambda txn: txn.select("requests", filters, order="request_id", after=after_id, limit=limit))
    return _page(items, "request_id", limit)


@router.get("/effects")
async def list_effects(request: Request, *, mutation_key: Text = None, idempotency_key: Text = None,
                       resource: Text = None, scope_start: Text = None, scope_end: Text = None,
                       receipt_id: Text = None, job_id: Text = None, after_id: After = None,
                       limit: Limit = 1000) -> dict[str, object]:
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    filters = _filters(mutation_key=mutation_key, idempotency_key=idempotency_key, resource=resource,
                       scope_start=scope_start, scope_end=scope_end, receipt_id=receipt_id, job_id=job_id)

    def work(txn: Txn) -> list[dict[str, object]]:
        _settle(behaviour, txn)
        return txn.select("effects", filters, order="effect_id", after=after_id, limit=limit)

    items = await receiver.ledger.run(work)
    return _page(items, "effect_id", limit)


def _job_admin_view(row: dict[str, object]) -> dict[str, object]:
    view = {key: value for key, value in row.items() if key != "records"}
    view["rejected_records"] = json.loads(str(row["records"]))
    return view


@router.get("/jobs")
async def list_jobs(request: Request, *, mutation_key: Text = None, resource: Text = None, state: Text = None,
                    after_id: JobCursor = None, limit: Limit = 1000) -> dict[str, object]:
    """Jobs in submission order; ``after_id`` is a job_id (the ``next_after`` of the previous page)."""
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    filters = _filters(mutation_key=mutation_key, resource=resource, state=state)

    def work(txn: Txn) -> list[dict[str, object]]:
        _settle(behaviour, txn)
        return txn.select_jobs(filters, after_job=after_id, limit=limit)

    items = await receiver.ledger.run(work)
    return _page([_job_admin_view(item) for item in items], "job_id", limit)


@router.get("/jobs/{job_id}")
async def get_job(request: Request, job_id: str) -> Response:
    receiver = receiver_of(request)
    behaviour = receiver.behaviour

    def work(txn: Txn) -> sqlite3.Row | None:
        _settle(behaviour, txn)
        return load_job(txn, job_id)

    job = await receiver.ledger.run(work)
    if job is None:
        return ProblemError(404, "unknown_job", "Not found", "no such job").response()
    return JSONResponse(_job_admin_view(dict(job)))


@router.post("/jobs/{job_id}/cancel")
async def cancel_job(request: Request, job_id: str) -> Response:
    """External cancellation (an operator acting on the receiver, not a client mutation)."""
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    jobs = behaviour.async_jobs

    def work(txn: Txn) -> Response:
        _settle(behaviour, txn)
        job = load_job(txn, job_id)
        if job is None or jobs is None:
            return ProblemError(404, "unknown_job", "Not found", "no such job").response()
        if job["state"] in TERMINAL_STATES:
            return ProblemError(409, "job_terminal", "Conflict", f"the job is already {job['state']}").response()
        finish_job(txn, job, "cancelled", behaviour.resources[jobs.resource], txn.now())
        cancelled = load_job(txn, job_id)
        assert cancelled is not None
        return JSONResponse(_job_admin_view(dict(cancelled)))

    return await receiver.ledger.run(work)


@router.post("/reset")
async def reset(request: Request) -> dict[str, object]:
    """Forget every request, effect, row, fence and job, and restart rule counters and the clock."""
    receiver = receiver_of(request)
    await receiver.ledger.run(receiver.ledger.reset_all)
    receiver.faults.reset()
    receiver.cross_site_refused = 0
    receiver.auth.counters.reset()
    return {"status": "reset"}


@router.get("/behaviour")
async def get_behaviour(request: Request) -> dict[str, object]:
    return receiver_of(request).behaviour.model_dump(mode="json")


@router.put("/behaviour")
async def put_behaviour(request: Request) -> Response:
    """Replace the active behaviour (JSON or YAML document); invalid input changes nothing."""
    receiver = receiver_of(request)
    try:
        # Parsed on its own thread: a large document (YAML parsing is slow) must not stall the event
        # loop, which serves the data API meanwhile. One parser thread: concurrent PUTs queue.
        behaviour = await asyncio.get_running_loop().run_in_executor(
            _DOCUMENT_PARSER, load_behaviour_bytes, admin_body(request), "the behaviour document")
    except BehaviourError as error:
        return ProblemError(422, "invalid_behaviour", "Invalid behaviour", str(error)).response()
    try:
        receiver.switch(behaviour)
    except AuthConfigError as error:  # its secret cannot be read: the active behaviour stays
        return ProblemError(422, "invalid_behaviour", "Invalid behaviour", str(error)).response()
    return JSONResponse(behaviour.model_dump(mode="json"))


@router.get("/clock")
async def get_clock(request: Request) -> dict[str, object]:
    return await receiver_of(request).ledger.run(
        lambda txn: {"receiver_clock": txn.now(), "offset_seconds": txn.clock_offset()})


_CLOCK_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": ClockAdvance.model_json_schema()}}}}


@router.post("/clock/advance", response_model=None, openapi_extra=_CLOCK_BODY)
async def advance_clock(request: Request) -> Response | dict[str, object]:
    """Move the receiver clock forward (jobs, receipt TTLs and fence retention follow it)."""
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    try:
        # Strict: "5" and true are not numbers here (the JSON itself was parsed strictly by the route).
        advance = ClockAdvance.model_validate(strict_json.loads_bytes(admin_body(request)), strict=True)
    except ProblemError as problem:
        return problem.response()
    except ValidationError as error:
        return ProblemError(422, "invalid_request", "Unprocessable content",
                            extra={"errors": describe_validation_error(error)}).response()

    def work(txn: Txn) -> Response | dict[str, object]:
        if txn.clock_offset() + advance.seconds > MAX_CLOCK_OFFSET_SECONDS:
            # A cap on the total, not per call: far enough for any retention, far from year 9999.
            return ProblemError(422, "clock_out_of_range", "Unprocessable content",
                                f"the total clock offset may not exceed {MAX_CLOCK_OFFSET_SECONDS} seconds").response()
        offset = txn.advance_clock(advance.seconds)
        _settle(behaviour, txn)
        return {"receiver_clock": txn.now(), "offset_seconds": offset}

    return await receiver.ledger.run(work)


@router.get("/stats")
async def stats(request: Request) -> dict[str, object]:
    """Counts by outcome and every mutation key with more than one applied effect."""
    receiver = receiver_of(request)
    behaviour = receiver.behaviour

    def work(txn: Txn) -> dict[str, object]:
        _settle(behaviour, txn)
        conn = txn.conn
        outcomes = dict(conn.execute("SELECT outcome, count(*) FROM requests GROUP BY outcome").fetchall())
        delivery = dict(conn.execute(
            "SELECT response_delivered, count(*) FROM requests GROUP BY response_delivered").fetchall())
        multiple = [
            {"mutation_key": key, "effects": count} for key, count in conn.execute(
                "SELECT mutation_key, count(*) FROM effects WHERE mutation_key IS NOT NULL "
                "GROUP BY mutation_key HAVING count(*) > 1 ORDER BY mutation_key").fetchall()]
        return {
            "requests": conn.execute("SELECT count(*) FROM requests").fetchone()[0],
            "first_received_at": conn.execute("SELECT min(received_at) FROM requests").fetchone()[0],
            "last_received_at": conn.execute("SELECT max(received_at) FROM requests").fetchone()[0],
            "effects": conn.execute("SELECT count(*) FROM effects").fetchone()[0],
            "requests_by_outcome": outcomes,
            "requests_by_delivery": delivery,
            "mutation_keys_with_multiple_effects": multiple,
        }

    counts = await receiver.ledger.run(work)
    counts["rules"] = {name: {"matched": counter.matched, "fired": counter.fired}
                       for name, counter in receiver.faults.counters.items()}
    counts["cross_site_refused"] = receiver.cross_site_refused
    counts["data_requests_in_flight"] = receiver.data_requests_in_flight
    return counts
