"""Offline compilation: workload + operation profile + binding + environment -> ``CompiledPlan``.

Pure: no file, network or clock access (``loading`` reads the files). Every refusal is a
``CompileError`` with stable codes; all cross-document problems are reported together.
"""

from __future__ import annotations

from datetime import date

from pydantic import ValidationError

from sink.compiler.diagnostics import CompileError, Diagnostic, from_validation_error
from sink.compiler.mapping_check import check_mapping
from sink.compiler.semantics import binding_semantics_digest, profile_digests, semantic_value
from sink.contracts.binding import ConnectionBinding
from sink.contracts.environment import EnvironmentSnapshot
from sink.contracts.mapping import PayloadMapping
from sink.contracts.plan import (
    PLAN_SCHEMA_ID,
    CompiledPlan,
    DeliveryIdentity,
    EffectScope,
    PlanBinding,
    PlanDigests,
    PlanProfileRef,
    PlanWorkload,
)
from sink.contracts.profile import PROFILE_SCHEMA_ID, OperationProfile
from sink.contracts.profile_request import MultipartFileBody
from sink.contracts.workload import WorkloadManifest
from sink.identity import (
    Generation,
    canonical_origin,
    delivery_key,
    effect_conflict_domain,
    hash_fields,
    operation_namespace,
    receiver_mutation_key,
)

COMPILER_VERSION = "restproof.compiler.v1"
UNCERTIFIED_MARKER = "required_before_production"


def compile_plan(
    workload: WorkloadManifest,
    profile: OperationProfile,
    binding: ConnectionBinding,
    environment: EnvironmentSnapshot,
    *,
    mapping: PayloadMapping | None = None,
) -> CompiledPlan:
    """Resolve the three authorities (and the workload's mapping) into one immutable plan, or
    raise ``CompileError``. Without ``mapping`` the plan compiles but can not be prepared."""
    problems = _cross_check(workload, profile, binding, environment)
    if mapping is not None:
        problems.extend(check_mapping(workload, profile, mapping))
    if problems:
        raise CompileError(problems)
    semantics, policy, contract = profile_digests(profile)
    namespace = operation_namespace(
        platform_instance_id=environment.platform_instance_id,
        tenant_id=environment.tenant_id,
        environment_id=environment.environment_id,
        namespace_revision=environment.namespace_revision,
    )
    digests = PlanDigests(
        operation_namespace=namespace,
        receiver_binding_semantics_digest=binding_semantics_digest(binding),
        operation_semantics_digest=semantics,
        execution_policy_digest=policy,
        profile_contract_digest=contract,
        effect_conflict_domain=effect_conflict_domain(
            remote_principal_id=binding.remote_principal_id,
            remote_account_id=binding.remote_account_id,
            remote_resource_namespace=binding.remote_resource_namespace,
            receiver_resource_id=workload.sink.resource,
            effect_conflict_group=profile.effect_conflict_group,
        ),
    )
    sink = workload.sink
    fields = {
        "schema_id": PLAN_SCHEMA_ID,
        "compiler_version": COMPILER_VERSION,
        "environment": environment,
        "workload": PlanWorkload(
            logical_route_id=workload.logical_route_id,
            resource=sink.resource,
            mutation=sink.mutation,
            mapping_ref=sink.payload.mapping_ref,
            preferred_window_days=_effective_window(workload, profile),
            source=workload.source,
        ),
        "binding": PlanBinding(
            connection_ref=sink.connection_ref,
            authority_origin=canonical_origin(binding.authority),
            local=binding.local,
            auth_provider=binding.auth_provider,
            api_key_header=binding.api_key_header,
            credential_ref=binding.credential_ref,
            remote_principal_id=binding.remote_principal_id,
            remote_account_id=binding.remote_account_id,
            remote_resource_namespace=binding.remote_resource_namespace,
            remote_identity=binding.remote_identity,
            tls_policy_ref=binding.tls_policy_ref,
            network_policy_ref=binding.network_policy_ref,
            oauth_token_endpoint=binding.oauth_token_endpoint, oauth_client_id=binding.oauth_client_id,
            oauth_scope=binding.oauth_scope, client_certificate_ref=binding.client_certificate_ref,
            client_key_passphrase_ref=binding.client_key_passphrase_ref,
        ),
        "profile": PlanProfileRef(
            ref=profile.ref, id=profile.id, version=profile.version, profile_schema_id=PROFILE_SCHEMA_ID
        ),
        "operation": profile,
        "required_capabilities": required_capabilities(profile, binding),
        "digests": digests,
        "mapping": mapping,
    }
    return CompiledPlan(**fields, compiled_plan_digest=_plan_digest(fields))  # type: ignore[arg-type]


