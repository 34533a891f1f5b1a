"""A re-run resumes an admitted parent only under the semantics it was admitted with (seed: "same
key/intent resume, intent conflict").

``delivery run`` finds the parent already admitted for its interval by delivery key, which never
includes receiver semantics; without this check a re-run whose binding, profile or namespace now
means something else would send the admitted children rendered under the NEW semantics. The pinned
plan (the artifact the admission published) is the authority: any differing identity digest is
``REST_DELIVERY_INTENT_CONFLICT`` (exit 2), raised before any request. That covers the threat
model's principal/account swap too: the receiver binding semantics digest holds authority,
principal, account, resource namespace, authentication semantics and the TLS/network policy
identities, so a swapped principal can never drive the original principal's children. Two
things may change and still resume: the execution policy (retry budgets, timeouts: not identity,
seed "identical identity where only policy or a secret rotated") and a rotated secret or secret
reference (in no digest).
"""

from __future__ import annotations

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.plan import PLAN_ARTIFACT_SCHEMA_ID, CompiledPlan, PlanDigests
from sink.journal.records import AdmittedParent

# Identity digests; execution_policy_digest is deliberately not one (see above).
IDENTITY_DIGESTS = tuple(name for name in PlanDigests.model_fields if name != "execution_policy_digest")


def differing_intent(plan: CompiledPlan, pinned: CompiledPlan) -> list[str]:
    """The identity digests in which ``plan`` differs from the admitted ``pinned`` plan."""
    return [name for name in IDENTITY_DIGESTS if getattr(pinned.digests, name) != getattr(plan.digests, name)]


def require_admitted_intent(plan: CompiledPlan, admitted: AdmittedParent, store: ImmutableArtifactPort) -> None:
    document = read_document(store, admitted.parent.plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    differing = differing_intent(plan, CompiledPlan.model_validate(document["plan"]))
    if differing:
        raise DeliveryError(
            ErrorCode.INTENT_CONFLICT,
            f"parent {admitted.parent.parent_id} was admitted with a different {', '.join(differing)}; "
            "nothing was sent (deliver the change as an explicit new generation)",
        )
