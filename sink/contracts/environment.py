"""The platform environment a plan is compiled for: the inputs of ``operation_namespace``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator

from sink.contracts._base import ContractModel, Description, check_identifier


class EnvironmentSnapshot(ContractModel):
    platform_instance_id: str
    tenant_id: str
    environment_id: str
    namespace_revision: StrictInt = Field(ge=0)
    # ``production`` refuses local bindings and profiles whose fence is not yet certified.
    kind: Literal["local", "production"] = "local"
    description: Description

    @field_validator("platform_instance_id", "tenant_id", "environment_id")
    @classmethod
    def _identifier(cls, value: str) -> str:
        return check_identifier(value, "an environment identifier")
