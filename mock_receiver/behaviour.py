"""Behaviour file model: one closed pydantic schema for a vendor "personality".

Every model forbids unknown fields so a typo in a behaviour file fails loudly
instead of silently selecting a default behaviour.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mock_receiver.auth_spec import NO_AUTH, AuthSpec
from mock_receiver.documents import DocumentError, load_document, read_regular_file
from mock_receiver.ledger import MAX_CLOCK_OFFSET_SECONDS

_NAME = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
_PHASE = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
# Every number of a behaviour is bounded here, at validation time, so that no valid document can make
# the ledger store a number SQLite cannot hold (a miscount delta of 2**63 - 1 once passed validation
# and then turned every submit into a 500). Durations share the admin clock's cap.
_MAX_SECONDS = MAX_CLOCK_OFFSET_SECONDS
_MAX_COUNT = 1_000_000_000
_ORIGIN = r"^(\*|https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?)$"
_Seconds = Annotated[float, Field(gt=0, le=_MAX_SECONDS)]
_Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class BehaviourError(ValueError):
    """A behaviour file or document that does not validate (message is safe to print)."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class MutationKind(StrEnum):
    PARTITION_REPLACE = "partition_replace"
    INCREMENTAL_APPEND = "incremental_append"


class ResourceSpec(_Closed):
    mutation: MutationKind
    date_field: str = Field(min_length=1, max_length=64)
    put_idempotent: bool = False
    """Accept PUT as a naturally idempotent full replacement of the given range."""


class FenceType(StrEnum):
    NONE = "none"
    IDEMPOTENCY_KEY = "idempotency_key"
    FINGERPRINT_LEDGER = "fingerprint_ledger"
    BARE_409 = "bare_409"
    FILENAME_KEY = "filename_key"


class SyncFence(_Closed):
    type: Literal[FenceType.NONE, FenceType.IDEMPOTENCY_KEY, FenceType.FINGERPRINT_LEDGER, FenceType.BARE_409]
    header: str = Field(default="Idempotency-Key", pattern=r"^[A-Za-z0-9-]{1,64}$")
    required: bool = False
    """Reject a mutation that carries no fence header (400) instead of applying it unfenced."""
    retention_seconds: _Seconds | None = None
    """Keys older than this on the receiver clock are pruned; None keeps them forever."""
    mismatch_status: Literal[400, 409, 422] = 422
    """Status of a same-key/different-request answer (idempotency_key: 422, fingerprint_ledger: 409)."""
    mismatch_problem: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,62}$")
    """Problem slug of that answer; default idempotency_key_mismatch (idempotency_conflict for fingerprint_ledger)."""
    replay: Literal["stored_response", "conflict_with_receipt"] = "stored_response"
    """Same key + same request: replay the stored response, or answer 409 carrying the original receipt_id."""
    in_progress: Literal["serialize", "conflict"] = "serialize"
    """A same-key request while the first is still executing: wait for it and answer as a repeat
    (serialize), or 409 idempotency_key_in_use at once (conflict: the key is reserved when execution starts)."""
    save_errors: bool = False
    """Save a 5xx answer given once execution started under the key, and replay it to a same-key retry."""
    after_retention: Literal["reapply", "current_state"] = "reapply"
    """A same-key repeat older than retention_seconds: a new request (reapply, a second effect) or an
    answer with the resource's current state of the range and no effect (current_state)."""
    location: Literal["header", "query"] = "header"
    """Where the key travels: the ``header``, or a query parameter named in ``query_parameters`` (a
    field of the request, as Google AIP-155's ``request_id`` is)."""
    query_parameters: list[Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]] | None = Field(
        default=None, min_length=1, max_length=4)
    """With ``location: query``: the parameter's names (e.g. ``[requestId, request_id]``, the JSON and
    the proto spelling); the key may appear under one of them, once."""
    key_syntax: Literal["token", "printable", "sf_string", "uuid"] = "token"
    """What a key may be (mock_receiver/fence_keys.py): ``token`` (1-200 of ``A-Za-z0-9._:~-``),
    ``printable`` (Stripe: 1-255 characters), ``sf_string`` (IETF draft: an RFC 8941 String),
    ``uuid`` (AIP-155: a UUID, not the zero UUID)."""

    @model_validator(mode="after")
    def _key_location(self) -> SyncFence:
        # With location: query, ``header`` names only the header logged for forensics (never a key).
        if (self.location == "query") != (self.query_parameters is not None):
            raise ValueError("query_parameters is required exactly for location: query")
        return self


class RecordResults(StrEnum):
    ALL = "all"
    REJECTED_ONLY = "rejected_only"
    NONE = "none"


