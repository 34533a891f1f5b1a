"""A re-run resumes an admitted parent only under the semantics it was admitted with (seed: "same
key/intent resume, intent conflict").

``delivery run`` finds the parent already admitted for its interval by delivery key, which never
includes receiver semantics; without this check a re-run whose binding, profile or namespace now
means something else would send the admitted children rendered under the NEW semantics. The pinned
plan (the artifact the admission published) is the authority: any differing semantic digest is
``REST_DELIVERY_INTENT_CONFLICT`` (exit 2), raised before any request.
"""

from __future__ import annotations

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.plan import CompiledPlan, PlanDigests
from sink.journal.records import AdmittedParent
from sink.preparation import PLAN_ARTIFACT_SCHEMA_ID


def require_admitted_intent(plan: CompiledPlan, admitted: AdmittedParent, store: ImmutableArtifactPort) -> None:
    document = read_document(store, admitted.parent.plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    pinned = CompiledPlan.model_validate(document["plan"])
    differing = [name for name in PlanDigests.model_fields
                 if getattr(pinned.digests, name) != getattr(plan.digests, name)]
    if differing:
        raise DeliveryError(
            ErrorCode.INTENT_CONFLICT,
            f"parent {admitted.parent.parent_id} was admitted with a different {', '.join(differing)}; "
            "nothing was sent (deliver the change as an explicit new generation)",
        )
