"""Shared request intake: receiver state, bounded body reading, rejection recording."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from mock_receiver.auth import AuthGate
from mock_receiver.auth_spec import MutualTlsAuth
from mock_receiver.behaviour import Behaviour
from mock_receiver.delivery import tracked
from mock_receiver.faults import Decision, FaultBook
from mock_receiver.ledger import Ledger, RequestRecord, Txn
from mock_receiver.listener_bounds import BodyTimeout, body_timeout_problem
from mock_receiver.problems import ProblemError
from mock_receiver.secret_sources import AuthConfigError

_LOG = logging.getLogger("mock_receiver")
_FENCE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:~-]{0,199}\Z")  # \Z: "$" would let a final "\n" in
_CONTENT_LENGTH = re.compile(r"^[0-9]{1,18}\Z")  # ASCII digits only; 18 digits stay inside SQLite's int64
_FILE_SUFFIXES = (".csv", ".json", ".ndjson", ".jsonl")


@dataclass
class Receiver:
    """Process-wide state shared by the data and admin applications."""

    behaviour: Behaviour
    ledger: Ledger
    faults: FaultBook = field(default_factory=FaultBook)
    auth: AuthGate = field(default_factory=AuthGate)
    tls_listener: bool = False
    """The data listener serves HTTPS (``--tls-dir``): only then can ``auth: mtls`` be switched to."""
    cross_site_refused: int = 0
    """Data requests refused as cross-site form writes since start or reset (mock_receiver/cross_site.py)."""
    data_requests_in_flight: int = 0
    """Data requests the application is still working on (mock_receiver/in_flight.py); never reset."""

    def __post_init__(self) -> None:
        if self.auth.spec != self.behaviour.auth:
            self.auth.configure(self.behaviour.auth)  # AuthConfigError when its secret cannot be read

    def switch(self, behaviour: Behaviour) -> None:
        if isinstance(behaviour.auth, MutualTlsAuth) and not self.tls_listener:
            # serve refuses the same file; accepted here it would answer 401 to every data request.
            raise AuthConfigError("auth method mtls needs a TLS data listener (serve --tls-dir)")
        self.auth.configure(behaviour.auth)  # first: an unreadable secret changes nothing
        self.behaviour = behaviour
        self.faults.reset()


def receiver_of(request: Request) -> Receiver:
    receiver: Receiver = request.app.state.receiver
    return receiver


async def decide_with_delays(receiver: Receiver, decision: Decision, record: RequestRecord,
                             decide: Callable[[Txn], Response]) -> Response:
    """Run the mutation decision in one ledger transaction, with the rule's delay before it (slow
    intake) or after it (committed, but the answer is late: a client read timeout then loses a
    real acknowledgement)."""
    if decision.delay is not None and not decision.delay.after_effect:
        await asyncio.sleep(decision.delay.seconds)
    response = await receiver.ledger.run(decide)
    if decision.delay is not None and decision.delay.after_effect:
        await asyncio.sleep(decision.delay.seconds)
    return tracked(response, receiver.ledger, record)


def client_disconnected() -> ProblemError:
    """The client went away before its body was complete: logged, never applied, nothing delivered."""
    return ProblemError(400, "client_disconnected", "Bad request", "the client disconnected before the body ended")


async def read_body_bounded(request: Request, limit: int, record: RequestRecord) -> bytes:
    """Read at most ``limit`` bytes; a larger body is a 413 before it is buffered (``body_bytes`` is then
    the declared length, which the 18-digit bound keeps inside SQLite's integer range)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not _CONTENT_LENGTH.match(declared):
            raise ProblemError(400, "bad_content_length", "Bad request", "Content-Length is not a number")
        record.body_bytes = int(declared)
        if int(declared) > limit:
            raise ProblemError(413, "body_too_large", "Content too large", f"body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            record.body_bytes = size
            if size > limit:
                raise ProblemError(413, "body_too_large", "Content too large", f"body exceeds {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        record.response_delivered = "false"
        raise client_disconnected() from None
    except BodyTimeout:
        raise body_timeout_problem() from None
    return b"".join(chunks)


async def read_admin_body(request: Request, limit: int) -> bytes:
    """An admin request body, bounded like a data body (413 problem) and disconnect-safe."""
    declared = request.headers.get("content-length")
    if declared is not None and (not _CONTENT_LENGTH.match(declared) or int(declared) > limit):
        raise ProblemError(413, "body_too_large", "Content too large", f"the body exceeds {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ProblemError(413, "body_too_large", "Content too large", f"the body exceeds {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise client_disconnected() from None
    except BodyTimeout:
        raise body_timeout_problem() from None
    return b"".join(chunks)


def is_fence_key(value: str) -> bool:
    return _FENCE_KEY.match(value) is not None


def check_fence_key(value: str, what: str) -> str:
    if not _FENCE_KEY.match(value):
        raise ProblemError(422, "bad_fence_key", "Unprocessable content",
                           f"{what} must be 1-200 characters of A-Z a-z 0-9 . _ : ~ -")
    return value


def key_from_filename(filename: str) -> str:
    """The receiver duplicate key carried by a file name such as ``<key>.csv.gz``."""
    stem = filename.removesuffix(".gz")  # a path separator stays in and fails the key check
    for suffix in _FILE_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem.removesuffix(suffix)
            break
    return check_fence_key(stem, "the file name stem (receiver duplicate key)")


async def record_failure(receiver: Receiver, record: RequestRecord, error: Exception,
                         release: Callable[[Txn], None] | None = None) -> Response:
    """A data request whose ledger work failed unexpectedly (a receiver bug: the failed item was rolled
    back, nothing of it is durable). It is still logged (status 500, outcome ``error``, problem
    ``internal_error``), and what it reserved earlier (an ``in_progress: conflict`` key) is released
    in the same transaction, so a retry is not refused for the key's whole retention. One log line
    names the exception class; no traceback, no payload."""
    _LOG.error("mock-receiver: internal error %s on %s", error.__class__.__name__, record.endpoint)
    problem = ProblemError(500, "internal_error", "Internal error")
    record.status, record.outcome, record.problem = 500, "error", problem.slug
    # Ids of rows the failed transaction rolled back must not be logged as if they existed.
    record.receipt_id = record.effect_id = record.request_id = None
    if record.endpoint != "job_poll":
        record.job_id = None

    def work(txn: Txn) -> None:
        if release is not None:
            release(txn)
        txn.record_request(record, txn.now())

    try:
        await receiver.ledger.run(work)
    except Exception as failure:  # the ledger itself is failing: answer all the same
        _LOG.error("mock-receiver: cannot log the failed request: %s", failure.__class__.__name__)
        return problem.response()
    return tracked(problem.response(), receiver.ledger, record)


async def record_rejection(receiver: Receiver, record: RequestRecord, problem: ProblemError) -> Response:
    """Commit the rejected request to the log, then answer with the problem."""
    record.status = problem.status
    record.outcome = "rejected" if record.outcome in ("received", "rejected") else record.outcome
    record.problem = problem.slug
    await receiver.ledger.run(lambda txn: txn.record_request(record, txn.now()))
    return tracked(problem.response(), receiver.ledger, record)
