"""The resume guard: only identity digests refuse; an execution policy change still resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sink.artifacts.documents import put_document
from sink.artifacts.local import LocalArtifactStore
from sink.compiler import compile_files, default_paths
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.plan import CompiledPlan
from sink.journal.records import AdmittedParent, ParentRecord
from sink.preparation import PLAN_ARTIFACT_SCHEMA_ID
from sink.runtime.intent_guard import IDENTITY_DIGESTS, differing_intent, require_admitted_intent

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


def _admitted_with(tmp_path: Path, pinned: CompiledPlan) -> tuple[AdmittedParent, LocalArtifactStore]:
    """A parent admitted under ``pinned``: its plan artifact published as the admission does."""
    store = LocalArtifactStore(tmp_path / "artifacts")
    document = {"schema_id": PLAN_ARTIFACT_SCHEMA_ID, "refs": [], "plan": pinned.model_dump(mode="json")}
    ref = put_document(store, document)
    parent = ParentRecord(parent_id="par_1", operation_namespace="ns:t:dev:1", parent_delivery_key="pk-1",
                          parent_plan_digest="sha256:" + "3" * 64, plan_ref=ref.digest,
                          profile_contract_digest=pinned.digests.profile_contract_digest, child_count=1,
                          frontier_order=None, frontier_scope_end=None)
    return AdmittedParent(parent=parent, children=(), created=False), store


def test_a_resume_under_other_semantics_is_refused_with_the_differing_digest(tmp_path: Path) -> None:
    admitted, store = _admitted_with(tmp_path, PLAN)
    require_admitted_intent(PLAN, admitted, store)  # the same semantics resume
    require_admitted_intent(_with(PLAN, execution_policy_digest="sha256:" + "1" * 64), admitted, store)
    swapped = _with(PLAN, receiver_binding_semantics_digest="sha256:" + "4" * 64)
    with pytest.raises(DeliveryError) as refused:
        require_admitted_intent(swapped, admitted, store)
    assert refused.value.code is ErrorCode.INTENT_CONFLICT
    assert "receiver_binding_semantics_digest" in str(refused.value) and "par_1" in str(refused.value)
