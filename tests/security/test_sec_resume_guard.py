"""The resume guard compares binding identities, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.security.errors import SecurityRefusal
from sink.security.resume_guard import assert_same_binding

REPO = Path(__file__).resolve().parents[2]


def _with(plan: CompiledPlan, **digests: str) -> CompiledPlan:
    return plan.model_copy(update={"digests": plan.digests.model_copy(update=digests)})


def test_only_a_changed_binding_identity_refuses() -> None:
    plan = compile_files(default_paths(REPO / "scenarios/workloads/measurements-sync.yaml"))
    assert_same_binding(plan, plan)
    # Another execution policy or profile version under the same binding: not this guard's concern.
    assert_same_binding(plan, _with(plan, execution_policy_digest="sha256:" + "1" * 64))
    with pytest.raises(SecurityRefusal) as refused:
        assert_same_binding(plan, _with(plan, receiver_binding_semantics_digest="sha256:" + "2" * 64))
    assert refused.value.code == "security.binding_identity_changed" and int(refused.value.exit_class) == 2
