"""Stable source and preparation errors, with field evidence and never a value.

Evidence names the field and the 1-based source record (or byte offset); it never carries the
offending value, which may be a payload row or a secret pasted into the wrong column.
"""

from __future__ import annotations

from collections.abc import Mapping

from sink.contracts.errors import ExitClass

SOURCE_ERROR_CODES: dict[str, ExitClass] = {
    "source.not_found": ExitClass.INVALID_INPUT,
    "source.not_regular_file": ExitClass.INVALID_INPUT,
    "source.invalid_utf8": ExitClass.INVALID_INPUT,
    "source.field_too_large": ExitClass.INVALID_INPUT,
    "source.malformed_record": ExitClass.INVALID_INPUT,
    "source.unknown_field": ExitClass.INVALID_INPUT,
    "source.missing_field": ExitClass.INVALID_INPUT,
    "source.missing_scope_field": ExitClass.INVALID_INPUT,
    "source.type_drift": ExitClass.INVALID_INPUT,
    "source.null_not_allowed": ExitClass.INVALID_INPUT,
    "source.empty_not_allowed": ExitClass.INVALID_INPUT,
    "source.too_long": ExitClass.INVALID_INPUT,
    "source.precision_loss": ExitClass.INVALID_INPUT,
    "source.changed_during_read": ExitClass.UNAVAILABLE,
    "source.query_failed": ExitClass.INVALID_INPUT,
    "source.missing_dsn": ExitClass.INVALID_INPUT,
    "source.unavailable": ExitClass.UNAVAILABLE,
    "source.not_configured": ExitClass.INVALID_INPUT,
    "source.empty_boundary": ExitClass.INVALID_INPUT,
    "payload.codec_unavailable": ExitClass.UNAVAILABLE,
    "payload.boundary_exhausted": ExitClass.INVALID_INPUT,
    "preparation.unsupported_scope": ExitClass.INVALID_INPUT,
}


class SourceError(Exception):
    """Invalid or unavailable source input, found before anything is sealed or admitted."""

    def __init__(self, code: str, message: str, **evidence: str | int) -> None:
        if code not in SOURCE_ERROR_CODES:
            raise ValueError(f"unknown source error code {code}")
        self.code = code
        self.evidence: Mapping[str, str | int] = dict(evidence)
        where = ", ".join(f"{key}={value}" for key, value in sorted(self.evidence.items()))
        super().__init__(f"{code}: {message}" + (f" ({where})" if where else ""))
        self.message = message

    @property
    def exit_class(self) -> ExitClass:
        return SOURCE_ERROR_CODES[self.code]

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "evidence": dict(self.evidence)}
