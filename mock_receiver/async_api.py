"""Asynchronous bulk-job protocol: multipart submit, receipt polling, duplicate-key fence."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mock_receiver.behaviour import AsyncSpec, Behaviour, Endpoint, FenceType, MutationKind
from mock_receiver.canonical import bytes_digest, fields_digest
from mock_receiver.delivery import tracked
from mock_receiver.engine import (
    NewJob,
    Scope,
    create_job,
    job_view,
    load_job,
    new_id,
    observe_job,
    parse_scope,
    partition_rows,
    receipt_expired,
)
from mock_receiver.faults import Decision
from mock_receiver.intake import (
    decide_with_delays,
    is_fence_key,
    key_from_filename,
    read_body_bounded,
    receiver_of,
    record_failure,
    record_rejection,
)
from mock_receiver.ledger import RequestRecord, Txn
from mock_receiver.payloads import Submission, decode_body, media_essence
from mock_receiver.problems import ProblemError
from mock_receiver.sync_api import fault_response

JOBS_PATH = "/mock/v1/dataset-jobs"
_FENCE_NAME = "filename_key"


def _jobs_disabled() -> ProblemError:
    return ProblemError(404, "async_jobs_disabled", "Not found", "this receiver has no async job endpoint")


async def _validate(request: Request, behaviour: Behaviour, record: RequestRecord
                    ) -> tuple[AsyncSpec, Submission, Scope, str | None]:
    """Everything read from ``behaviour``, the one snapshot taken when the request arrived: a switch
    while the upload is still arriving must not mix two behaviours in one request."""
    config = behaviour.async_jobs
    if config is None or not config.enabled:
        raise _jobs_disabled()
    if media_essence(request.headers.get("content-type")) != "multipart/form-data":
        raise ProblemError(415, "multipart_required", "Unsupported media type",
                           "submit a dataset job as multipart/form-data")
    limits = behaviour.limits
    body = await read_body_bounded(request, limits.max_body_bytes, record)
    record.body_digest = bytes_digest(body)
    submission = decode_body(body, request.headers.get("content-type"), None, limits)
    record.row_count = len(submission.rows)
    record.payload_digest = submission.decoded_digest
    scope = parse_scope(submission.scalars.get("range_start"), submission.scalars.get("range_end"))
    record.scope_start, record.scope_end = scope.start, scope.end
    if behaviour.resources[config.resource].mutation is MutationKind.PARTITION_REPLACE and scope.start is None:
        raise ProblemError(422, "scope_required", "Unprocessable content",
                           "partition_replace needs range_start and range_end parts")
    key = None
    if config.fence.type is FenceType.FILENAME_KEY:
        key = key_from_filename(submission.filename or "")
        record.mutation_key = key
    elif submission.filename:
        # Logged for forensics even where this receiver does not fence on it.
        try:
            record.mutation_key = key_from_filename(submission.filename)
        except ProblemError:
            record.mutation_key = None
    return config, submission, scope, key


def _decide(txn: Txn, behaviour: Behaviour, record: RequestRecord, decision: Decision, *, config: AsyncSpec,
            submission: Submission, scope: Scope, key: str | None) -> Response:
    now = txn.now()
    if decision.status is not None and not decision.status.after_effect:
        record.status, record.outcome = decision.status.status, "fault"
        txn.record_request(record, now)
        return fault_response(decision.status, now)
    resource = config.resource
    submission_digest = fields_digest(submission.decoded_digest, scope.start, scope.end)
    fence = config.fence
    fence_key = submission_digest if fence.type is FenceType.BARE_409 else key
    if fence.type is not FenceType.NONE and fence_key is not None:
        existing = txn.fence(fence.type.value, resource, fence_key)
        if existing is not None and fence.retention_seconds is not None \
                and existing["created_at"] + fence.retention_seconds < now:
            txn.drop_fence(fence.type.value, resource, fence_key)
            existing = None
        if existing is not None:
            return _answer_existing(txn, record, config,
                                    same_payload=existing["request_digest"] == submission_digest,
                                    original_job=existing["receipt_id"], now=now)
    spec = behaviour.resources[resource]
    partition = partition_rows(submission, spec, scope, decision.reject_rows)
    job_id = new_id("job")
    record.job_id = record.receipt_id = job_id
    record.outcome = "accepted"
    record.status = decision.status.status if decision.status is not None else 202
    request_id = txn.record_request(record, now)
    miscount = decision.miscount
    create_job(txn, NewJob(job_id=job_id, request_id=request_id, resource=resource, mutation_key=key,
                           payload_digest=submission.decoded_digest, scope=scope, partition=partition,
                           fail=decision.job_failure,
                           accepted_delta=miscount.accepted_delta if miscount else 0,
                           rejected_delta=miscount.rejected_delta if miscount else 0), now)
    if fence.type is not FenceType.NONE and fence_key is not None:
        txn.put_fence(fence.type.value, resource, fence_key, request_digest=submission_digest, created_at=now,
                      status=202, response=None, receipt_id=job_id)
    if decision.status is not None:
        return fault_response(decision.status, now)
    return JSONResponse({"job_id": job_id, "phase": config.phases.pending}, status_code=202,
                        headers={"Location": f"{JOBS_PATH}/{job_id}"})


def _answer_existing(txn: Txn, record: RequestRecord, config: AsyncSpec, *, same_payload: bool,
                     original_job: str | None, now: float) -> Response:
    if config.fence.type is FenceType.BARE_409:
        record.status, record.outcome = 409, "duplicate"
        txn.record_request(record, now)
        return Response(status_code=409)
    if not same_payload:
        problem = ProblemError(config.fence.conflict_status, "duplicate_key_conflict", "Duplicate key conflict",
                               "the duplicate key was first used with a different payload or range")
        record.status, record.outcome, record.problem = problem.status, "conflict", problem.slug
        txn.record_request(record, now)
        return problem.response()
    job = load_job(txn, original_job) if original_job else None
    extra: dict[str, object] = {"job_id": original_job}
    if job is not None:
        extra["phase"] = getattr(config.phases, job["state"])
    problem = ProblemError(409, "duplicate_submission", "Duplicate submission",
                           "this key and payload were already accepted", extra=extra,
                           headers={"Location": f"{JOBS_PATH}/{original_job}"})
    record.status, record.outcome, record.problem = 409, "duplicate", problem.slug
    record.receipt_id = record.job_id = original_job
    txn.record_request(record, now)
    return problem.response()


def _observe(txn: Txn, behaviour: Behaviour, record: RequestRecord, decision: Decision, *, config: AsyncSpec,
             job_id: str) -> Response:
    now = txn.now()
    if decision.status is not None:
        record.status, record.outcome = decision.status.status, "fault"
        txn.record_request(record, now)
        return fault_response(decision.status, now)
    job = load_job(txn, job_id)
    problem = None
    if job is None:
        problem = ProblemError(404, "unknown_job", "Not found", "no such job")
    elif receipt_expired(job, config, now):
        problem = ProblemError(config.expired_status, "receipt_expired", "Receipt expired",
                               "the job receipt is past its retention")
    if problem is not None or job is None:
        assert problem is not None
        record.status, record.outcome, record.problem = problem.status, "rejected", problem.slug
        txn.record_request(record, now)
        return problem.response()
    spec = behaviour.resources.get(job["resource"])
    if spec is not None:
        job = observe_job(txn, job, config, spec, now, count_poll=True)
    # else: a job of a resource the active behaviour no longer declares is shown as it stands (it can
    # only be finished under a behaviour that declares its resource again)
    record.status, record.outcome, record.mutation_key = 200, "observed", job["mutation_key"]
    record.effect_id = job["effect_id"]
    txn.record_request(record, now)
    view = job_view(job, config, config.record_results)
    return JSONResponse(view)


async def submit_job(request: Request) -> Response:
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    config = behaviour.async_jobs
    record = RequestRecord(endpoint=Endpoint.ASYNC_SUBMIT.value, method="POST",
                           resource=config.resource if config else None)
    try:
        config, submission, scope, key = await _validate(request, behaviour, record)
    except ProblemError as problem:
        return await record_rejection(receiver, record, problem)
    except Exception as error:  # a receiver bug while reading the request: logged, never lost
        return await record_failure(receiver, record, error)
    decision = receiver.faults.decide(behaviour, Endpoint.ASYNC_SUBMIT, "POST", config.resource)
    record.rule = decision.rule_names
    try:
        return await decide_with_delays(
            receiver, decision, record,
            lambda txn: _decide(txn, behaviour, record, decision, config=config, submission=submission,
                                scope=scope, key=key))
    except Exception as error:  # rolled back: logged as a failure
        return await record_failure(receiver, record, error)


async def get_job(request: Request) -> Response:
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    config = behaviour.async_jobs
    job_id = str(request.path_params["job_id"])
    record = RequestRecord(endpoint=Endpoint.JOB_POLL.value, method="GET",
                           resource=config.resource if config else None)
    if is_fence_key(job_id):
        record.job_id = record.receipt_id = job_id
    if config is None or not config.enabled:
        return await record_rejection(receiver, record, _jobs_disabled())
    decision = receiver.faults.decide(behaviour, Endpoint.JOB_POLL, "GET", config.resource)
    record.rule = decision.rule_names
    try:
        response = await receiver.ledger.run(
            lambda txn: _observe(txn, behaviour, record, decision, config=config, job_id=job_id))
    except Exception as error:  # rolled back: logged as a failure
        return await record_failure(receiver, record, error)
    if decision.delay is not None:
        await asyncio.sleep(decision.delay.seconds)
    return tracked(response, receiver.ledger, record)

