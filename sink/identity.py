"""Canonical identity algebra of the reference sink (seed: "Canonical identity and conflict policy").

Every digest is SHA-256 over the versioned, typed, length-delimited encoding of named fields in
``sink.canonical``, domain-separated by a purpose label, so two digests of different kinds can
never be equal by construction of their inputs.

Display strings (names, descriptions, labels) are never passed in; callers hand over semantic
fields only. Secrets are never inputs: a rotated credential leaves every identity unchanged, while
a change of remote principal changes the binding digest (and with it the mutation intent).
This module is pure: no I/O, no clock, no randomness, no dependence on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from sink.canonical import (
    DIGEST_PREFIX,
    IDENTITY_ENCODING_VERSION,
    CanonicalValue,
    canonical_encode,
    hash_fields,
    is_digest,
    require_digest,
)

__all__ = [
    "DIGEST_PREFIX",
    "IDENTITY_ENCODING_VERSION",
    "NON_SEMANTIC_HEADERS",
    "CanonicalValue",
    "Generation",
    "canonical_encode",
    "canonical_origin",
    "delivery_key",
    "effect_conflict_domain",
    "execution_policy_digest",
    "hash_fields",
    "is_digest",
    "mutation_intent_digest",
    "operation_namespace",
    "operation_semantics_digest",
    "parent_plan_digest",
    "profile_contract_digest",
    "receiver_binding_semantics_digest",
    "receiver_mutation_key",
    "rendered_request_semantics_digest",
    "require_digest",
    "semantic_headers",
]


# Header names that are ephemeral, transport-generated or secret: they never take part in the
# rendered-request identity (seed: "Semantic headers exclude ephemeral authorization, tracing,
# date, and transport-generated fields").
NON_SEMANTIC_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "date",
        "traceparent",
        "tracestate",
        "baggage",
        "x-request-id",
        "x-correlation-id",
        "x-amzn-trace-id",
        "x-b3-traceid",
        "x-b3-spanid",
        "x-b3-parentspanid",
        "x-b3-sampled",
        "b3",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "host",
        "user-agent",
        "accept-encoding",
        "expect",
        "te",
    }
)

_GENERATION_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_DEFAULT_PORTS = {"https": 443, "http": 80}


@dataclass(frozen=True, order=True, slots=True)
class Generation:
    """Ordered replacement generation: (scheduled_interval_end_utc, explicit_correction_revision).

    Field order is the comparison order; the fixed-width UTC text sorts like the instant it names.
    """

    scheduled_interval_end_utc: str
    correction_revision: int = 0

    def __post_init__(self) -> None:
        if not _GENERATION_TIME.fullmatch(self.scheduled_interval_end_utc):
            raise ValueError("scheduled_interval_end_utc must look like 2026-08-30T00:00:00Z")
        datetime.strptime(self.scheduled_interval_end_utc, "%Y-%m-%dT%H:%M:%SZ")  # real date check
        if isinstance(self.correction_revision, bool) or self.correction_revision < 0:
            raise ValueError("correction_revision must be a non-negative integer")

    def as_canonical(self) -> CanonicalValue:
        return {
            "scheduled_interval_end_utc": self.scheduled_interval_end_utc,
            "correction_revision": self.correction_revision,
        }


def canonical_origin(authority: str) -> str:
    """``scheme://host[:port]`` lower-cased, default port elided; anything else is refused."""
    parts = urlsplit(authority)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError("authority must be an http(s) origin")
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        raise ValueError("authority must be a bare origin (no userinfo, path, query or fragment)")
    port = parts.port
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def semantic_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Lower-cased semantic headers, ephemeral/secret/transport ones dropped.

    Two spellings of one header name are refused: which one wins would otherwise be arbitrary.
    """
    result: dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.strip().lower()
        if lowered in NON_SEMANTIC_HEADERS:
            continue
        if lowered in result:
            raise ValueError("duplicate header name after case folding")
        result[lowered] = value
    return result


def operation_namespace(
    *, platform_instance_id: str, tenant_id: str, environment_id: str, namespace_revision: int
) -> str:
    return hash_fields(
        "operation_namespace",
        {
            "platform_instance_id": platform_instance_id,
            "tenant_id": tenant_id,
            "environment_id": environment_id,
            "namespace_revision": namespace_revision,
        },
    )


def delivery_key(
    *,
    logical_route_id: str,
    target_effect_scope: CanonicalValue,
    source_boundary: CanonicalValue,
    mutation_kind: str,
    generation: Generation,
) -> str:
    """Logical mutation identity: never includes payload bytes, so a changed re-read of the same
    boundary keeps the key and can only differ in the intent digest (and is then blocked)."""
    return hash_fields(
        "delivery_key",
        {
            "logical_route_id": logical_route_id,
            "target_effect_scope": target_effect_scope,
            "source_boundary": source_boundary,
            "mutation_kind": mutation_kind,
            "explicit_generation": generation.as_canonical(),
        },
    )


def receiver_mutation_key(*, operation_namespace: str, delivery_key: str) -> str:
    """The remote fence value: bound to the namespace so tenants sharing a receiver never collide."""
    return hash_fields(
        "receiver_mutation_key",
        {
            "operation_namespace": require_digest("operation_namespace", operation_namespace),
            "delivery_key": require_digest("delivery_key", delivery_key),
        },
    )


def receiver_binding_semantics_digest(
    *,
    authority_origin: str,
    remote_principal_id: str,
    remote_account_id: str,
    remote_resource_namespace: str,
    authentication_semantics: CanonicalValue,
    tls_policy_identity: str,
    network_policy_identity: str,
) -> str:
    return hash_fields(
        "receiver_binding_semantics",
        {
            "authority_origin": canonical_origin(authority_origin),
            "remote_principal_id": remote_principal_id,
            "remote_account_id": remote_account_id,
            "remote_resource_namespace": remote_resource_namespace,
            "authentication_semantics": authentication_semantics,
            "tls_policy_identity": tls_policy_identity,
            "network_policy_identity": network_policy_identity,
        },
    )


def operation_semantics_digest(
    *,
    method_semantics: CanonicalValue,
    path_query_header_semantics: CanonicalValue,
    canonical_body_envelope_semantics: CanonicalValue,
    acknowledgement_contract: CanonicalValue,
    mutation_fence_contract: CanonicalValue,
    verification_contract: CanonicalValue,
) -> str:
    return hash_fields(
        "operation_semantics",
        {
            "method_semantics": method_semantics,
            "path_query_header_semantics": path_query_header_semantics,
            "canonical_body_envelope_semantics": canonical_body_envelope_semantics,
            "acknowledgement_contract": acknowledgement_contract,
            "mutation_fence_contract": mutation_fence_contract,
            "verification_contract": verification_contract,
        },
    )


def rendered_request_semantics_digest(
    *,
    method: str,
    normalized_rendered_path_and_query: str,
    semantic_headers: Mapping[str, str],
    ordered_scalar_multipart_parts: Sequence[tuple[str, str]],
    payload_part_name: str | None,
    deterministic_filename: str | None,
    content_disposition_and_type: CanonicalValue,
    multipart_boundary: str | None,
    sealed_payload_digest: str,
) -> str:
    if not normalized_rendered_path_and_query.startswith("/"):
        raise ValueError("the rendered path must be relative to the bound authority (start with '/')")
    headers = _semantic_header_view(semantic_headers)
    return hash_fields(
        "rendered_request_semantics",
        {
            "method": method.upper(),
            "normalized_rendered_path_and_query": normalized_rendered_path_and_query,
            "semantic_headers": headers,
            "ordered_scalar_multipart_parts": [[name, value] for name, value in ordered_scalar_multipart_parts],
            "payload_part_name": payload_part_name,
            "deterministic_filename": deterministic_filename,
            "content_disposition_and_type": content_disposition_and_type,
            "multipart_boundary": multipart_boundary,
            "sealed_payload_digest": require_digest("sealed_payload_digest", sealed_payload_digest),
        },
    )


def _semantic_header_view(headers: Mapping[str, str]) -> dict[str, CanonicalValue]:
    # The caller is expected to pass semantic_headers(...) output; filtering again keeps an
    # Authorization header from ever entering an identity by mistake.
    return dict(semantic_headers(headers))


def mutation_intent_digest(
    *,
    receiver_binding_semantics_digest: str,
    operation_semantics_digest: str,
    rendered_request_semantics_digest: str,
) -> str:
    return hash_fields(
        "mutation_intent",
        {
            "receiver_binding_semantics_digest": require_digest(
                "receiver_binding_semantics_digest", receiver_binding_semantics_digest
            ),
            "operation_semantics_digest": require_digest(
                "operation_semantics_digest", operation_semantics_digest
            ),
            "rendered_request_semantics_digest": require_digest(
                "rendered_request_semantics_digest", rendered_request_semantics_digest
            ),
        },
    )


def execution_policy_digest(
    *,
    timeout_policy: CanonicalValue,
    retry_policy: CanonicalValue,
    distributed_rate_policy: CanonicalValue,
    retention_policy: CanonicalValue,
    observability_policy: CanonicalValue,
) -> str:
    return hash_fields(
        "execution_policy",
        {
            "timeout_policy": timeout_policy,
            "retry_policy": retry_policy,
            "distributed_rate_policy": distributed_rate_policy,
            "retention_policy": retention_policy,
            "observability_policy": observability_policy,
        },
    )


def profile_contract_digest(
    *,
    operation_semantics_digest: str,
    execution_policy_digest: str,
    profile_schema_id: str,
    profile_version: int,
) -> str:
    return hash_fields(
        "profile_contract",
        {
            "operation_semantics_digest": require_digest(
                "operation_semantics_digest", operation_semantics_digest
            ),
            "execution_policy_digest": require_digest("execution_policy_digest", execution_policy_digest),
            "profile_schema_id": profile_schema_id,
            "profile_version": profile_version,
        },
    )


def effect_conflict_domain(
    *,
    remote_principal_id: str,
    remote_account_id: str,
    remote_resource_namespace: str,
    receiver_resource_id: str,
    effect_conflict_group: str,
) -> str:
    """Physical receiver effect identity: namespace and mutation kind are deliberately absent so
    they can never split one physical effect into two local domains."""
    return hash_fields(
        "effect_conflict_domain",
        {
            "remote_principal_id": remote_principal_id,
            "remote_account_id": remote_account_id,
            "remote_resource_namespace": remote_resource_namespace,
            "receiver_resource_id": receiver_resource_id,
            "effect_conflict_group": effect_conflict_group,
        },
    )


def parent_plan_digest(
    *,
    frozen_parent_digest: str,
    compiled_plan_digest: str,
    profile_contract_digest: str,
    planner_algorithm_version: str,
    ordered_child_descriptors: Sequence[CanonicalValue],
    complete_coverage_proof: CanonicalValue,
) -> str:
    return hash_fields(
        "parent_plan",
        {
            "frozen_parent_digest": require_digest("frozen_parent_digest", frozen_parent_digest),
            "compiled_plan_digest": require_digest("compiled_plan_digest", compiled_plan_digest),
            "profile_contract_digest": require_digest("profile_contract_digest", profile_contract_digest),
            "planner_algorithm_version": planner_algorithm_version,
            "ordered_child_descriptors": list(ordered_child_descriptors),
            "complete_coverage_proof": complete_coverage_proof,
        },
    )
