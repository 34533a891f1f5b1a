"""The identity graph of sink/identity.py as test data: base inputs, one changed value per input,
and which digests each input feeds directly (seed: "Canonical identity and conflict policy").

``compute`` wires every digest of the design from one flat dict of leaf inputs, so a test can
change one leaf and see exactly which digests move. The dependency table below is the
specification the tests hold the code to; it is written out, not derived from the code.
"""

from __future__ import annotations

from typing import Any

from sink import identity as ident

SHA_A = "sha256:" + "a1" * 32
SHA_B = "sha256:" + "b2" * 32
SHA_C = "sha256:" + "c3" * 32
SHA_D = "sha256:" + "d4" * 32

BASE: dict[str, Any] = {
    # operation_namespace
    "platform_instance_id": "platform-1",
    "tenant_id": "tenant-a",
    "environment_id": "dev",
    "namespace_revision": 1,
    # delivery_key
    "logical_route_id": "route-measurements",
    "target_effect_scope": {"from": "2026-08-27", "to": "2026-08-30"},
    "source_boundary": {"watermark": "2026-08-30T00:00:00Z"},
    "mutation_kind": "partition_replace",
    "generation": ident.Generation("2026-08-30T00:00:00Z", 0),
    # receiver binding (the remote_* three also feed the effect conflict domain)
    "authority_origin": "https://receiver.example.test",
    "remote_principal_id": "principal-a",
    "remote_account_id": "account-1",
    "remote_resource_namespace": "ingest",
    "authentication_semantics": {"provider": "bearer", "header": "authorization"},
    "tls_policy_identity": "corporate-public-tls@1",
    "network_policy_identity": "reference-egress@1",
    # operation semantics
    "method_semantics": "POST",
    "path_query_header_semantics": {"path": "/v1/jobs", "query": []},
    "canonical_body_envelope_semantics": {"type": "multipart_file", "format": "csv"},
    "acknowledgement_contract": {"accepted_statuses": [202]},
    "mutation_fence_contract": {"type": "receiver_duplicate_key"},
    "verification_contract": {"all_rows_accounted": True},
    # rendered request
    "method": "POST",
    "normalized_rendered_path_and_query": "/v1/jobs?mode=replace",
    "semantic_headers": {"content-type": "multipart/form-data; boundary=b1"},
    "ordered_scalar_multipart_parts": [("range_start", "2026-08-27"), ("range_end", "2026-08-30")],
    "payload_part_name": "file",
    "deterministic_filename": "k.csv.gz",
    "content_disposition_and_type": {"content_type": "application/gzip"},
    "multipart_boundary": "b1",
    "sealed_payload_digest": SHA_A,
    # execution policy
    "timeout_policy": {"connect_ms": 2000},
    "retry_policy": {"max_attempts": 3},
    "distributed_rate_policy": {"submits_per_minute": 60},
    "retention_policy": {"receipt_ttl_s": 86400},
    "observability_policy": {"metrics": "bounded"},
    # profile contract
    "profile_schema_id": "rest-bulk-profile",
    "profile_version": 3,
    # effect conflict domain
    "receiver_resource_id": "measurements",
    "effect_conflict_group": "mock.measurements",
    # parent plan
    "frozen_parent_digest": SHA_B,
    "compiled_plan_digest": SHA_C,
    "planner_algorithm_version": "planner.v1",
    "ordered_child_descriptors": [{"ordinal": 0, "key": "c0"}, {"ordinal": 1, "key": "c1"}],
    "complete_coverage_proof": {"covered": ["2026-08-27", "2026-08-30"]},
}

CHANGED: dict[str, Any] = {
    "platform_instance_id": "platform-2",
    "tenant_id": "tenant-b",
    "environment_id": "prod",
    "namespace_revision": 2,
    "logical_route_id": "route-other",
    "target_effect_scope": {"from": "2026-08-27", "to": "2026-08-31"},
    "source_boundary": {"watermark": "2026-08-31T00:00:00Z"},
    "mutation_kind": "incremental_append",
    "generation": ident.Generation("2026-08-30T00:00:00Z", 1),
    "authority_origin": "https://other-receiver.example.test",
    "remote_principal_id": "principal-b",
    "remote_account_id": "account-2",
    "remote_resource_namespace": "archive",
    "authentication_semantics": {"provider": "mtls"},
    "tls_policy_identity": "corporate-public-tls@2",
    "network_policy_identity": "reference-egress@2",
    "method_semantics": "PUT",
    "path_query_header_semantics": {"path": "/v2/jobs", "query": []},
    "canonical_body_envelope_semantics": {"type": "multipart_file", "format": "jsonl"},
    "acknowledgement_contract": {"accepted_statuses": [200, 202]},
    "mutation_fence_contract": {"type": "idempotency_key"},
    "verification_contract": {"all_rows_accounted": False},
    "method": "PUT",
    "normalized_rendered_path_and_query": "/v1/jobs?mode=append",
    "semantic_headers": {"content-type": "multipart/form-data; boundary=b1", "x-mode": "strict"},
    # Order is semantic: the same parts swapped are another request.
    "ordered_scalar_multipart_parts": [("range_end", "2026-08-30"), ("range_start", "2026-08-27")],
    "payload_part_name": "upload",
    "deterministic_filename": "k2.csv.gz",
    "content_disposition_and_type": {"content_type": "text/csv"},
    "multipart_boundary": "b2",
    "sealed_payload_digest": SHA_D,
    "timeout_policy": {"connect_ms": 3000},
    "retry_policy": {"max_attempts": 4},
    "distributed_rate_policy": {"submits_per_minute": 30},
    "retention_policy": {"receipt_ttl_s": 3600},
    "observability_policy": {"metrics": "verbose"},
    "profile_schema_id": "rest-bulk-profile-2",
    "profile_version": 4,
    "receiver_resource_id": "measurements-eu",
    "effect_conflict_group": "mock.other",
    "frozen_parent_digest": SHA_D,
    "compiled_plan_digest": SHA_A,
    "planner_algorithm_version": "planner.v2",
    "ordered_child_descriptors": [{"ordinal": 1, "key": "c1"}, {"ordinal": 0, "key": "c0"}],
    "complete_coverage_proof": {"covered": ["2026-08-27", "2026-08-29"]},
}