def _effective_window(workload: WorkloadManifest, profile: OperationProfile) -> int | None:
    requested = workload.sink.delivery_overrides.preferred_window_days
    if requested is not None:
        return requested
    window = profile.limits.preferred_window_days
    return None if window is None else window.default


def _plan_digest(fields: dict[str, object]) -> str:
    # compiler_version is producer metadata: an upgraded compiler emitting the same plan must not
    # move the digest. Display strings are dropped by semantic_value.
    content = {name: semantic_value(value) for name, value in fields.items() if name != "compiler_version"}
    return hash_fields("compiled_plan", content)


def plan_digest_matches(plan: CompiledPlan) -> bool:
    """Recompute the integrity digest of a plan read back from storage."""
    fields = {name: getattr(plan, name) for name in CompiledPlan.model_fields if name != "compiled_plan_digest"}
    return _plan_digest(fields) == plan.compiled_plan_digest


def required_capabilities(profile: OperationProfile, binding: ConnectionBinding) -> tuple[str, ...]:
    """Adapter capabilities a runtime must offer to execute the plan (refuse otherwise)."""
    body = profile.request.body
    capabilities = {
        f"family.{profile.protocol_family}",
        f"auth.{binding.auth_provider}",
        f"body.{body.type}",
        f"fence.{profile.mutation_fence.type}",
        "transport.loopback_http" if binding.authority.startswith("http://") else "transport.https",
    }
    if isinstance(body, MultipartFileBody):
        capabilities.add(f"codec.{body.payload_part.format}")
        capabilities.add(f"compression.{body.payload_part.compression}")
    else:
        capabilities.add(f"compression.{body.compression}")
    if profile.acknowledgement.poll is not None:
        capabilities.add("continuation.poll_receipt")
    return tuple(sorted(capabilities))


def _cross_check(
    workload: WorkloadManifest,
    profile: OperationProfile,
    binding: ConnectionBinding,
    environment: EnvironmentSnapshot,
) -> list[Diagnostic]:
    sink = workload.sink
    problems: list[Diagnostic] = []
    if (sink.profile_id, sink.profile_version) != (profile.id, profile.version):
        problems.append(Diagnostic("contract.reference_mismatch", "workload#sink.operation_profile_ref",
                                   "the resolved profile has a different id or version than the reference"))
    if sink.mutation.kind not in profile.supported_mutations:
        problems.append(Diagnostic("contract.unsupported_mutation", "workload#sink.mutation.kind",
                                   "the operation profile does not support this mutation kind"))
    problems.extend(_check_overrides(workload, profile))
    if binding.binding_digest is not None and binding.binding_digest != binding_semantics_digest(binding):
        problems.append(Diagnostic("contract.digest_mismatch", "binding#binding_digest",
                                   "the pinned binding_digest does not match the binding's semantics"))
    if environment.kind == "production":
        if binding.local:
            problems.append(Diagnostic("contract.insecure_authority", "binding#local",
                                       "a local (loopback) binding can not be used in a production environment"))
        if profile.mutation_fence.certification_ref == UNCERTIFIED_MARKER:
            problems.append(Diagnostic("contract.uncertified_profile", "profile#mutation_fence.certification_ref",
                                       "the profile's fence is not certified for production"))
    return problems


def _check_overrides(workload: WorkloadManifest, profile: OperationProfile) -> list[Diagnostic]:
    requested = workload.sink.delivery_overrides.preferred_window_days
    if requested is None:
        return []
    location = "workload#sink.delivery_overrides.preferred_window_days"
    bounds = profile.limits.preferred_window_days
    if bounds is None:
        return [Diagnostic("contract.override_not_allowed", location,
                           "the operation profile does not allow this override")]
    if not bounds.min <= requested <= bounds.max:
        return [Diagnostic("contract.override_out_of_range", location,
                           f"must lie in {bounds.min}..{bounds.max} (profile limits)")]
    return []


