"""Workload manifest: the author's intent (seed: "Workload manifest").

An author chooses the logical resource, the mutation kind and source scope, the mapping, and the
few planning preferences the selected profile allows. No request path, header, status code, state
vocabulary, retry rule or low-level timeout can be written here; the closed models refuse them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictInt, field_validator

from sink.contracts._base import ContractModel, Description, check_identifier, contract_error
from sink.contracts.source import SourceSpec, check_source_kind

MUTATION_KINDS = ("partition_replace", "incremental_append")
_PROFILE_REF = re.compile(r"^([a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?)@([1-9][0-9]{0,5})\Z")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}\Z")

MutationKind = Literal["partition_replace", "incremental_append"]


def parse_profile_ref(value: str) -> tuple[str, int]:
    """``mock.dataset-jobs@1`` -> (``mock.dataset-jobs``, 1)."""
    match = _PROFILE_REF.fullmatch(value)
    if match is None:
        raise contract_error("contract.invalid_value", "operation_profile_ref must look like '<profile-id>@<version>'")
    return match.group(1), int(match.group(2))


class ScopeSpec(ContractModel):
    # The scope is a date window over ``source_field``; its canonical effect scope is the
    # half-open range [from, to) (see docs/authoring.md, "Scope and identity").
    type: Literal["inclusive_date_window"]
    source_field: str

    @field_validator("source_field")
    @classmethod
    def _field_name(cls, value: str) -> str:
        if not _FIELD_NAME.fullmatch(value):
            raise contract_error("contract.invalid_value", "source_field must be a plain column name")
        return value


class MutationSpec(ContractModel):
    kind: MutationKind
    generation_from: Literal["scheduled_interval"]
    scope: ScopeSpec

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in MUTATION_KINDS:
            raise contract_error(
                "contract.unsupported_mutation",
                "mutation.kind must be partition_replace or incremental_append (object CRUD is not in V1)",
            )
        return value


class PayloadSpec(ContractModel):
    mapping_ref: str

    @field_validator("mapping_ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        return check_identifier(value, "mapping_ref")


class DeliveryOverrides(ContractModel):
    """Closed set of planning preferences; each is range-checked against the profile's limits."""

    preferred_window_days: StrictInt | None = None


class RestSinkSpec(ContractModel):
    type: Literal["rest"]
    connection_ref: str
    operation_profile_ref: str
    resource: str
    mutation: MutationSpec
    payload: PayloadSpec
    delivery_overrides: DeliveryOverrides = Field(default_factory=DeliveryOverrides)

    @field_validator("type", mode="before")
    @classmethod
    def _rest_only(cls, value: Any) -> Any:
        if value != "rest":
            raise contract_error("contract.unsupported_sink", "sink.type must be 'rest'")
        return value

    @field_validator("connection_ref")
    @classmethod
    def _connection_ref(cls, value: str) -> str:
        return check_identifier(value, "connection_ref")

    @field_validator("operation_profile_ref")
    @classmethod
    def _profile_ref(cls, value: str) -> str:
        parse_profile_ref(value)
        return value

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str) -> str:
        return check_identifier(value, "resource")

    @property
    def profile_id(self) -> str:
        return parse_profile_ref(self.operation_profile_ref)[0]

    @property
    def profile_version(self) -> int:
        return parse_profile_ref(self.operation_profile_ref)[1]


class WorkloadManifest(ContractModel):
    # The stable logical route id is an identity input (delivery_key); renaming it starts a new route.
    logical_route_id: str
    description: Description
    sink: RestSinkSpec
    # Where the rows come from (docs/payloads.md). Optional for compile-only use; preparing a
    # delivery (freeze, plan, seal) refuses a workload without one.
    source: SourceSpec | None = None

    @field_validator("source", mode="before")
    @classmethod
    def _source_kind(cls, value: Any) -> Any:
        return check_source_kind(value)

    @field_validator("logical_route_id")
    @classmethod
    def _route_id(cls, value: str) -> str:
        return check_identifier(value, "logical_route_id")
