"""Synchronous batch protocol and the read-only summary query."""

from __future__ import annotations

import json
import sqlite3

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mock_receiver import ledger_only
from mock_receiver.behaviour import Endpoint, FenceType, MutationKind, StatusAction
from mock_receiver.canonical import bytes_digest, fields_digest, ordered_digest, summary_digests
from mock_receiver.delivery import tracked
from mock_receiver.engine import (
    EffectInput,
    Scope,
    apply_effect,
    new_id,
    parse_scope,
    partition_rows,
    records_view,
)
from mock_receiver.engine import settle_due_jobs as settle_jobs
from mock_receiver.faults import Decision, retry_after_value
from mock_receiver.fence_keys import read_fence_key
from mock_receiver.intake import (
    Receiver,
    decide_with_delays,
    read_body_bounded,
    receiver_of,
    record_failure,
    record_rejection,
)
from mock_receiver.ledger import RequestRecord, Txn
from mock_receiver.payloads import Submission, decode_body, normalised_coding, normalised_media_type
from mock_receiver.problems import PROBLEM_MEDIA_TYPE, ProblemError

JSON_MEDIA_TYPE = "application/json"


def fault_response(action: StatusAction, now: float) -> Response:
    """A configured synthetic status. A 409 is bare on purpose: it proves nothing."""
    headers = {}
    retry_after = retry_after_value(action, now)
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    if action.status == 409:
        return Response(status_code=409, headers=headers)
    return ProblemError(action.status, "synthetic_fault", "Synthetic fault",
                        "configured by the receiver behaviour", headers=headers).response()


def _unknown_resource() -> ProblemError:
    return ProblemError(404, "unknown_resource", "Not found", "no such resource on this receiver")


