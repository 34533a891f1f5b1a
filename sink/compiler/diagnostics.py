"""Stable compile diagnostics: ``{code, location, message}``.

Codes are a public contract (docs/authoring.md lists them). Pydantic validation errors are mapped
onto them here; the offending *input value* is never copied into a message, because the field may
hold a credential pasted in the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from sink.bounded_yaml import BoundedYamlError

CONTRACT_CODES: frozenset[str] = frozenset(
    {
        "contract.unknown_field",
        "contract.missing_field",
        "contract.invalid_value",
        "contract.duplicate_key",
        "contract.absolute_url",
        "contract.path_traversal",
        "contract.control_character",
        "contract.bad_symbol",
        "contract.plaintext_secret",
        "contract.insecure_authority",
        "contract.invalid_authority",
        "contract.unsupported_sink",
        "contract.unsupported_family",
        "contract.unsupported_method",
        "contract.unsupported_body",
        "contract.unsupported_mutation",
        "contract.media_type_mismatch",
        "contract.forbidden_header",
        "contract.fence_mismatch",
        "contract.unsupported_fence_encoding",
        "contract.vocabulary_overlap",
        "contract.inconsistent_policy",
        "contract.inconsistent_result",
        "contract.override_out_of_range",
        "contract.override_not_allowed",
        "contract.unknown_reference",
        "contract.reference_mismatch",
        "contract.digest_mismatch",
        "contract.uncertified_profile",
        "contract.invalid_scope",
        "contract.correction_not_allowed",
        "contract.unsupported_source",
        "contract.ambiguous_null",
        "contract.missing_scope_field",
        "contract.invalid_scope_field",
        "contract.scope_field_mismatch",
    }
)

# Pydantic's own error types that mean "a key the contract does not have" or "a key it needs".
_PYDANTIC_TYPE_CODES = {
    "extra_forbidden": ("contract.unknown_field", "unknown field; the contract is closed"),
    "missing": ("contract.missing_field", "required field is missing"),
}
# Fields whose content may be a secret: their pydantic messages are replaced by a generic one.
_SENSITIVE_FIELDS = frozenset({"credential_ref", "authority", "api_key_header"})


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    location: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "location": self.location, "message": self.message}


class CompileError(Exception):
    """One or more diagnostics; every one carries a stable code. Invalid input: exit class 2."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        if not diagnostics:
            raise ValueError("a CompileError needs at least one diagnostic")
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        first = self.diagnostics[0]
        more = f" (+{len(self.diagnostics) - 1} more)" if len(self.diagnostics) > 1 else ""
        super().__init__(f"{first.code} at {first.location}: {first.message}{more}")

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(diagnostic.code for diagnostic in self.diagnostics)

    @classmethod
    def single(cls, code: str, location: str, message: str) -> CompileError:
        return cls([Diagnostic(code, location, message)])


def join_location(source: str, loc: Iterable[int | str]) -> str:
    path = ".".join(str(part) for part in loc)
    return f"{source}#{path}" if path else source


def from_validation_error(exc: ValidationError, source: str) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    for error in exc.errors(include_url=False, include_input=False):
        kind = error["type"]
        loc: tuple[int | str, ...] = tuple(error["loc"])
        context = error.get("ctx") or {}
        if kind.startswith("contract."):
            code, message = kind, error["msg"]
            field = context.get("field")
            if isinstance(field, str):
                loc = (*loc, *field.split("."))
        elif kind in _PYDANTIC_TYPE_CODES:
            code, message = _PYDANTIC_TYPE_CODES[kind]
        else:
            code, message = "contract.invalid_value", error["msg"]
        if any(part in _SENSITIVE_FIELDS for part in loc) and not kind.startswith("contract."):
            message = "invalid value (not shown)"
        diagnostics.append(Diagnostic(code, join_location(source, loc), message))
    return diagnostics


def from_yaml_error(exc: BoundedYamlError, source: str) -> Diagnostic:
    return Diagnostic(exc.code, exc.location or source, exc.message)