class SyncSpec(_Closed):
    enabled: bool = True
    fence: SyncFence = SyncFence(type=FenceType.NONE)
    success_status: Literal[200, 201] = 200
    record_results: RecordResults = RecordResults.REJECTED_ONLY


class AsyncFence(_Closed):
    type: Literal[FenceType.NONE, FenceType.FILENAME_KEY, FenceType.BARE_409]
    conflict_status: Literal[409, 422] = 409
    """Status for same key + different payload (never carries a receipt)."""
    retention_seconds: _Seconds | None = None


class PhaseNames(_Closed):
    pending: _PHASE = "pending"
    running: _PHASE = "running"
    complete: _PHASE = "complete"
    incomplete: _PHASE = "incomplete"
    error: _PHASE = "error"
    cancelled: _PHASE = "cancelled"

    @model_validator(mode="after")
    def _distinct(self) -> PhaseNames:
        names = list(self.model_dump().values())
        if len(set(names)) != len(names):
            raise ValueError("phase names must be distinct")
        return self


class AsyncSpec(_Closed):
    enabled: bool = True
    resource: str = Field(pattern=_NAME)
    fence: AsyncFence = AsyncFence(type=FenceType.FILENAME_KEY)
    complete_after_polls: int | None = Field(default=2, ge=1, le=10_000)
    complete_after_seconds: float | None = Field(default=None, ge=0, le=_MAX_SECONDS)
    """Receiver-clock seconds after submission; either condition finishes the job."""
    receipt_ttl_seconds: _Seconds | None = None
    """Receiver-clock seconds after a job turns terminal before its receipt expires."""
    expired_status: Literal[404, 410] = 410
    phases: PhaseNames = PhaseNames()
    record_results: RecordResults = RecordResults.REJECTED_ONLY

    @model_validator(mode="after")
    def _finishes(self) -> AsyncSpec:
        if self.complete_after_polls is None and self.complete_after_seconds is None:
            raise ValueError("set complete_after_polls or complete_after_seconds (or both)")
        return self


class Limits(_Closed):
    max_body_bytes: int = Field(default=16_000_000, ge=1024, le=512_000_000)
    max_decoded_bytes: int = Field(default=64_000_000, ge=1024, le=2_000_000_000)
    max_rows: int = Field(default=100_000, ge=1, le=10_000_000)
    max_scalar_parts: int = Field(default=16, ge=0, le=256)


class Endpoint(StrEnum):
    SYNC_SUBMIT = "sync_submit"
    ASYNC_SUBMIT = "async_submit"
    JOB_POLL = "job_poll"
    SUMMARY = "summary"


class RuleMatch(_Closed):
    endpoints: list[Endpoint] = Field(min_length=1)
    resource: str | None = Field(default=None, pattern=_NAME)
    methods: list[Literal["GET", "POST", "PUT"]] | None = None


class Trigger(_Closed):
    """Exactly one of always / nth / every / probability selects matching requests."""

    always: bool | None = None
    nth: list[Annotated[int, Field(ge=1, le=_MAX_COUNT)]] | None = Field(default=None, max_length=1000)
    every: int | None = Field(default=None, ge=1, le=_MAX_COUNT)
    probability: float | None = Field(default=None, ge=0, le=1)
    seed: _Seed = 0
    max_fires: int | None = Field(default=None, ge=1, le=_MAX_COUNT)

    @model_validator(mode="after")
    def _exactly_one(self) -> Trigger:
        chosen = [self.always, self.nth, self.every, self.probability]
        if sum(value is not None and value is not False for value in chosen) != 1:
            raise ValueError("a trigger needs exactly one of always, nth, every, probability")
        return self


class RetryAfter(_Closed):
    seconds: int = Field(ge=0, le=86_400)
    format: Literal["delta_seconds", "http_date"] = "delta_seconds"


class StatusAction(_Closed):
    kind: Literal["status"]
    status: Literal[409, 413, 429, 500, 502, 503, 504]
    retry_after: RetryAfter | None = None
    after_effect: bool = False
    """Commit the effect first, then answer with this status instead of the receipt."""


class DelayAction(_Closed):
    kind: Literal["delay"]
    seconds: float = Field(gt=0, le=600)
    after_effect: bool = True
    """Sleep after the effect is committed (the client may time out on an applied effect)."""


class RejectRowsAction(_Closed):
    kind: Literal["reject_rows"]
    every_nth_row: int | None = Field(default=None, ge=1, le=_MAX_COUNT)
    fraction: float | None = Field(default=None, gt=0, le=1)
    seed: _Seed = 0

    @model_validator(mode="after")
    def _one_selector(self) -> RejectRowsAction:
        if (self.every_nth_row is None) == (self.fraction is None):
            raise ValueError("reject_rows needs exactly one of every_nth_row, fraction")
        return self


