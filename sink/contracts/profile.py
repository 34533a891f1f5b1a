"""Platform operation profile (seed: "Platform operation profile").

The profile owns protocol semantics (method, path, body envelope, acknowledgement, fence,
verification) and execution policy (timeouts, budgets, rate limits, retention). Both are pinned
into the compiled plan by digest; a workload can only choose among the bounded preferences here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, Description, check_identifier, contract_error
from sink.contracts.profile_ack import AcknowledgementSpec, Extractor
from sink.contracts.profile_policy import (
    ObservabilityPolicy,
    PollBudget,
    RateLimits,
    RetentionPolicy,
    SubmitRetryBudget,
    TimeoutVector,
)
from sink.contracts.profile_request import MultipartFileBody, RequestSpec, check_header_name
from sink.contracts.profile_verification import VerificationSpec
from sink.contracts.workload import MutationKind

PROFILE_SCHEMA_ID = "restproof.operation_profile.v1"
PROTOCOL_FAMILIES = ("sync_batch", "async_bulk_job")
ProtocolFamily = Literal["sync_batch", "async_bulk_job"]
FenceType = Literal["none", "receiver_duplicate_key", "idempotency_key_header", "fingerprint_ledger"]
# How the fence's key travels: as it is (raw), as an RFC 8941 Structured Field String (quoted, for a
# header such as the IETF Idempotency-Key draft's), or as a UUID derived from it (Google AIP-155's
# request_id). Every encoding is a pure function of the key, so a replay sends the same value.
FenceEncoding = Literal["raw", "sf-string", "uuid"]
FENCE_ENCODINGS: dict[str, frozenset[str]] = {
    "header": frozenset({"raw", "sf-string", "uuid"}),
    "query": frozenset({"raw", "uuid"}),
    "payload_filename": frozenset({"raw"}),
}


class MutationFence(ContractModel):
    """How the receiver is told "this is the same mutation": the only basis for a same-key resend."""

    type: FenceType
    location: Literal["payload_filename", "header", "query"] | None = None
    header_name: str | None = None
    query_parameter: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    encoding: FenceEncoding = "raw"
    value_from: Literal["receiver_mutation_key", "delivery_key"] | None = None
    key_payload_binding: Literal["required", "not_bound"] | None = None
    certification_ref: str | None = Field(default=None, max_length=200)
    retention_ttl_seconds: StrictInt | None = Field(default=None, ge=1, le=366 * 24 * 3600)

    @field_validator("header_name")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        return None if value is None else check_header_name(value)

    @model_validator(mode="after")
    def _complete(self) -> MutationFence:
        details = (self.location, self.value_from, self.key_payload_binding, self.certification_ref)
        if self.type == "none":
            placed = (*details, self.header_name, self.query_parameter, self.retention_ttl_seconds)
            if any(item is not None for item in placed) or self.encoding != "raw":
                raise contract_error("contract.invalid_value", "a 'none' fence takes no further fields")
            return self
        if any(item is None for item in details):
            raise contract_error(
                "contract.missing_field",
                "a fence needs location, value_from, key_payload_binding and certification_ref",
            )
        if (self.location == "header") != (self.header_name is not None):
            raise contract_error("contract.invalid_value", "header_name is required exactly for location 'header'",
                                 field="header_name")
        if (self.location == "query") != (self.query_parameter is not None):
            raise contract_error("contract.invalid_value", "query_parameter is required exactly for location "
                                 "'query'", field="query_parameter")
        if self.encoding not in FENCE_ENCODINGS[str(self.location)]:
            raise contract_error("contract.unsupported_fence_encoding",
                                 f"a {self.location} fence cannot be sent as {self.encoding}; allowed: "
                                 + ", ".join(sorted(FENCE_ENCODINGS[str(self.location)])), field="encoding")
        if self.type == "idempotency_key_header":
            if self.location not in ("header", "query"):
                raise contract_error("contract.fence_mismatch", "an idempotency key fence lives in a header or a "
                                     "query parameter", field="location")
            if self.retention_ttl_seconds is None:
                raise contract_error("contract.missing_field", "an idempotency key fence needs its certified "
                                     "retention_ttl_seconds", field="retention_ttl_seconds")
        return self

    @property
    def proven(self) -> bool:
        return self.type != "none"


class WindowLimit(ContractModel):
    default: StrictInt = Field(ge=1, le=366)
    min: StrictInt = Field(ge=1, le=366)
    max: StrictInt = Field(ge=1, le=366)

    @model_validator(mode="after")
    def _ordered(self) -> WindowLimit:
        if not self.min <= self.default <= self.max:
            raise contract_error("contract.inconsistent_policy", "need min <= default <= max")
        return self


class Limits(ContractModel):
    max_rows: StrictInt = Field(ge=1)
    max_decoded_bytes: StrictInt = Field(ge=1)
    planning_decoded_bytes: StrictInt = Field(ge=1)
    max_wire_bytes: StrictInt = Field(ge=1)
    planning_wire_bytes: StrictInt = Field(ge=1)
    preferred_window_days: WindowLimit | None = None
    max_in_flight_children: StrictInt = Field(default=1, ge=1, le=64)

    @model_validator(mode="after")
    def _planning_below_hard(self) -> Limits:
        if self.planning_decoded_bytes > self.max_decoded_bytes:
            raise contract_error("contract.inconsistent_policy", "planning_decoded_bytes exceeds max_decoded_bytes",
                                 field="planning_decoded_bytes")
        if self.planning_wire_bytes > self.max_wire_bytes:
            raise contract_error("contract.inconsistent_policy", "planning_wire_bytes exceeds max_wire_bytes",
                                 field="planning_wire_bytes")
        return self


class ResultPolicy(ContractModel):
    all_rows_accounted: StrictBool
    partial_result: Literal["fail_and_retain"]
    counters: dict[str, Extractor] = Field(default_factory=dict, max_length=8)


class OperationProfile(ContractModel):
    id: str
    version: StrictInt = Field(ge=1, le=999_999)
    description: Description
    protocol_family: ProtocolFamily
    supported_mutations: tuple[MutationKind, ...] = Field(min_length=1, max_length=2)
    request: RequestSpec
    acknowledgement: AcknowledgementSpec
    mutation_fence: MutationFence
    effect_conflict_group: str
    limits: Limits
    result_policy: ResultPolicy
    verification: VerificationSpec | None = None
    timeouts: TimeoutVector
    submit_retry: SubmitRetryBudget
    poll_budget: PollBudget | None = None
    rate_limits: RateLimits
    retention: RetentionPolicy
    observability: ObservabilityPolicy = Field(default_factory=ObservabilityPolicy)

    @field_validator("protocol_family", mode="before")
    @classmethod
    def _family(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in PROTOCOL_FAMILIES:
            raise contract_error(
                "contract.unsupported_family",
                "protocol_family must be sync_batch or async_bulk_job; other families are not in V1",
            )
        return value

    @field_validator("id", "effect_conflict_group")
    @classmethod
    def _identifier(cls, value: str) -> str:
        return check_identifier(value, "profile id and effect_conflict_group")

    @model_validator(mode="after")
    def _coherent(self) -> OperationProfile:
        self._check_method_fence()
        self._check_fence_location()
        self._check_family()
        return self

    def _check_method_fence(self) -> None:
        if self.request.method == "PATCH" and not self.mutation_fence.proven:
            raise contract_error("contract.unsupported_method", "PATCH needs a proven mutation fence",
                                 field="request.method")

    def _check_fence_location(self) -> None:
        fence = self.mutation_fence
        if not fence.proven:
            return
        placeholder = "{" + str(fence.value_from) + "}"
        if fence.location == "payload_filename":
            body = self.request.body
            if not isinstance(body, MultipartFileBody) or placeholder not in body.payload_part.filename:
                raise contract_error(
                    "contract.fence_mismatch",
                    "a payload_filename fence needs a multipart filename carrying its value_from placeholder",
                    field="mutation_fence.location",
                )
        elif fence.header_name is not None and self.request.header_value(fence.header_name) != placeholder:
            raise contract_error(
                "contract.fence_mismatch",
                "the fence header must be declared in request.headers with exactly its value_from placeholder",
                field="mutation_fence.header_name",
            )
        elif fence.query_parameter is not None and self.request.query.get(fence.query_parameter) != placeholder:
            raise contract_error(
                "contract.fence_mismatch",
                "the fence query parameter must be declared in request.query with exactly its value_from placeholder",
                field="mutation_fence.query_parameter",
            )

    def _check_family(self) -> None:
        poll = self.acknowledgement.poll
        if self.protocol_family == "async_bulk_job":
            required: dict[str, object] = {
                "acknowledgement.poll": poll,
                "poll_budget": self.poll_budget,
                "timeouts.poll_interval_ms": self.timeouts.poll_interval_ms,
                "timeouts.poll_retry_ms": self.timeouts.poll_retry_ms,
                "timeouts.receiver_expiry_ms": self.timeouts.receiver_expiry_ms,
            }
            for location, value in required.items():
                if value is None:
                    raise contract_error("contract.missing_field", "required for async_bulk_job", field=location)
            if not self.acknowledgement.receipt:
                raise contract_error("contract.missing_field", "an async job needs a receipt extractor",
                                     field="acknowledgement.receipt")
            if self.limits.max_in_flight_children != 1:
                raise contract_error("contract.invalid_value", "async_bulk_job supervises one child at a time in V1",
                                     field="limits.max_in_flight_children")
        elif poll is not None or self.poll_budget is not None:
            raise contract_error("contract.invalid_value", "sync_batch profiles do not poll",
                                 field="acknowledgement.poll")

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"
