"""Stable source and preparation errors, with field evidence and never a value.

Evidence names the field and the 1-based source record (or byte offset); it never carries the
offending value, which may be a payload row or a secret pasted into the wrong column. A field
name read from the source itself (an NDJSON member, a CSV header) is shown escaped and cut to
``MAX_EVIDENCE_CHARS``, so a hostile name can neither break the terminal or the JSON it is
printed into (a lone surrogate is not encodable) nor smuggle a long value into a log line.
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
    "source.duplicate_field": ExitClass.INVALID_INPUT,
    "source.invalid_unicode": ExitClass.INVALID_INPUT,
    "source.number_too_large": ExitClass.INVALID_INPUT,
    "source.nesting_too_deep": ExitClass.INVALID_INPUT,
    "source.out_of_range": ExitClass.INVALID_INPUT,
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


MAX_EVIDENCE_CHARS = 64


def _printable(value: str | int) -> str | int:
    if isinstance(value, int):
        return value
    text = value.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return text if len(text) <= MAX_EVIDENCE_CHARS else text[: MAX_EVIDENCE_CHARS - 3] + "..."


class SourceError(Exception):
    """Invalid or unavailable source input, found before anything is sealed or admitted."""

    def __init__(self, code: str, message: str, **evidence: str | int) -> None:
        if code not in SOURCE_ERROR_CODES:
            raise ValueError(f"unknown source error code {code}")
        self.code = code
        self.evidence: Mapping[str, str | int] = {key: _printable(value) for key, value in evidence.items()}
        where = ", ".join(f"{key}={value}" for key, value in sorted(self.evidence.items()))
        super().__init__(f"{code}: {message}" + (f" ({where})" if where else ""))
        self.message = message

    @property
    def exit_class(self) -> ExitClass:
        return SOURCE_ERROR_CODES[self.code]

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "evidence": dict(self.evidence)}