# Leaf input -> the digests it feeds DIRECTLY (seed: each listed input is part of that identity).
DIRECT: dict[str, set[str]] = {
    **{k: {"operation_namespace"} for k in
       ("platform_instance_id", "tenant_id", "environment_id", "namespace_revision")},
    **{k: {"delivery_key"} for k in
       ("logical_route_id", "target_effect_scope", "source_boundary", "mutation_kind", "generation")},
    **{k: {"receiver_binding"} for k in
       ("authority_origin", "authentication_semantics", "tls_policy_identity", "network_policy_identity")},
    **{k: {"receiver_binding", "effect_conflict_domain"} for k in
       ("remote_principal_id", "remote_account_id", "remote_resource_namespace")},
    **{k: {"operation_semantics"} for k in
       ("method_semantics", "path_query_header_semantics", "canonical_body_envelope_semantics",
        "acknowledgement_contract", "mutation_fence_contract", "verification_contract")},
    **{k: {"rendered_request"} for k in
       ("method", "normalized_rendered_path_and_query", "semantic_headers", "ordered_scalar_multipart_parts",
        "payload_part_name", "deterministic_filename", "content_disposition_and_type", "multipart_boundary",
        "sealed_payload_digest")},
    **{k: {"execution_policy"} for k in
       ("timeout_policy", "retry_policy", "distributed_rate_policy", "retention_policy", "observability_policy")},
    **{k: {"profile_contract"} for k in ("profile_schema_id", "profile_version")},
    **{k: {"effect_conflict_domain"} for k in ("receiver_resource_id", "effect_conflict_group")},
    **{k: {"parent_plan"} for k in
       ("frozen_parent_digest", "compiled_plan_digest", "planner_algorithm_version", "ordered_child_descriptors",
        "complete_coverage_proof")},
}

# Derived digest -> the digests that take it as an input.
FEEDS: dict[str, set[str]] = {
    "operation_namespace": {"receiver_mutation_key"},
    "delivery_key": {"receiver_mutation_key"},
    "receiver_binding": {"mutation_intent"},
    "operation_semantics": {"mutation_intent", "profile_contract"},
    "rendered_request": {"mutation_intent"},
    "execution_policy": {"profile_contract"},
    "profile_contract": {"parent_plan"},
}


def dependents(leaf: str) -> set[str]:
    """Every digest that must change when ``leaf`` alone changes (direct plus downstream)."""
    found: set[str] = set()
    todo = list(DIRECT[leaf])
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(FEEDS.get(name, ()))
    return found


def _pick(values: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: values[name] for name in names}


def compute(values: dict[str, Any]) -> dict[str, str]:
    """Every digest of the design from one set of leaf inputs."""
    out: dict[str, str] = {}
    out["operation_namespace"] = ident.operation_namespace(**_pick(
        values, "platform_instance_id", "tenant_id", "environment_id", "namespace_revision"))
    out["delivery_key"] = ident.delivery_key(**_pick(
        values, "logical_route_id", "target_effect_scope", "source_boundary", "mutation_kind", "generation"))
    out["receiver_mutation_key"] = ident.receiver_mutation_key(
        operation_namespace=out["operation_namespace"], delivery_key=out["delivery_key"])
    out["receiver_binding"] = ident.receiver_binding_semantics_digest(**_pick(
        values, "authority_origin", "remote_principal_id", "remote_account_id", "remote_resource_namespace",
        "authentication_semantics", "tls_policy_identity", "network_policy_identity"))
    out["operation_semantics"] = ident.operation_semantics_digest(**_pick(
        values, "method_semantics", "path_query_header_semantics", "canonical_body_envelope_semantics",
        "acknowledgement_contract", "mutation_fence_contract", "verification_contract"))
    out["rendered_request"] = ident.rendered_request_semantics_digest(**_pick(
        values, "method", "normalized_rendered_path_and_query", "semantic_headers",
        "ordered_scalar_multipart_parts", "payload_part_name", "deterministic_filename",
        "content_disposition_and_type", "multipart_boundary", "sealed_payload_digest"))
    out["mutation_intent"] = ident.mutation_intent_digest(
        receiver_binding_semantics_digest=out["receiver_binding"],
        operation_semantics_digest=out["operation_semantics"],
        rendered_request_semantics_digest=out["rendered_request"])
    out["execution_policy"] = ident.execution_policy_digest(**_pick(
        values, "timeout_policy", "retry_policy", "distributed_rate_policy", "retention_policy",
        "observability_policy"))
    out["profile_contract"] = ident.profile_contract_digest(
        operation_semantics_digest=out["operation_semantics"], execution_policy_digest=out["execution_policy"],
        **_pick(values, "profile_schema_id", "profile_version"))
    out["effect_conflict_domain"] = ident.effect_conflict_domain(**_pick(
        values, "remote_principal_id", "remote_account_id", "remote_resource_namespace", "receiver_resource_id",
        "effect_conflict_group"))
    out["parent_plan"] = ident.parent_plan_digest(
        profile_contract_digest=out["profile_contract"],
        **_pick(values, "frozen_parent_digest", "compiled_plan_digest", "planner_algorithm_version",
                "ordered_child_descriptors", "complete_coverage_proof"))
    return out
