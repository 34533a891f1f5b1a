"""Bounded JSON: parse a response body only within byte, depth, value-count and string bounds,
and take out only the scalars named by RFC 6901 pointers.

The structure is measured by a linear scan *before* ``json.loads`` builds anything, so a deep or
wide document costs one pass over at most ``max_body_bytes`` and is refused with a stable
reason. Duplicate object keys are refused too: which of two ``job_id`` members a parser keeps is
parser-specific, and a receipt must not depend on it.

(The standard library has no bounded JSON parser; ijson and friends stream but do not bound
depth or refuse duplicate keys, so this small scanner is written here.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sink.contracts.transport import JsonScalar, ResponseBounds

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)


class JsonRefused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _scan(text: str, bounds: ResponseBounds) -> None:
    depth = 0
    values = 1
    for match in _TOKENS.finditer(text):
        lexeme = match.group()
        if lexeme[0] == '"':
            # An escaped string is at most 6 source characters per decoded one (\uXXXX).
            if len(lexeme) - 2 > 6 * bounds.max_string_length:
                raise JsonRefused("string_too_long")
        elif lexeme in "[{":
            depth += 1
            values += 1
            if depth > bounds.max_depth:
                raise JsonRefused("too_deep")
        elif lexeme in "]}":
            depth -= 1
        else:
            values += 1
        if values > bounds.max_fields:
            raise JsonRefused("too_many_fields")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JsonRefused("duplicate_key")
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise JsonRefused("not_json")  # NaN / Infinity are not JSON


def _check_strings(value: Any, limit: int) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > limit:
                raise JsonRefused("string_too_long")
        elif isinstance(item, dict):
            for key, member in item.items():
                if len(key) > limit:
                    raise JsonRefused("string_too_long")
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)


def parse_bounded(data: bytes, bounds: ResponseBounds) -> Any:
    """The parsed document; raises ``JsonRefused`` with a stable reason."""
    if not data.strip():
        raise JsonRefused("empty_body")
    if len(data) > bounds.max_body_bytes:
        raise JsonRefused("body_too_large")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonRefused("not_utf8") from None
    _scan(text, bounds)
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except JsonRefused:
        raise
    except (ValueError, RecursionError):
        raise JsonRefused("not_json") from None
    _check_strings(document, bounds.max_string_length)
    return document


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


_ARRAY_INDEX = re.compile(r"^(?:0|[1-9][0-9]{0,8})\Z")
_MISSING = object()


def resolve_pointer(document: Any, pointer: str) -> Any:
    """RFC 6901; returns ``_MISSING`` when the pointer names nothing."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return _MISSING
    current = document
    for raw in pointer[1:].split("/"):
        segment = _unescape(raw)
        if isinstance(current, dict):
            if segment not in current:
                return _MISSING
            current = current[segment]
        elif isinstance(current, list):
            if not _ARRAY_INDEX.fullmatch(segment) or int(segment) >= len(current):
                return _MISSING
            current = current[int(segment)]
        else:
            return _MISSING
    return current


def extract_scalars(document: Any, pointers: Iterable[str]) -> Mapping[str, JsonScalar]:
    """Only the requested pointers, and only when they name a string, integer, boolean or null:
    containers and floats (which do not round-trip exactly) are not evidence."""
    scalars: dict[str, JsonScalar] = {}
    for pointer in pointers:
        value = resolve_pointer(document, pointer)
        if value is None or isinstance(value, str | bool | int):
            scalars[pointer] = value
    return scalars