class _SyncRequest:
    """Everything validated before the ledger transaction starts."""

    def __init__(self, request: Request, receiver: Receiver, record: RequestRecord) -> None:
        self.request = request
        self.receiver = receiver
        self.behaviour = receiver.behaviour
        self.record = record
        self.resource = str(request.path_params["resource"])
        self.submission: Submission | None = None
        self.scope = Scope()
        self.fence_key: str | None = None
        self.reserved = False
        """True once phase one reserved the fence key for this request (in_progress: conflict)."""

    async def validate(self) -> None:
        behaviour, record, request = self.behaviour, self.record, self.request
        spec = behaviour.resources.get(self.resource)
        if spec is None or not behaviour.sync.enabled:
            raise _unknown_resource()
        if request.method == "PUT" and not spec.put_idempotent:
            raise ProblemError(405, "method_not_allowed", "Method not allowed",
                               "this resource is not configured for idempotent PUT", headers={"Allow": "POST"})
        fence = behaviour.sync.fence
        found = read_fence_key(request, fence)
        self.fence_key = found.key
        record.idempotency_key = found.logged  # an ignored header too, for forensics
        if found.key is not None:
            record.mutation_key = found.key
        body = await read_body_bounded(request, behaviour.limits.max_body_bytes, record)
        record.body_digest = bytes_digest(body)
        submission = decode_body(body, request.headers.get("content-type"),
                                 request.headers.get("content-encoding"), behaviour.limits)
        self.submission = submission
        record.row_count = len(submission.rows)
        record.payload_digest = ordered_digest(submission.encoded)
        query = request.query_params
        self.scope = parse_scope(query.get("range_start", submission.scalars.get("range_start")),
                                 query.get("range_end", submission.scalars.get("range_end")))
        record.scope_start, record.scope_end = self.scope.start, self.scope.end
        if spec.mutation is MutationKind.PARTITION_REPLACE and self.scope.start is None:
            raise ProblemError(422, "scope_required", "Unprocessable content",
                               "partition_replace needs range_start and range_end")
        if fence.required and fence.type is not FenceType.NONE and self.fence_key is None \
                and fence.type is not FenceType.BARE_409:
            where = f"the {fence.header} header" if fence.location == "header" else "a request id"
            raise ProblemError(400, "fence_key_required", "Bad request", f"{where} is required")

    def request_digest(self, fence_type: FenceType) -> str:
        record = self.record
        if fence_type is FenceType.FINGERPRINT_LEDGER:
            # The exact request: method, path, query, media headers and the wire body bytes. Media type
            # and content coding are compared as RFC 9110 defines them (case-insensitive tokens,
            # parameters normalised), not as header bytes: `Application/JSON; charset="UTF-8"` is
            # `application/json;charset=utf-8`.
            query = json.dumps(sorted(self.request.query_params.multi_items()))
            return fields_digest(self.request.method, self.request.url.path, query,
                                 normalised_media_type(self.request.headers.get("content-type")),
                                 normalised_coding(self.request.headers.get("content-encoding")),
                                 record.body_digest)
        # Stripe-like parameter comparison: the semantic request, not its encoding.
        return fields_digest(self.request.method, self.resource, self.scope.start, self.scope.end,
                             record.payload_digest)

    def _fence_key(self) -> str | None:
        fence = self.behaviour.sync.fence
        if fence.type is FenceType.BARE_409:
            return fields_digest(self.scope.start, self.scope.end, self.record.payload_digest)
        return None if fence.type is FenceType.NONE else self.fence_key

    def _live_fence(self, txn: Txn, key: str, now: float) -> tuple[sqlite3.Row | None, bool]:
        """The stored fence row and whether it is past its retention (kept as stale for current_state)."""
        fence = self.behaviour.sync.fence
        existing = txn.fence(fence.type.value, self.resource, key)
        if existing is None or fence.retention_seconds is None \
                or existing["created_at"] + fence.retention_seconds >= now:
            return existing, False
        if fence.after_retention == "current_state":
            return existing, True
        txn.drop_fence(fence.type.value, self.resource, key)
        return None, False

    def reserve(self, txn: Txn) -> Response | None:
        """Phase one of an ``in_progress: conflict`` fence: reserve the key as executing, or answer now
        (409 while another request holds it; the usual repeat answers once it finished)."""
        key = self._fence_key()
        assert key is not None
        now = txn.now()
        existing, stale = self._live_fence(txn, key, now)
        if existing is None:
            txn.put_fence(self.behaviour.sync.fence.type.value, self.resource, key,
                          request_digest=self.request_digest(self.behaviour.sync.fence.type), created_at=now,
                          status=None, response=None, receipt_id=None)
            self.reserved = True
            return None
        if existing["status"] is None:
            problem = ProblemError(409, "idempotency_key_in_use", "Conflict",
                                   "another request with this key is still executing; retry later")
            self.record.status, self.record.outcome, self.record.problem = 409, "conflict", problem.slug
            txn.record_request(self.record, now)
            return problem.response()
        return self._answer_existing(txn, existing, self.request_digest(self.behaviour.sync.fence.type), now,
                                     stale=stale)

    def release(self, txn: Txn) -> None:
        """Free the key this request reserved, if it is still only reserved (no stored answer)."""
        key = self._fence_key()
        if not self.reserved or key is None:
            return
        fence = self.behaviour.sync.fence
        existing = txn.fence(fence.type.value, self.resource, key)
        if existing is not None and existing["status"] is None:
            txn.drop_fence(fence.type.value, self.resource, key)

    def decide(self, txn: Txn, decision: Decision) -> Response:
        behaviour, record = self.behaviour, self.record
        assert self.submission is not None
        now = txn.now()
        fence = behaviour.sync.fence
        key = self._fence_key()
        digest = self.request_digest(fence.type) if key is not None else ""
        # A fence that saves execution errors answers a repeat from what it saved: a replay executes
        # nothing, so no fault rule applies to it. Otherwise faults come first, as documented.
        consult_first = fence.save_errors and not self.reserved
        if key is not None and consult_first:
            existing, stale = self._live_fence(txn, key, now)
            if existing is not None:
                return self._answer_existing(txn, existing, digest, now, stale=stale)
        if decision.status is not None and not decision.status.after_effect:
            record.status, record.outcome = decision.status.status, "fault"
            txn.record_request(record, now)
            response = fault_response(decision.status, now)
            if key is not None and fence.save_errors and decision.status.status >= 500:
                txn.put_fence(fence.type.value, self.resource, key, request_digest=digest, created_at=now,
                              status=response.status_code, response=bytes(response.body), receipt_id=None)
            elif self.reserved and key is not None:
                txn.drop_fence(fence.type.value, self.resource, key)  # not executed: the key is free again
            return response
        if key is not None and not consult_first and not self.reserved:
            existing, stale = self._live_fence(txn, key, now)
            if existing is not None:
                return self._answer_existing(txn, existing, digest, now, stale=stale)
        return self._apply(txn, decision, fence_name=fence.type.value, fence_key=key, digest=digest, now=now)

    def _current_state(self, txn: Txn, now: float) -> Response:
        """AIP-155 style answer to a stale duplicate: the range as it is now, no receipt, no effect."""
        if self.behaviour.storage == "ledger_only":
            # No rows are kept: the state is the effect ledger's, as in the summary (or its 422 refusal),
            # never the empty rows table, which would claim the range holds nothing.
            answer = ledger_only.summary(txn, self.resource, self.scope)
        else:
            rows = txn.applied_rows(self.resource, self.scope.start, self.scope.end)
            answer = JSONResponse({"resource": self.resource, "range_start": self.scope.start,
                                   "range_end": self.scope.end, **summary_digests(rows)})
        if answer.status_code == 200:
            answer.headers["Idempotent-Replayed"] = "current-state"
        self.record.status, self.record.outcome = answer.status_code, "current_state"
        txn.record_request(self.record, now)
        return answer

    def _answer_existing(self, txn: Txn, stored: sqlite3.Row, digest: str, now: float, *,
                         stale: bool = False) -> Response:
        record, fence = self.record, self.behaviour.sync.fence
        if fence.type is FenceType.BARE_409:
            record.status, record.outcome = 409, "duplicate"
            txn.record_request(record, now)
            return Response(status_code=409)
        if stored["request_digest"] == digest and stale:
            return self._current_state(txn, now)
        if stored["request_digest"] == digest and fence.replay == "conflict_with_receipt":
            duplicate = ProblemError(409, "duplicate_submission", "Duplicate submission",
                                     "this key and request were already applied",
                                     extra={"receipt_id": stored["receipt_id"]})
            record.status, record.outcome, record.problem = 409, "duplicate", duplicate.slug
            record.receipt_id = stored["receipt_id"]
            txn.record_request(record, now)
            return duplicate.response()
        if stored["request_digest"] == digest:
            record.status, record.outcome, record.receipt_id = stored["status"], "replayed", stored["receipt_id"]
            txn.record_request(record, now)
            media = JSON_MEDIA_TYPE if stored["status"] < 400 else PROBLEM_MEDIA_TYPE
            return Response(content=stored["response"], status_code=stored["status"], media_type=media,
                            headers={"Idempotent-Replayed": "true"})
        default = "idempotency_conflict" if fence.type is FenceType.FINGERPRINT_LEDGER else "idempotency_key_mismatch"
        slug = fence.mismatch_problem or default
        problem = ProblemError(fence.mismatch_status, slug, "Idempotency key reused",
                               "the key was first used with a different request")
        record.status, record.outcome, record.problem = problem.status, "conflict", slug
        txn.record_request(record, now)
        return problem.response()

    def _apply(self, txn: Txn, decision: Decision, *, fence_name: str, fence_key: str | None, digest: str,
               now: float) -> Response:
        behaviour, record, submission = self.behaviour, self.record, self.submission
        assert submission is not None
        spec = behaviour.resources[self.resource]
        partition = partition_rows(submission, spec, self.scope, decision.reject_rows)
        miscount = decision.miscount
        reported_accepted = len(partition.accepted) + (miscount.accepted_delta if miscount else 0)
        reported_rejected = len(partition.rejected) + (miscount.rejected_delta if miscount else 0)
        success_status = behaviour.sync.success_status
        record.receipt_id = receipt_id = new_id("rcpt")
        record.outcome = "applied"
        record.status = decision.status.status if decision.status is not None else success_status
        request_id = txn.record_request(record, now)
        effect_id = apply_effect(txn, EffectInput(
            resource=self.resource, spec=spec, scope=self.scope, accepted=partition.accepted,
            rejected_rows=len(partition.rejected), request_id=request_id, receipt_id=receipt_id,
            payload_digest=record.payload_digest or "", reported_accepted=reported_accepted,
            reported_rejected=reported_rejected, mutation_key=record.mutation_key,
            idempotency_key=record.idempotency_key, keep_rows=behaviour.storage == "rows"), now)
        txn.conn.execute("UPDATE requests SET effect_id = ? WHERE request_id = ?", (effect_id, request_id))
        body: dict[str, object] = {"receipt_id": receipt_id, "resource": self.resource,
                                   "range_start": self.scope.start, "range_end": self.scope.end,
                                   "accepted_rows": reported_accepted, "rejected_rows": reported_rejected}
        records = records_view(partition.rejected, len(submission.rows), behaviour.sync.record_results)
        if records is not None:
            body["records"] = records
        encoded_body = json.dumps(body, separators=(",", ":")).encode("utf-8")
        answer = Response(content=encoded_body, status_code=success_status, media_type=JSON_MEDIA_TYPE)
        if decision.status is not None:
            answer = fault_response(decision.status, now)
        # The fence keeps the true success response (a same-key resend then proves the application),
        # unless it saves execution errors as the vendor does: then the 5xx actually sent is what it keeps.
        stored = answer if behaviour.sync.fence.save_errors and answer.status_code >= 500 else None
        if fence_key is not None and fence_name != FenceType.NONE.value:
            txn.put_fence(fence_name, self.resource, fence_key, request_digest=digest, created_at=now,
                          status=stored.status_code if stored else success_status,
                          response=bytes(stored.body) if stored else encoded_body,
                          receipt_id=None if stored else receipt_id)
        return answer


