"""A principal or account swap cannot resume an existing operation (seed: "A principal/account
swap changes binding identity and cannot resume an existing mutation"; threat model: remote-
principal swap).

``delivery run`` finds an already admitted parent by its delivery key, which deliberately does not
depend on the binding (the same interval is the same delivery). Before it drives that parent,
the binding it was compiled with now must be the binding the parent was admitted under: the
same receiver binding semantics digest (authority, principal, account, resource namespace,
authentication semantics, TLS and network policy identities). Otherwise the parent's children
would be sent as somebody else, with the receiver mutation keys of the original principal.
Rotating a secret or the reference it lives at changes no digest and passes.
"""

from __future__ import annotations

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.errors import ExitClass
from sink.contracts.plan import CompiledPlan
from sink.preparation import PLAN_ARTIFACT_SCHEMA_ID
from sink.security.errors import SecurityRefusal


def assert_same_binding(plan: CompiledPlan, pinned: CompiledPlan) -> None:
    admitted = pinned.digests.receiver_binding_semantics_digest
    if plan.digests.receiver_binding_semantics_digest != admitted:
        raise SecurityRefusal(
            "security.binding_identity_changed",
            f"this interval was admitted under binding {admitted}; a changed principal, account, namespace, "
            "authority, authentication or policy cannot resume it (resume it with its pinned plan: "
            "delivery resume --operation-id PARENT --apply)",
            ExitClass.INVALID_INPUT,
        )


def assert_resumable(plan: CompiledPlan, store: ImmutableArtifactPort, plan_ref: str) -> None:
    """``plan_ref``: the admitted parent's pinned plan artifact."""
    document = read_document(store, plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    assert_same_binding(plan, CompiledPlan.model_validate(document["plan"]))
