"""Which edits move which identity: the semantic/policy split, principal swap, credential
rotation, display strings, namespaces and generations (seed: "Canonical identity")."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from cp_helpers import (
    ASYNC_PROFILE,
    ASYNC_WORKLOAD,
    ENVIRONMENT,
    LOCAL_BINDING,
    SCENARIOS,
    SYNC_WORKLOAD,
    edited,
    scenario_tree,
)

from sink.compiler import (
    CompileError,
    binding_semantics_digest,
    compile_files,
    default_paths,
    delivery_identity,
    load_document,
)
from sink.contracts import CompiledPlan, ConnectionBinding

pytestmark = pytest.mark.timeout(60)

FROM, TO = date(2026, 8, 27), date(2026, 8, 30)


def _compile(tmp_path: Path, replacements: dict[str, str], workload: str = ASYNC_WORKLOAD) -> CompiledPlan:
    root = scenario_tree(tmp_path, replacements)
    return compile_files(default_paths(root / workload))


@pytest.fixture(scope="module")
def baseline() -> CompiledPlan:
    return compile_files(default_paths(SCENARIOS / ASYNC_WORKLOAD))


def test_policy_only_change_moves_policy_but_not_semantics_or_identity(
    tmp_path: Path, baseline: CompiledPlan
) -> None:
    changed = _compile(tmp_path, {ASYNC_PROFILE: edited(ASYNC_PROFILE, "  read_ms: 30000\n", "  read_ms: 45000\n")})
    assert changed.digests.execution_policy_digest != baseline.digests.execution_policy_digest
    assert changed.digests.profile_contract_digest != baseline.digests.profile_contract_digest
    assert changed.digests.operation_semantics_digest == baseline.digests.operation_semantics_digest
    assert changed.compiled_plan_digest != baseline.compiled_plan_digest
    before, after = delivery_identity(baseline, FROM, TO), delivery_identity(changed, FROM, TO)
    assert (after.delivery_key, after.receiver_mutation_key) == (before.delivery_key, before.receiver_mutation_key)


def test_semantic_change_moves_operation_semantics(tmp_path: Path, baseline: CompiledPlan) -> None:
    changed = _compile(tmp_path, {ASYNC_PROFILE: edited(
        ASYNC_PROFILE, "    succeeded: [complete]\n", "    succeeded: [complete, done]\n")})
    assert changed.digests.operation_semantics_digest != baseline.digests.operation_semantics_digest
    assert changed.digests.execution_policy_digest == baseline.digests.execution_policy_digest


def test_display_strings_are_not_hash_inputs(tmp_path: Path, baseline: CompiledPlan) -> None:
    changed = _compile(tmp_path, {
        ASYNC_PROFILE: edited(ASYNC_PROFILE, "description: Mock dataset-jobs", "description: Renamed jobs"),
        LOCAL_BINDING: edited(LOCAL_BINDING, "description: Local mock receiver", "description: Another label"),
        ASYNC_WORKLOAD: edited(ASYNC_WORKLOAD, "description: Measurements", "description: Other words"),
        ENVIRONMENT: edited(ENVIRONMENT, "description: Developer machine", "description: Laptop"),
    })
    assert changed.digests == baseline.digests
    assert changed.compiled_plan_digest == baseline.compiled_plan_digest
    assert changed.operation.description != baseline.operation.description


def test_principal_swap_changes_binding_identity(tmp_path: Path, baseline: CompiledPlan) -> None:
    changed = _compile(tmp_path, {LOCAL_BINDING: edited(
        LOCAL_BINDING, "remote_principal_id: mock-principal", "remote_principal_id: other-principal")})
    assert changed.digests.receiver_binding_semantics_digest != baseline.digests.receiver_binding_semantics_digest
    assert changed.digests.effect_conflict_domain != baseline.digests.effect_conflict_domain
    assert changed.digests.operation_semantics_digest == baseline.digests.operation_semantics_digest


def test_auth_semantics_change_moves_binding_identity(tmp_path: Path, baseline: CompiledPlan) -> None:
    changed = _compile(tmp_path, {LOCAL_BINDING: edited(
        LOCAL_BINDING, "auth_provider: bearer\n", "auth_provider: basic\n")})
    assert changed.digests.receiver_binding_semantics_digest != baseline.digests.receiver_binding_semantics_digest


def test_credential_rotation_keeps_binding_identity(tmp_path: Path, baseline: CompiledPlan) -> None:
    """Decision: credential_ref is a locator, not receiver semantics. Rotating the secret behind
    it, or moving it to a new locator, keeps the receiver identity and every mutation key; the
    plan's own integrity digest moves, because the runtime reads the locator from the plan."""
    changed = _compile(tmp_path, {LOCAL_BINDING: edited(
        LOCAL_BINDING, "credential_ref: env://MOCK_RECEIVER_TOKEN", "credential_ref: env://MOCK_RECEIVER_TOKEN_V2")})
    assert changed.digests == baseline.digests
    before, after = delivery_identity(baseline, FROM, TO), delivery_identity(changed, FROM, TO)
    assert after.receiver_mutation_key == before.receiver_mutation_key
    assert changed.compiled_plan_digest != baseline.compiled_plan_digest


