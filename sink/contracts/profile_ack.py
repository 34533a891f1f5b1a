"""Operation profile, acknowledgement part: accepted statuses, typed receipt extractors,
duplicate handling and read-only receipt polling."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.profile_request import check_method
from sink.contracts.symbols import RECEIPT_NAME, TemplateLocation, receipt_names, template_symbols

MAX_POINTER_LENGTH = 256
MAX_POINTER_DEPTH = 8
MAX_RECEIPT_FIELDS = 8
MAX_VOCABULARY = 16
_POINTER_SEGMENT = re.compile(r"^(?:[^~/\x00-\x1f\x7f]|~[01])*\Z")
_HEADER_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}\Z")
_VOCABULARY_WORD = re.compile(r"^[A-Za-z0-9_.:-]{1,64}\Z")
_SECRET_BEARING_HEADERS = frozenset({"authorization", "proxy-authorization", "set-cookie", "cookie"})


def check_json_pointer(value: str) -> str:
    """RFC 6901 pointer, bounded in length and depth; the empty (whole-document) pointer is refused
    because an extractor returns one bounded scalar, never the raw body."""
    if not value.startswith("/") or len(value) > MAX_POINTER_LENGTH:
        raise contract_error(
            "contract.invalid_value", f"body_json_pointer must start with '/' and be at most {MAX_POINTER_LENGTH} chars"
        )
    segments = value[1:].split("/")
    if len(segments) > MAX_POINTER_DEPTH:
        raise contract_error("contract.invalid_value", f"body_json_pointer depth is at most {MAX_POINTER_DEPTH}")
    if not all(_POINTER_SEGMENT.fullmatch(segment) for segment in segments):
        raise contract_error(
            "contract.invalid_value", "body_json_pointer is not an RFC 6901 pointer ('~' must be ~0 or ~1)"
        )
    return value


class Extractor(ContractModel):
    """One bounded scalar taken from a response: a JSON pointer into the body, or a header."""

    body_json_pointer: str | None = None
    header: str | None = None
    required: StrictBool = True

    @field_validator("body_json_pointer")
    @classmethod
    def _pointer(cls, value: str | None) -> str | None:
        return None if value is None else check_json_pointer(value)

    @field_validator("header")
    @classmethod
    def _header(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not _HEADER_TOKEN.fullmatch(value):
            raise contract_error("contract.invalid_value", "header names must be RFC 9110 tokens")
        if value.lower() in _SECRET_BEARING_HEADERS:
            raise contract_error("contract.forbidden_header", "credential-bearing headers can not be extracted")
        return value

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Extractor:
        if (self.body_json_pointer is None) == (self.header is None):
            raise contract_error("contract.invalid_value", "give exactly one of body_json_pointer or header")
        return self


class DuplicateSpec(ContractModel):
    statuses: tuple[StrictInt, ...] = Field(min_length=1, max_length=8)
    # A bare duplicate status is not proof of the same delivery: require the receipt to match.
    requires_receipt_for_same_delivery_key: StrictBool

    @field_validator("statuses")
    @classmethod
    def _statuses(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return _check_statuses(value, low=200, high=499)


class PollSpec(ContractModel):
    method: Literal["GET"]
    path: str
    state: Extractor
    running: tuple[str, ...] = Field(min_length=1, max_length=MAX_VOCABULARY)
    succeeded: tuple[str, ...] = Field(min_length=1, max_length=MAX_VOCABULARY)
    partial: tuple[str, ...] = Field(default=(), max_length=MAX_VOCABULARY)
    failed: tuple[str, ...] = Field(default=(), max_length=MAX_VOCABULARY)
    cancelled: tuple[str, ...] = Field(default=(), max_length=MAX_VOCABULARY)
    expired: tuple[str, ...] = Field(default=(), max_length=MAX_VOCABULARY)
    # Statuses by which the receiver says "this receipt no longer exists" (e.g. 410). Kept apart from
    # other 4xx: only these may become acknowledgement EXPIRED; anything else is PROTOCOL_UNKNOWN.
    expired_statuses: tuple[StrictInt, ...] = Field(default=(), max_length=4)

    @field_validator("expired_statuses")
    @classmethod
    def _expired_statuses(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return _check_statuses(value, low=400, high=499)

    @field_validator("method", mode="before")
    @classmethod
    def _read_only(cls, value: Any) -> Any:
        return check_method(value, allowed=("GET",))

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        template_symbols(value, TemplateLocation.POLL_PATH)
        return value

    @field_validator("running", "succeeded", "partial", "failed", "cancelled", "expired")
    @classmethod
    def _words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not all(_VOCABULARY_WORD.fullmatch(word) for word in value):
            raise contract_error("contract.invalid_value", "state words are 1-64 of A-Z a-z 0-9 _ . : -")
        return value

    @model_validator(mode="after")
    def _disjoint(self) -> PollSpec:
        seen: set[str] = set()
        for name in ("running", "succeeded", "partial", "failed", "cancelled", "expired"):
            words: tuple[str, ...] = getattr(self, name)
            if seen.intersection(words) or len(set(words)) != len(words):
                raise contract_error(
                    "contract.vocabulary_overlap", "a state word may appear in exactly one vocabulary", field=name
                )
            seen.update(words)
        return self

    @property
    def receipt_fields(self) -> tuple[str, ...]:
        return receipt_names(template_symbols(self.path, TemplateLocation.POLL_PATH))


class AcknowledgementSpec(ContractModel):
    accepted_statuses: tuple[StrictInt, ...] = Field(min_length=1, max_length=8)
    receipt: dict[str, Extractor] = Field(default_factory=dict)
    duplicate: DuplicateSpec | None = None
    poll: PollSpec | None = None

    @field_validator("accepted_statuses")
    @classmethod
    def _accepted(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if 207 in value:
            raise contract_error("contract.invalid_value", "HTTP 207 multi-status needs a certified per-item extractor")
        return _check_statuses(value, low=200, high=299)

    @field_validator("receipt")
    @classmethod
    def _receipt(cls, value: dict[str, Extractor]) -> dict[str, Extractor]:
        if len(value) > MAX_RECEIPT_FIELDS:
            raise contract_error("contract.invalid_value", f"at most {MAX_RECEIPT_FIELDS} receipt fields")
        if not all(RECEIPT_NAME.fullmatch(name) for name in value):
            raise contract_error("contract.invalid_value", "receipt field names are [a-z][a-z0-9_]{0,31}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> AcknowledgementSpec:
        if self.duplicate is not None:
            if set(self.duplicate.statuses) & set(self.accepted_statuses):
                raise contract_error(
                    "contract.invalid_value", "a duplicate status can not also be an accepted status",
                    field="duplicate.statuses",
                )
            if self.duplicate.requires_receipt_for_same_delivery_key and not self.receipt:
                raise contract_error(
                    "contract.missing_field", "a duplicate rule that requires a receipt needs receipt extractors",
                    field="receipt",
                )
        if self.poll is not None:
            for name in self.poll.receipt_fields:
                if name not in self.receipt:
                    raise contract_error(
                        "contract.bad_symbol", "the poll path names a receipt field that is not declared",
                        field="poll.path",
                    )
        return self


def _check_statuses(value: tuple[int, ...], *, low: int, high: int) -> tuple[int, ...]:
    if len(set(value)) != len(value):
        raise contract_error("contract.duplicate_key", "a status is listed twice")
    if not all(low <= status <= high for status in value):
        raise contract_error("contract.invalid_value", f"statuses must lie in {low}..{high}")
    return value