def delivery_identity(
    plan: CompiledPlan, scope_from: date, scope_to: date, correction_revision: int = 0
) -> DeliveryIdentity:
    """delivery_key and receiver_mutation_key of the scheduled interval [scope_from, scope_to)."""
    try:
        scope = EffectScope(from_date=scope_from, to_date=scope_to)
    except ValidationError as exc:
        raise CompileError(
            [Diagnostic("contract.invalid_scope", "scope", d.message) for d in from_validation_error(exc, "scope")]
        ) from None
    if isinstance(correction_revision, bool) or correction_revision < 0:
        raise CompileError.single("contract.invalid_value", "correction_revision", "must be a non-negative integer")
    mutation = plan.workload.mutation
    if mutation.kind == "incremental_append" and correction_revision != 0:
        raise CompileError.single(
            "contract.correction_not_allowed", "correction_revision",
            "incremental_append has no correction revision; use a certified correction contract",
        )
    generation = Generation(f"{scope_to.isoformat()}T00:00:00Z", correction_revision)
    key = delivery_key(
        logical_route_id=plan.workload.logical_route_id,
        target_effect_scope={
            "resource": plan.workload.resource,
            "type": "date_range",
            "bounds": scope.bounds,
            "from": scope_from.isoformat(),
            "to": scope_to.isoformat(),
        },
        source_boundary={
            "kind": mutation.generation_from,
            "scope_type": mutation.scope.type,
            "source_field": mutation.scope.source_field,
            "from": scope_from.isoformat(),
            "to": scope_to.isoformat(),
        },
        mutation_kind=mutation.kind,
        generation=generation,
    )
    namespace = plan.digests.operation_namespace
    return DeliveryIdentity(
        operation_namespace=namespace,
        delivery_key=key,
        receiver_mutation_key=receiver_mutation_key(operation_namespace=namespace, delivery_key=key),
        target_effect_scope=scope,
        scheduled_interval_end_utc=generation.scheduled_interval_end_utc,
        correction_revision=correction_revision,
    )


def child_delivery_identity(plan: CompiledPlan, parent: DeliveryIdentity, child_from: date,
                            child_to: date) -> DeliveryIdentity:
    """delivery_key and receiver_mutation_key of one child window of an admitted parent interval.

    The generation is the PARENT's (scheduled_interval_end_utc, correction_revision): children are
    one scheduled occurrence cut into windows, not new generations. ``source_boundary`` names the
    extraction occurrence (the parent interval) and the child's span within it; the target effect
    scope is the child window. Payload bytes are never an input (seed: "source_boundary in
    delivery_key is the logical extraction occurrence and interval/checkpoint span").
    """
    parent_scope = parent.target_effect_scope
    if not parent_scope.from_date <= child_from < child_to <= parent_scope.to_date:
        raise CompileError.single("contract.invalid_scope", "child scope", "a child lies inside its parent interval")
    scope = EffectScope(from_date=child_from, to_date=child_to)
    mutation = plan.workload.mutation
    generation = Generation(parent.scheduled_interval_end_utc, parent.correction_revision)
    key = delivery_key(
        logical_route_id=plan.workload.logical_route_id,
        target_effect_scope={
            "resource": plan.workload.resource,
            "type": "date_range",
            "bounds": scope.bounds,
            "from": child_from.isoformat(),
            "to": child_to.isoformat(),
        },
        source_boundary={
            "kind": mutation.generation_from,
            "scope_type": mutation.scope.type,
            "source_field": mutation.scope.source_field,
            "occurrence": {"from": parent_scope.from_date.isoformat(), "to": parent_scope.to_date.isoformat()},
            "span": {"from": child_from.isoformat(), "to": child_to.isoformat()},
        },
        mutation_kind=mutation.kind,
        generation=generation,
    )
    namespace = plan.digests.operation_namespace
    return DeliveryIdentity(
        operation_namespace=namespace,
        delivery_key=key,
        receiver_mutation_key=receiver_mutation_key(operation_namespace=namespace, delivery_key=key),
        target_effect_scope=scope,
        scheduled_interval_end_utc=parent.scheduled_interval_end_utc,
        correction_revision=parent.correction_revision,
    )