async def submit_batch(request: Request) -> Response:
    receiver = receiver_of(request)
    record = RequestRecord(endpoint=Endpoint.SYNC_SUBMIT.value, method=request.method,
                           resource=str(request.path_params["resource"]))
    intake = _SyncRequest(request, receiver, record)
    try:
        await intake.validate()
    except ProblemError as problem:
        return await record_rejection(receiver, record, problem)
    except Exception as error:  # a receiver bug while reading the request: logged, never lost
        return await record_failure(receiver, record, error)
    decision = receiver.faults.decide(intake.behaviour, Endpoint.SYNC_SUBMIT, request.method, intake.resource)
    record.rule = decision.rule_names
    fence = intake.behaviour.sync.fence
    try:
        if fence.in_progress == "conflict" and fence.type is FenceType.IDEMPOTENCY_KEY \
                and intake.fence_key is not None:
            early = await receiver.ledger.run(intake.reserve)
            if early is not None:
                return tracked(early, receiver.ledger, record)
        return await decide_with_delays(receiver, decision, record, lambda txn: intake.decide(txn, decision))
    except Exception as error:  # the failed transaction was rolled back: log it, free its reservation
        return await record_failure(receiver, record, error, release=intake.release)


async def resource_summary(request: Request) -> Response:
    receiver = receiver_of(request)
    behaviour = receiver.behaviour
    resource = str(request.path_params["resource"])
    if resource not in behaviour.resources:
        return _unknown_resource().response()
    try:
        scope = parse_scope(request.query_params.get("range_start"), request.query_params.get("range_end"))
    except ProblemError as problem:
        return problem.response()
    decision = receiver.faults.decide(behaviour, Endpoint.SUMMARY, "GET", resource)

    def work(txn: Txn) -> Response:
        now = txn.now()
        if decision.status is not None:
            return fault_response(decision.status, now)
        jobs = behaviour.async_jobs
        if jobs is not None and jobs.resource == resource:
            settle_jobs(txn, jobs, behaviour.resources[resource], now)
        if behaviour.storage == "ledger_only":
            return ledger_only.summary(txn, resource, scope)
        rows = txn.applied_rows(resource, scope.start, scope.end)
        return JSONResponse({"resource": resource, "range_start": scope.start, "range_end": scope.end,
                             **summary_digests(rows)})

    return await receiver.ledger.run(work)
