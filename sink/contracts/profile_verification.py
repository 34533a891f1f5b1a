"""Operation profile, verification part (seed: "Execution algorithm" step 12, "Failure and
partial-result policy"): how the runtime proves the remote effect after the receiver answered.

Beside the response counters of ``result_policy``, a profile may certify one read-only summary
query of the child's scope (the mock receiver's ``GET .../summary``): the receiver's own row count
and content digest of what it holds for that scope, compared with the sealed payload. The digest
scheme is named, because the sink computes the expected digest itself from the rows it sealed: a
scheme is a documented receiver capability, never inferred.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.profile_ack import Extractor
from sink.contracts.symbols import TemplateLocation, template_symbols

MOCK_RECEIVER_ROWS_V1 = "mock-receiver.rows.v1"
MOCK_RECEIVER_ROWS_V2 = "mock-receiver.rows.v2"
SUMMARY_DIGEST_SCHEMES = (MOCK_RECEIVER_ROWS_V1, MOCK_RECEIVER_ROWS_V2)
"""The digest schemes a profile may name; each is computed by sink/payload/summary_digest.py, and
the sealer records the expected digest of every child in its payload manifest."""
MAX_SUMMARY_QUERY = 8


class SummaryQuery(ContractModel):
    method: Literal["GET"]
    path: str
    query: dict[str, str] = Field(default_factory=dict)
    row_count: Extractor
    content_digest: Extractor
    digest_scheme: Literal["mock-receiver.rows.v1", "mock-receiver.rows.v2"]

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        template_symbols(value, TemplateLocation.PATH)
        return value

    @field_validator("query")
    @classmethod
    def _query(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_SUMMARY_QUERY:
            raise contract_error("contract.invalid_value", f"at most {MAX_SUMMARY_QUERY} summary query parameters")
        for template in value.values():
            template_symbols(template, TemplateLocation.QUERY)
        return value


class VerificationSpec(ContractModel):
    summary: SummaryQuery | None = None
