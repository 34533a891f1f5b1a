"""The resume guard: only identity digests refuse; an execution policy change still resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.compiler import compile_files, default_paths
from sink.contracts.plan import CompiledPlan
from sink.runtime.intent_guard import IDENTITY_DIGESTS, differing_intent

REPO = Path(__file__).resolve().parents[2]
PLAN = compile_files(default_paths(REPO / "scenarios/workloads/measurements-sync.yaml"))


def _with(plan: CompiledPlan, **digests: str) -> CompiledPlan:
    return plan.model_copy(update={"digests": plan.digests.model_copy(update=digests)})


def test_the_same_plan_and_a_policy_change_resume() -> None:
    assert differing_intent(PLAN, PLAN) == []
    assert differing_intent(PLAN, _with(PLAN, execution_policy_digest="sha256:" + "1" * 64)) == []


@pytest.mark.parametrize("name", IDENTITY_DIGESTS)
def test_each_identity_digest_alone_refuses(name: str) -> None:
    assert differing_intent(PLAN, _with(PLAN, **{name: "sha256:" + "2" * 64})) == [name]


def test_the_binding_identity_is_among_them() -> None:
    # The threat model's principal/account swap: the binding semantics digest must be guarded.
    assert "receiver_binding_semantics_digest" in IDENTITY_DIGESTS
    assert "execution_policy_digest" not in IDENTITY_DIGESTS
