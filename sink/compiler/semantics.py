"""Projection of contract models onto canonical identity inputs.

``semantic_value`` walks a model and drops display fields (``description`` and any field marked
``json_schema_extra={"display": True}``), so renaming or re-describing never moves a digest.
Dates become ISO strings; floats are refused by the identity encoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from enum import Enum

from pydantic import BaseModel

from sink.contracts.binding import ConnectionBinding
from sink.contracts.profile import PROFILE_SCHEMA_ID, OperationProfile
from sink.identity import (
    CanonicalValue,
    execution_policy_digest,
    operation_semantics_digest,
    profile_contract_digest,
    receiver_binding_semantics_digest,
    semantic_headers,
)


def _is_display(model: type[BaseModel], name: str) -> bool:
    extra = model.model_fields[name].json_schema_extra
    return isinstance(extra, Mapping) and extra.get("display") is True


def semantic_value(value: object) -> CanonicalValue:
    if isinstance(value, BaseModel):
        model = type(value)
        return {
            name: semantic_value(getattr(value, name))
            for name in model.model_fields
            if not _is_display(model, name)
        }
    if isinstance(value, Enum):
        return semantic_value(value.value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): semantic_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [semantic_value(item) for item in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    raise TypeError(f"no canonical form for {type(value).__name__}")


def profile_operation_semantics_digest(profile: OperationProfile) -> str:
    request = profile.request
    return operation_semantics_digest(
        method_semantics={
            "method": request.method,
            "protocol_family": profile.protocol_family,
            "supported_mutations": list(profile.supported_mutations),
            "effect_conflict_group": profile.effect_conflict_group,
        },
        path_query_header_semantics={
            "path": request.path,
            "query": dict(request.query),
            "headers": dict(semantic_headers(request.headers)),
        },
        canonical_body_envelope_semantics={
            "media_type": request.media_type,
            "body": semantic_value(request.body),
            # Receiver atomicity bounds decide how a scope is split, so they are semantics.
            "limits": semantic_value(profile.limits),
        },
        acknowledgement_contract=semantic_value(profile.acknowledgement),
        mutation_fence_contract=_fence_contract(profile),
        verification_contract=_verification_contract(profile),
    )


def _fence_contract(profile: OperationProfile) -> CanonicalValue:
    # A fence sent raw and placed in a header or file name is the contract exactly as before the query
    # location and the encodings existed: those fields join the identity only when they say something.
    fence = profile.mutation_fence
    dropped = {"query_parameter"} if fence.query_parameter is None else set()
    if fence.encoding == "raw":
        dropped.add("encoding")
    contract = semantic_value(fence)
    if isinstance(contract, dict):
        return {name: value for name, value in contract.items() if name not in dropped}
    return contract


def _verification_contract(profile: OperationProfile) -> CanonicalValue:
    # Without a verification section the contract is the result policy alone, exactly as before
    # the section existed: adding an optional section must not change existing identities.
    if profile.verification is None:
        return semantic_value(profile.result_policy)
    return {"result_policy": semantic_value(profile.result_policy),
            "verification": semantic_value(profile.verification)}


def profile_execution_policy_digest(profile: OperationProfile) -> str:
    return execution_policy_digest(
        timeout_policy=semantic_value(profile.timeouts),
        retry_policy={"submit": semantic_value(profile.submit_retry), "poll": semantic_value(profile.poll_budget)},
        distributed_rate_policy=semantic_value(profile.rate_limits),
        retention_policy=semantic_value(profile.retention),
        observability_policy=semantic_value(profile.observability),
    )


def profile_digests(profile: OperationProfile) -> tuple[str, str, str]:
    """(operation_semantics_digest, execution_policy_digest, profile_contract_digest)."""
    semantics = profile_operation_semantics_digest(profile)
    policy = profile_execution_policy_digest(profile)
    contract = profile_contract_digest(
        operation_semantics_digest=semantics,
        execution_policy_digest=policy,
        profile_schema_id=PROFILE_SCHEMA_ID,
        profile_version=profile.version,
    )
    return semantics, policy, contract


def binding_semantics_digest(binding: ConnectionBinding) -> str:
    """Credential references and attestation evidence are deliberately absent: rotating the secret
    (or the locator it lives at) keeps the same receiver identity; a principal swap does not."""
    return receiver_binding_semantics_digest(
        authority_origin=binding.authority,
        remote_principal_id=binding.remote_principal_id,
        remote_account_id=binding.remote_account_id,
        remote_resource_namespace=binding.remote_resource_namespace,
        authentication_semantics=dict(binding.authentication_semantics),
        tls_policy_identity=binding.tls_policy_ref,
        network_policy_identity=binding.network_policy_ref,
    )