def test_namespace_isolates_receiver_keys_but_not_delivery_keys(tmp_path: Path, baseline: CompiledPlan) -> None:
    other = _compile(tmp_path, {ENVIRONMENT: edited(ENVIRONMENT, "tenant_id: local-tenant", "tenant_id: tenant-b")})
    assert other.digests.operation_namespace != baseline.digests.operation_namespace
    before, after = delivery_identity(baseline, FROM, TO), delivery_identity(other, FROM, TO)
    assert after.delivery_key == before.delivery_key
    assert after.receiver_mutation_key != before.receiver_mutation_key
    # The physical receiver effect is the same: namespaces can not hide an overlap.
    assert other.digests.effect_conflict_domain == baseline.digests.effect_conflict_domain


def test_override_within_range_sets_effective_window(tmp_path: Path, baseline: CompiledPlan) -> None:
    assert baseline.workload.preferred_window_days == 3
    changed = _compile(tmp_path, {ASYNC_WORKLOAD: edited(
        ASYNC_WORKLOAD, "preferred_window_days: 3", "preferred_window_days: 4")})
    assert changed.workload.preferred_window_days == 4
    sync_default = compile_files(default_paths(SCENARIOS / SYNC_WORKLOAD))
    assert sync_default.workload.preferred_window_days == 1  # the profile default, no override given


def test_binding_digest_pin_accepts_the_matching_digest(tmp_path: Path, baseline: CompiledPlan) -> None:
    binding = load_document(SCENARIOS / LOCAL_BINDING, ConnectionBinding)
    pinned = (SCENARIOS / LOCAL_BINDING).read_text() + f"binding_digest: {binding_semantics_digest(binding)}\n"
    assert _compile(tmp_path, {LOCAL_BINDING: pinned}).digests == baseline.digests


def test_incremental_append_refuses_a_correction_revision(tmp_path: Path) -> None:
    plan = _compile(tmp_path, {SYNC_WORKLOAD: edited(
        SYNC_WORKLOAD, "kind: partition_replace", "kind: incremental_append")}, workload=SYNC_WORKLOAD)
    assert plan.workload.mutation.kind == "incremental_append"
    assert delivery_identity(plan, FROM, TO).correction_revision == 0
    with pytest.raises(CompileError) as caught:
        delivery_identity(plan, FROM, TO, correction_revision=1)
    assert caught.value.codes == ("contract.correction_not_allowed",)


@pytest.mark.parametrize(("start", "end"), [(TO, FROM), (FROM, FROM)])
def test_empty_or_reversed_scope_is_refused(baseline: CompiledPlan, start: date, end: date) -> None:
    with pytest.raises(CompileError) as caught:
        delivery_identity(baseline, start, end)
    assert caught.value.codes == ("contract.invalid_scope",)


def test_negative_correction_revision_is_refused(baseline: CompiledPlan) -> None:
    with pytest.raises(CompileError) as caught:
        delivery_identity(baseline, FROM, TO, correction_revision=-1)
    assert caught.value.codes == ("contract.invalid_value",)
