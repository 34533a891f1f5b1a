"""Cross-document checks of a payload mapping against the workload and the profile's codec.

An ambiguous null/empty mapping fails here, at compile time, rather than when a row happens to
hold an empty string: a CSV dialect that writes null and "" as the same bytes can not carry a
field that keeps both.
"""

from __future__ import annotations

from sink.compiler.diagnostics import Diagnostic
from sink.contracts.mapping import PayloadMapping
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_request import CsvBody, CsvDialect, MultipartFileBody
from sink.contracts.workload import WorkloadManifest


def profile_csv_dialect(profile: OperationProfile) -> CsvDialect | None:
    """The CSV dialect the profile's payload is written in, or None for a JSON payload."""
    body = profile.request.body
    if isinstance(body, CsvBody):
        return body.csv_dialect
    if isinstance(body, MultipartFileBody) and body.payload_part.format == "csv":
        return body.payload_part.csv_dialect or CsvDialect()
    return None


def check_mapping(workload: WorkloadManifest, profile: OperationProfile, mapping: PayloadMapping) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    if mapping.id != workload.sink.payload.mapping_ref:
        problems.append(Diagnostic("contract.reference_mismatch", "mapping#id",
                                   "the mapping's id differs from the workload's mapping_ref"))
    scope_source = mapping.field(mapping.scope_field).source_name
    if scope_source != workload.sink.mutation.scope.source_field:
        problems.append(Diagnostic("contract.scope_field_mismatch", "mapping#scope_field",
                                   "the mapping's scope field is not read from the workload's scope source_field"))
    dialect = profile_csv_dialect(profile)
    if dialect is not None and dialect.null_is_empty_string:
        for index, field in enumerate(mapping.fields):
            if field.keeps_null_and_empty:
                problems.append(Diagnostic(
                    "contract.ambiguous_null", f"mapping#fields.{index}.empty_string",
                    "the profile's CSV dialect writes null and the empty string as the same bytes",
                ))
    return problems
