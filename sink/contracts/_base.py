"""Shared base and field helpers of the authoring and plan contracts.

Every contract model is frozen and closed (``extra="forbid"``): an unknown key is an error, never
silently ignored, so a typo can not weaken a safety rule.

Validation failures raised by this package are ``PydanticCustomError`` whose *type* is the stable
diagnostic code (``contract.<reason>``); the compiler turns them into ``CompileError`` entries.
Messages never echo the offending value: it may be a credential pasted into the wrong field.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt
from pydantic_core import PydanticCustomError

# hide_input_in_errors: a ValidationError rendered anywhere must not echo a pasted credential.
CONTRACT_CONFIG = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True, defer_build=True)

# Marks a field as a display string: it is carried in plans and docs but is never a hash input.
DISPLAY = {"display": True}


class ContractModel(BaseModel):
    model_config = CONTRACT_CONFIG


def contract_error(code: str, message: str, *, field: str | None = None) -> PydanticCustomError:
    """A validation error with a stable code. ``field`` refines the location when the check is
    made by a model validator (whose own location would otherwise be the model itself)."""
    context: dict[str, Any] = {"field": field} if field is not None else {}
    return PydanticCustomError(code, message, context)


_IDENTIFIER = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?\Z")


def check_identifier(value: str, what: str) -> str:
    """Stable lower-case identifiers: they end up in digests and file names, so no case folding,
    whitespace or path syntax."""
    if "/" in value or "\\" in value or ".." in value:
        raise contract_error("contract.path_traversal", f"{what} may not contain '/', '\\' or '..'")
    if not _IDENTIFIER.fullmatch(value):
        raise contract_error(
            "contract.invalid_value",
            f"{what} must be 1-128 characters of a-z, 0-9, '.', '_', '-' starting and ending "
            "with a letter or digit",
        )
    return value


Description = Annotated[str | None, Field(default=None, max_length=500, json_schema_extra=DISPLAY)]
PositiveMillis = Annotated[StrictInt, Field(gt=0, le=7 * 24 * 3600 * 1000)]
