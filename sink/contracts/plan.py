"""Compiled plan ``restproof.rest_delivery_plan.v1``: the immutable runtime authority.

The runtime never re-reads a workload, profile or binding: everything it needs — the frozen
operation profile, the non-secret binding snapshot, the environment and every digest — is here.
The schema id is pinned and the models are closed, so a reader refuses a plan it does not know.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, model_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.binding import AuthProvider, RemoteIdentity
from sink.contracts.environment import EnvironmentSnapshot
from sink.contracts.mapping import PayloadMapping
from sink.contracts.profile import OperationProfile
from sink.contracts.source import SourceSpec
from sink.contracts.workload import MutationSpec

PLAN_SCHEMA_ID = "restproof.rest_delivery_plan.v1"
PLAN_ARTIFACT_SCHEMA_ID = "restproof.rest_delivery_plan.v1"
"""The schema id of the artifact the admission publishes (``{"plan": ...}``). Here, not in
``sink.preparation.admission`` (which re-exports it), so a resume that reads the pinned plan back
does not import admission, sealing, the planner and the compiler."""

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class PlanProfileRef(ContractModel):
    ref: str
    id: str
    version: StrictInt
    profile_schema_id: str


class PlanBinding(ContractModel):
    """The binding snapshot without anything secret (``credential_ref`` is a locator)."""

    connection_ref: str
    authority_origin: str
    local: StrictBool
    auth_provider: AuthProvider
    api_key_header: str | None
    credential_ref: str | None
    remote_principal_id: str
    remote_account_id: str
    remote_resource_namespace: str
    remote_identity: RemoteIdentity | None
    tls_policy_ref: str
    network_policy_ref: str
    # Wire-security fields (defaults keep plans pinned before they existed readable).
    oauth_token_endpoint: str | None = None
    oauth_client_id: str | None = None
    oauth_scope: str | None = None
    client_certificate_ref: str | None = None
    client_key_passphrase_ref: str | None = None


class PlanWorkload(ContractModel):
    logical_route_id: str
    resource: str
    mutation: MutationSpec
    mapping_ref: str
    # Effective planning preference: the workload override, else the profile default.
    preferred_window_days: StrictInt | None
    # The workload's source as written (file paths stay relative to the workload file).
    source: SourceSpec | None = None


class PlanDigests(ContractModel):
    operation_namespace: Digest
    receiver_binding_semantics_digest: Digest
    operation_semantics_digest: Digest
    execution_policy_digest: Digest
    profile_contract_digest: Digest
    effect_conflict_domain: Digest


class CompiledPlan(ContractModel):
    schema_id: Literal["restproof.rest_delivery_plan.v1"]
    compiler_version: str
    environment: EnvironmentSnapshot
    workload: PlanWorkload
    binding: PlanBinding
    profile: PlanProfileRef
    operation: OperationProfile
    required_capabilities: tuple[str, ...]
    digests: PlanDigests
    # The resolved mapping_ref, pinned: a sealed payload is never rebuilt under a newer mapping.
    mapping: PayloadMapping | None = None
    compiled_plan_digest: Digest


class EffectScope(ContractModel):
    """Canonical target effect scope: the half-open date range [from_date, to_date)."""

    bounds: Literal["[)"] = "[)"
    from_date: date
    to_date: date

    @model_validator(mode="after")
    def _non_empty(self) -> EffectScope:
        if self.from_date >= self.to_date:
            raise contract_error("contract.invalid_value", "scope_from must be before scope_to", field="to_date")
        return self

    @property
    def days(self) -> int:
        return (self.to_date - self.from_date).days


class DeliveryIdentity(ContractModel):
    """Identity of one scheduled delivery of a compiled plan (before any payload exists)."""

    operation_namespace: Digest
    delivery_key: Digest
    receiver_mutation_key: Digest
    target_effect_scope: EffectScope
    scheduled_interval_end_utc: str
    correction_revision: StrictInt = Field(ge=0)