class MiscountAction(_Closed):
    kind: Literal["miscount"]
    accepted_delta: int = Field(default=0, ge=-_MAX_COUNT, le=_MAX_COUNT)
    rejected_delta: int = Field(default=0, ge=-_MAX_COUNT, le=_MAX_COUNT)


class JobFailureAction(_Closed):
    kind: Literal["job_failure"]


Action = Annotated[
    StatusAction | DelayAction | RejectRowsAction | MiscountAction | JobFailureAction,
    Field(discriminator="kind"),
]


class FaultRule(_Closed):
    name: str = Field(pattern=_NAME)
    match: RuleMatch
    when: Trigger
    action: Action


class CrossSite(_Closed):
    """Which web pages may send the data API requests a browser sends cross-site without a preflight."""

    form_origins: list[Annotated[str, Field(pattern=_ORIGIN)]] = Field(default_factory=list, max_length=64)
    """Origins (``scheme://host[:port]``, or ``*`` for any) whose form-type requests are accepted;
    by default none: a request with an ``Origin`` header and a form content type is refused."""


class Behaviour(_Closed):
    name: str = Field(pattern=_NAME)
    description: str = Field(default="", max_length=2000)
    resources: dict[str, ResourceSpec] = Field(min_length=1)
    limits: Limits = Limits()
    sync: SyncSpec = SyncSpec()
    async_jobs: AsyncSpec | None = None
    rules: list[FaultRule] = Field(default_factory=list)
    auth: AuthSpec = NO_AUTH
    """The credential every data-plane request must carry (docs/mock-receiver.md, "Authentication and TLS")."""
    cross_site: CrossSite = CrossSite()
    """Browser form posts from other origins (docs/mock-receiver.md, "Cross-site writes")."""
    storage: Literal["rows", "ledger_only"] = "rows"
    """ledger_only: effects keep their row count and digest, not the rows (mock_receiver/ledger_only.py)."""

    @model_validator(mode="after")
    def _consistent(self) -> Behaviour:
        if self.storage == "ledger_only" and self.async_jobs is not None:
            raise ValueError("storage: ledger_only is for synchronous receivers (async jobs stage their rows)")
        for name in self.resources:
            if not re.match(_NAME, name):
                raise ValueError(f"resource name {name!r} must match {_NAME}")
        if self.async_jobs is not None and self.async_jobs.resource not in self.resources:
            raise ValueError(f"async_jobs.resource {self.async_jobs.resource!r} is not a declared resource")
        names = [rule.name for rule in self.rules]
        if len(set(names)) != len(names):
            raise ValueError("rule names must be unique")
        for rule in self.rules:
            if rule.match.resource is not None and rule.match.resource not in self.resources:
                raise ValueError(f"rule {rule.name!r} names an undeclared resource")
        return self


def describe_validation_error(error: ValidationError) -> list[dict[str, str]]:
    """Field locations and messages only: never the offending input value."""
    return [
        {"loc": ".".join(str(part) for part in item["loc"]) or "(root)", "msg": item["msg"]}
        for item in error.errors(include_url=False, include_input=False)
    ]


def parse_behaviour(document: object) -> Behaviour:
    """Validate strictly, as JSON: ``"5"`` and ``true`` are not numbers, and enums are given by value."""
    try:
        text = json.dumps(document, allow_nan=False)
    except (TypeError, ValueError):
        raise BehaviourError("invalid behaviour: not a JSON-like document (finite numbers, string keys)") from None
    try:
        return Behaviour.model_validate_json(text, strict=True)
    except ValidationError as error:
        lines = "; ".join(f"{item['loc']}: {item['msg']}" for item in describe_validation_error(error))
        raise BehaviourError(f"invalid behaviour: {lines}") from None


def load_behaviour_bytes(data: bytes, source: str) -> Behaviour:
    """A behaviour from raw YAML/JSON bytes (a file, or an admin request body), bounded and validated."""
    try:
        document = load_document(data)
    except DocumentError as error:
        raise BehaviourError(f"{source}: {error}") from None
    if not isinstance(document, dict):
        raise BehaviourError(f"{source} must contain a mapping at the top level")
    try:
        return parse_behaviour(document)
    except BehaviourError as error:
        raise BehaviourError(f"{source}: {error}") from None


def load_behaviour_file(path: Path) -> Behaviour:
    try:
        data = read_regular_file(path)
    except DocumentError as error:
        raise BehaviourError(f"cannot read behaviour file: {error}") from None
    return load_behaviour_bytes(data, f"behaviour file {path}")
