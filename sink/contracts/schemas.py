"""JSON Schemas (Draft 2020-12, as emitted by pydantic) of the authoring documents and the plan.

They are derived from the closed models, so every object has ``additionalProperties: false``. The
models stay the authority: the schemas serve editors and external validators, and cannot express
the cross-field rules (fence placement, family requirements, authority security) the models check.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sink.contracts.binding import ConnectionBinding
from sink.contracts.environment import EnvironmentSnapshot
from sink.contracts.plan import CompiledPlan
from sink.contracts.profile import OperationProfile
from sink.contracts.workload import WorkloadManifest

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

DOCUMENT_MODELS: dict[str, type[BaseModel]] = {
    "workload": WorkloadManifest,
    "profile": OperationProfile,
    "binding": ConnectionBinding,
    "environment": EnvironmentSnapshot,
    "plan": CompiledPlan,
}


def document_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one document kind (see ``DOCUMENT_MODELS``)."""
    model = DOCUMENT_MODELS[kind]
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"restproof:{kind}", **model.model_json_schema()}
